"""The deployment's promises: production settings refuse to start without a secret and pass
Django's deploy checks; the OpenAPI schema is generated without warnings."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parent.parent


def manage(*args, **env):
    # As in production: without the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (the session's
    # browser fixture sets it in this process, and the deploy check refuses it).
    inherited = {
        k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={
            **inherited,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            **env,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_settings_refuse_to_start_without_a_secret_key():
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_SECRET_KEY"}
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env={**env, "DJANGO_SETTINGS_MODULE": "config.settings.production"},
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode != 0
    assert "DJANGO_SECRET_KEY must be set" in result.stderr


def test_production_settings_pass_the_deploy_checks():
    result = manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DJANGO_SECRET_KEY="x" * 20 + "-production-secret-" + "y" * 20,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_rate_limits_are_read_from_the_environment():
    code = "from django.conf import settings; print(settings.API_RATE_LIMITS)"
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.local",
            "API_RATE_LIMITS": "users=5/min,leads=7/s",
        },
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.stdout.strip() == str(
        {
            "users": "5/min",
            "leads": "7/s",
            "clicktocall": "120/min",
            "scoreddata": "60/min",
            "appointments": "120/min",
            "consent": "120/min",
        }
    )


@pytest.mark.django_db
def test_the_openapi_schema_validates_without_warnings(tmp_path):
    out = tmp_path / "schema.yaml"

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))

    text = out.read_text()
    for path in (
        "/api/users:",
        "/api/users/{user_id}:",
        "/api/users/find/phone:",
        "/api/nl:",
        "/api/clicktocallv2:",
    ):
        assert path in text


@pytest.mark.django_db
def test_the_docs_page_serves_without_a_cdn(client):
    response = client.get("/api/docs/")

    assert response.status_code == 200
    assert b"cdn" not in response.content.lower()


@pytest.mark.django_db
def test_an_unexpected_error_is_answered_in_the_interfaces_shape(monkeypatch):
    from rest_framework.test import APIClient

    from leads import apis as lead_apis
    from tests.conftest import Tenant
    from users import apis as user_apis

    def explode(**kwargs):
        raise RuntimeError("a bug, not bad input")

    monkeypatch.setattr(user_apis, "user_get_visible", explode)
    monkeypatch.setattr(lead_apis, "lead_receive", explode)
    tenant = Tenant()
    client = tenant.client()
    client.raise_request_exception = False
    plain = APIClient()
    plain.raise_request_exception = False

    users = client.get("/api/users/1")
    leads = plain.post("/api/nl", {"xml": "<adf/>", **tenant.headers})

    assert users.status_code == leads.status_code == 500
    assert users.json() == {
        "success": False,
        "message": "Something went wrong on our side. The request can be retried.",
    }
    assert leads.json() == {
        "reason": "Something went wrong on our side. The request can be retried."
    }
    assert b"RuntimeError" not in users.content + leads.content


CACHE_SCRIPT = """
import sys, django
django.setup()
from django.core.cache import cache
if sys.argv[1] == "set":
    cache.set(sys.argv[2], "from another process", 60)
else:
    print(cache.get(sys.argv[2]))
"""


def test_the_embedded_default_cache_is_shared_between_processes():
    """make run's web and worker processes see one cache (the simulator's leg records live
    there; the sweep in one worker must see what a dial in another wrote)."""
    env = {k: v for k, v in os.environ.items() if k not in ("REDIS_URL",)}
    env["DJANGO_SETTINGS_MODULE"] = "config.settings.local"
    key = f"shared-{os.getpid()}-{os.urandom(4).hex()}"

    def run(*args):
        return subprocess.run(
            [sys.executable, "-c", CACHE_SCRIPT, *args],
            cwd=ROOT,
            env={**env, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout.strip()

    run("set", key)

    assert run("get", key) == "from another process"


def test_only_the_transcription_process_takes_the_media_work():
    """The Procfile gives the `transcription` queue (speech, media fetches, speech-to-text)
    a process of its own, so its backlog never delays a dial or a webhook; a worker started
    without -Q still consumes it (it is a declared queue)."""
    import re

    from django.conf import settings

    from tests.processes import procfile_commands

    queues = {
        name: set(match.group(1).split(","))
        for name, command in procfile_commands().items()
        if (match := re.search(r"-Q (\S+)", command))
    }
    assert queues["transcription"] == {"transcription"}
    assert [name for name, q in queues.items() if "transcription" in q] == [
        "transcription"
    ]
    assert "transcription" in {queue.name for queue in settings.CELERY_TASK_QUEUES}
    routes = settings.CELERY_TASK_ROUTES
    for task in (
        "calls.tasks.recording_store_task",
        "insights.tasks.transcription_task",
    ):
        assert routes[task] == {"queue": "transcription"}
