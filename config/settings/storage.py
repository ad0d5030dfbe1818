"""Where media are stored (MEDIA_STORAGE, MEDIA_S3_*): read by config/settings/base.py."""

from typing import Any

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()

# Media (recordings, profile pictures) go through Django's storage API: files under
# MEDIA_ROOT on this machine (the embedded default), or an S3-compatible store every
# machine shares (MEDIA_STORAGE=s3: AWS S3, MinIO, Ceph, R2, ...; docs/operations.md).
MEDIA_STORAGE = env("MEDIA_STORAGE", default="filesystem")
MEDIA_STORAGES: dict[str, dict[str, Any]] = {
    "filesystem": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "s3": {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": env("MEDIA_S3_BUCKET", default=""),
            # Unset: AWS itself; set: any S3-compatible server (http://minio:9000).
            "endpoint_url": env("MEDIA_S3_ENDPOINT_URL", default="") or None,
            "region_name": env("MEDIA_S3_REGION", default="") or None,
            # Unset: boto3's own chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, an
            # instance or pod role).
            "access_key": env("MEDIA_S3_ACCESS_KEY_ID", default="") or None,
            "secret_key": env("MEDIA_S3_SECRET_ACCESS_KEY", default="") or None,
            # A folder of the bucket the service keeps its files under ("" = the root).
            "location": env("MEDIA_S3_PREFIX", default=""),
            "addressing_style": env("MEDIA_S3_ADDRESSING_STYLE", default="") or None,
            "signature_version": "s3v4",
            # As on the filesystem: a name taken gets a new one, never overwritten.
            "file_overwrite": False,
            # Private objects; a storage URL (support's admin link) is presigned and
            # short-lived. Recording links stream through the service (calls/views.py).
            "default_acl": None,
            "querystring_auth": True,
            "querystring_expire": env.int("MEDIA_S3_URL_EXPIRY_SECONDS", default=300),
        },
    },
}
if MEDIA_STORAGE not in MEDIA_STORAGES:
    raise ImproperlyConfigured(
        f"MEDIA_STORAGE={MEDIA_STORAGE!r}: choose one of {', '.join(MEDIA_STORAGES)}."
    )
if MEDIA_STORAGE == "s3" and not MEDIA_STORAGES["s3"]["OPTIONS"]["bucket_name"]:
    raise ImproperlyConfigured("MEDIA_STORAGE=s3 needs MEDIA_S3_BUCKET.")
