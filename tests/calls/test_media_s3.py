"""Media on an S3-compatible store (MEDIA_STORAGE=s3): moto's S3 server on loopback plays
the bucket. A simulated call's spoken recording is stored there by the media worker's
path, transcribed by reading it back, played to the call page with Range requests through
the same signed, revocable link, and found by no one of another organization. Nothing is
written under MEDIA_ROOT."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from html import unescape
from typing import Any

import pytest
import requests
from django.core.files.storage import default_storage
from django.urls import reverse
from django.utils import timezone

from calls import media
from calls.models import Call, CallStatus, Recording, RecordingStatus
from calls.pipeline.records import call_recording_reissue
from insights.models import Transcription, TranscriptionStatus
from insights.tasks import transcription_task
from tests.accounts.factories import AccountFactory
from tests.calls.fake_twilio import BASE as HOST
from tests.calls.harness import World
from tests.media_s3 import BUCKET, Bucket
from tests.processes import ROOT, free_port
from tests.scoring.factories import in_role
from tests.users.factories import agent
from tests.users.picture_server import JPEG, PNG, PictureServer
from tests.users.test_user_api import created

pytestmark = pytest.mark.django_db


@pytest.fixture
def answered(settings, monkeypatch, django_capture_on_commit_callbacks, bucket) -> Call:
    """A simulated call run to its end through the pipeline: the agent took it, the lead
    answered and talked. Its recording is spoken but handed over to no one: the tests
    store it."""
    settings.SIMULATOR_SPEECH = True
    monkeypatch.setattr(media, "_store_later", lambda call_id, *hand_over: None)
    world = World(monkeypatch, django_capture_on_commit_callbacks)
    account = AccountFactory(name="Red Rock Motors")
    agent(account, phone="+13035550140", first_name="Avery", last_name="Lopez")
    call = world.queue_call(
        account=account,
        phone="+13035550123",
        received_at=timezone.now(),
        first_name="Jane",
        called_on_year="2025",
        called_on_make="Toyota",
        called_on_model="Camry",
    )
    world.run()
    call.refresh_from_db()
    assert call.status == CallStatus.ANSWER
    return call


def path(call: Call) -> str:
    return call.recording_url.removeprefix(HOST)


def gets_asked() -> list[str]:
    """The Range header of each GET the service's storage sends to S3 from here on."""
    asked: list[str] = []

    def note(request: Any, **kwargs: Any) -> None:
        value = request.headers.get("Range") or "whole"
        asked.append(value.decode() if isinstance(value, bytes) else value)

    client = default_storage.connection.meta.client  # type: ignore[attr-defined]
    client.meta.events.register("before-send.s3.GetObject", note)
    return asked


def stored_key(bucket: Bucket, call: Call) -> str:
    assert media.recording_store(call_id=call.pk) == RecordingStatus.STORED
    recording = Recording.objects.get(call=call)
    key = f"{bucket.prefix}/{recording.audio.name}"
    assert bucket.keys() == [key]
    return key


def test_the_recording_is_stored_in_the_bucket_and_its_link_plays_any_range(
    client, settings, answered, bucket
):
    key = stored_key(bucket, answered)
    whole = bucket.read(key)
    assert whole[:4] == b"RIFF"
    assert not settings.MEDIA_ROOT.exists()  # nothing on this machine's disk

    response = client.get(path(answered))
    assert response.status_code == 200
    assert response.streaming
    assert b"".join(response.streaming_content) == whole
    assert response["Content-Length"] == str(len(whole))
    assert response["Accept-Ranges"] == "bytes"

    asked = gets_asked()
    seek = client.get(path(answered), HTTP_RANGE="bytes=1000-70999")
    assert seek.status_code == 206
    assert b"".join(seek.streaming_content) == whole[1000:71000]
    assert asked == [
        "bytes=1000-70999"
    ]  # a seek fetches its bytes, never the whole file
    assert seek["Content-Range"] == f"bytes 1000-70999/{len(whole)}"
    assert seek["Content-Length"] == "70000"
    tail = client.get(path(answered), HTTP_RANGE="bytes=-100")
    assert b"".join(tail.streaming_content) == whole[-100:]
    refused = client.get(path(answered), HTTP_RANGE=f"bytes={len(whole)}-")
    assert refused.status_code == 416
    assert refused["Content-Range"] == f"bytes */{len(whole)}"

    # Stored once: delivered again, nothing is written twice.
    assert media.recording_store(call_id=answered.pk) == RecordingStatus.STORED
    assert bucket.keys() == [key]


