"""The service's media on an S3-compatible store, for the tests: moto's S3 server on a free
loopback port (one for the session, started by the first test that asks), and ``bucket``,
which points the default storage at it as production's MEDIA_STORAGE=s3 does, under a
folder of its own for each test. boto3 and moto are imported only when used."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from config.settings.base import MEDIA_STORAGES
from tests.processes import free_port

BUCKET = "leadcall-media"
KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}


@dataclass
class Bucket:
    client: Any
    prefix: str

    def keys(self) -> list[str]:
        listed = self.client.list_objects_v2(Bucket=BUCKET, Prefix=f"{self.prefix}/")
        return [item["Key"] for item in listed.get("Contents", [])]

    def read(self, key: str) -> bytes:
        return bytes(self.client.get_object(Bucket=BUCKET, Key=key)["Body"].read())


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """moto's S3 server, on a free loopback port, for the whole session."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=url, region_name="us-east-1", **KEYS)
    client.create_bucket(Bucket=BUCKET)
    yield url
    server.stop()


@pytest.fixture
def bucket(settings, s3_server, tmp_path) -> Bucket:
    """The service's media on S3 as production configures it (base settings'
    MEDIA_STORAGES["s3"]), under a folder of its own for each test."""
    prefix = f"test-{uuid.uuid4().hex[:12]}"
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            "BACKEND": MEDIA_STORAGES["s3"]["BACKEND"],
            "OPTIONS": {
                **MEDIA_STORAGES["s3"]["OPTIONS"],
                "bucket_name": BUCKET,
                "endpoint_url": s3_server,
                "region_name": "us-east-1",
                "access_key": KEYS["aws_access_key_id"],
                "secret_key": KEYS["aws_secret_access_key"],
                "location": prefix,
            },
        },
    }
    settings.MEDIA_ROOT = tmp_path / "media"  # stays empty: nothing is written there
    import boto3

    client = boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1", **KEYS)
    return Bucket(client, prefix)