def test_the_call_page_plays_it_and_another_organization_finds_nothing(
    client, answered, bucket
):
    key = stored_key(bucket, answered)
    manager = in_role("Manager", accounts=[answered.account])
    foreign = in_role("Manager", accounts=[AccountFactory(name="Elsewhere")])

    client.force_login(manager)
    page = client.get(f"/calls/{answered.pk}/")
    assert page.status_code == 200
    src = unescape(
        re.search(r'<audio [^>]*src="([^"]+)"', page.content.decode())[1]  # type: ignore[index]
    )
    assert src == path(answered)
    played = client.get(src, HTTP_RANGE="bytes=44-1043")
    assert played.status_code == 206
    assert b"".join(played.streaming_content) == bucket.read(key)[44:1044]

    client.force_login(foreign)
    assert client.get(f"/calls/{answered.pk}/").status_code == 404

    # Revoked: the old link finds nothing (no storage URL was ever handed out that
    # would outlive it); the new one plays.
    old = path(answered)
    assert call_recording_reissue(call=answered)
    client.logout()
    assert client.get(old, HTTP_RANGE="bytes=0-99").status_code == 404
    fresh = client.get(path(answered), HTTP_RANGE="bytes=0-99")
    assert fresh.status_code == 206
    assert b"".join(fresh.streaming_content) == bucket.read(key)[:100]


def test_speech_to_text_reads_the_recording_back_from_the_bucket(
    settings, monkeypatch, django_capture_on_commit_callbacks, answered, bucket
):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    settings.TRANSCRIPTION_MODEL = ""
    settings.TRANSCRIPTION_DEVICE = "cpu"
    settings.TRANSCRIPTION_COMPUTE_TYPE = "int8"
    settings.SUMMARY_BACKEND = "builtin"
    published: list[int] = []
    monkeypatch.setattr(
        transcription_task,
        "apply_async",
        lambda *, kwargs, **options: published.append(kwargs["call_id"]),
    )
    with django_capture_on_commit_callbacks(execute=True):
        stored_key(bucket, answered)
    assert published == [answered.pk]

    transcription_task(call_id=answered.pk)  # the transcription worker, in this process

    job = Transcription.objects.get(call=answered)
    assert job.status == TranscriptionStatus.DONE, job.reason
    recording = Recording.objects.get(call=answered)
    assert job.audio_seconds == pytest.approx(recording.seconds, abs=0.1)
    answered.refresh_from_db()
    lines = answered.transcription.split("\n")
    assert len(lines) >= 2
    assert any(line.startswith("Avery Lopez (") for line in lines)
    assert not settings.MEDIA_ROOT.exists()


def out_of_reach(settings) -> None:
    """The store's address now answers nothing (a closed loopback port)."""
    options = settings.STORAGES["default"]["OPTIONS"]
    settings.STORAGES = {
        **settings.STORAGES,
        "default": {
            **settings.STORAGES["default"],
            "OPTIONS": {**options, "endpoint_url": f"http://127.0.0.1:{free_port()}"},
        },
    }


def test_a_bucket_out_of_reach_is_a_counted_try_and_the_recording_waits(
    settings, answered, bucket
):
    out_of_reach(settings)
    with pytest.raises(media.RecordingNotYetStored):
        media.recording_store(call_id=answered.pk)
    recording = Recording.objects.get(call=answered)
    assert (recording.status, recording.tries) == (RecordingStatus.PENDING, 1)
    assert "EndpointConnectionError" in recording.reason or "Could not connect" in (
        recording.reason
    )
    assert bucket.keys() == []


def test_the_link_says_wait_while_the_bucket_is_out_of_reach_and_not_found_once_gone(
    client, settings, answered, bucket
):
    key = stored_key(bucket, answered)
    reachable = settings.STORAGES
    out_of_reach(settings)
    waiting = client.get(path(answered), HTTP_RANGE="bytes=0-99")
    assert waiting.status_code == 503
    assert waiting["Retry-After"] == "30"

    settings.STORAGES = reachable
    assert client.get(path(answered), HTTP_RANGE="bytes=0-99").status_code == 206
    # A store changed without its files copied: the recording is not found (never a 500).
    bucket.client.delete_object(Bucket=BUCKET, Key=key)
    assert client.get(path(answered)).status_code == 404


def test_supports_admin_link_to_a_stored_file_is_presigned_and_short_lived(
    admin_client, answered, bucket
):
    """A call whose link is not the service's own (a provider's, as Twilio reported it):
    support's admin links the stored copy by the store's presigned URL."""
    key = stored_key(bucket, answered)
    Call.objects.filter(pk=answered.pk).update(
        recording_url="https://api.twilio.com/2010-04-01/Accounts/AC1/Recordings/RE1"
    )
    page = admin_client.get(reverse("admin:calls_call_change", args=[answered.pk]))
    assert page.status_code == 200
    recording = Recording.objects.get(call=answered)
    link = unescape(
        re.search(  # type: ignore[index]
            rf'<a href="([^"]+)">{re.escape(str(recording.audio.name))}</a>',
            page.content.decode(),
        )[1]
    )
    assert link.startswith(f"{bucket.client.meta.endpoint_url}/{BUCKET}/{key}?")
    assert "X-Amz-Expires=300" in link
    fetched = requests.get(link, timeout=10)
    assert (fetched.status_code, fetched.content) == (200, bucket.read(key))
    assert requests.get(link.partition("?")[0], timeout=10).status_code == 403


@pytest.fixture(scope="module")
def picture_server(tmp_path_factory):
    server = PictureServer(tmp_path_factory.mktemp("picture-server"))
    yield server
    server.stop()


def test_profile_pictures_live_in_the_bucket_too(
    settings, tenant, picture_server, bucket, django_capture_on_commit_callbacks
):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = ["127.0.0.1"]
    settings.PROFILE_PICTURE_CA_BUNDLE = str(picture_server.cert)
    user = created(tenant, profilePicture=picture_server.url("/picture.png"))
    [old] = bucket.keys()
    assert old.startswith(f"{bucket.prefix}/profile-pictures/")
    assert bucket.read(old) == PNG
    # imageUrl is the store's presigned URL (the bucket is private), short-lived.
    shown = requests.get(user["imageUrl"], timeout=10)
    assert (shown.status_code, shown.content) == (200, PNG)
    assert "X-Amz-Expires=300" in user["imageUrl"]

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{user['id']}",
            {"profilePicture": picture_server.url("/picture.jpg")},
            format="json",
        )
    assert response.status_code == 200
    [new] = bucket.keys()
    assert new != old
    assert bucket.read(new) == JPEG
    assert not settings.MEDIA_ROOT.exists()


def _settings_run(code: str, **environment: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", "shell", "--verbosity", "0", "-c", code],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.test",
            **environment,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_store_is_chosen_by_the_environment_and_a_wrong_choice_refuses_to_start():
    show = (
        "from django.core.files.storage import storages; s = storages['default']; "
        "print(type(s).__name__, getattr(s, 'bucket_name', ''), "
        "getattr(s, 'endpoint_url', ''))"
    )
    embedded = _settings_run(show)
    assert embedded.stdout.split() == ["FileSystemStorage"], embedded.stderr
    chosen = _settings_run(
        show,
        MEDIA_STORAGE="s3",
        MEDIA_S3_BUCKET="dealer-media",
        MEDIA_S3_ENDPOINT_URL="http://minio.internal:9000",
    )
    assert chosen.stdout.split() == [
        "S3Storage",
        "dealer-media",
        "http://minio.internal:9000",
    ], chosen.stderr
    no_bucket = _settings_run(show, MEDIA_STORAGE="s3")
    assert no_bucket.returncode != 0
    assert "MEDIA_STORAGE=s3 needs MEDIA_S3_BUCKET." in no_bucket.stderr
    unknown = _settings_run(show, MEDIA_STORAGE="nfs")
    assert unknown.returncode != 0
    assert "MEDIA_STORAGE='nfs': choose one of filesystem, s3." in unknown.stderr
