"""The ``api_key`` header survives a real gunicorn started with the shipped configuration.

gunicorn drops headers with an underscore by default; ``config/gunicorn.py`` keeps them
(``header_map = "dangerous"``). Both servers are real processes reading the committed rows
of the test database.
"""

import http.client
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

import pytest
from django.db import connection
from django.urls import Resolver404, resolve

from calls.models import Call
from tests.users.factories import UserFactory

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = str(Path(sys.executable).parent / "gunicorn")
URL = "/api/clicktocallv2"
# A hang guard, not a speed limit: both servers boot in 2-3 s on a quiet machine, and the
# wait returns as soon as they answer (a busy CI machine once took over 10 s).
BOOT_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _database_url() -> str:
    db = connection.settings_dict
    password = f":{quote(db['PASSWORD'], safe='')}" if db.get("PASSWORD") else ""
    return (
        f"postgres://{db.get('USER') or 'postgres'}{password}"
        f"@{db.get('HOST') or '127.0.0.1'}:{db.get('PORT') or 5432}/{db['NAME']}"
    )


def _environment(tmp_path: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.test",
        "DATABASE_URL": _database_url(),
        "GUNICORN_WORKERS": "1",
        # The server's call_queue enqueues on commit; keep that out of the shared broker.
        "CELERY_BROKER_URL": "memory://",
    }
    env.pop("GUNICORN_CMD_ARGS", None)  # each server gets exactly the arguments shown
    try:
        resolve(URL, urlconf="config.urls")
    except Resolver404:
        # Until config/urls.py includes clicktocall.urls: the same settings, routed through
        # the tests' urlconf (config.urls plus click-to-call).
        (tmp_path / "clicktocall_server_settings.py").write_text(
            "from config.settings.test import *  # noqa: F403\n"
            'ROOT_URLCONF = "tests.clicktocall.urls"\n'
        )
        env["DJANGO_SETTINGS_MODULE"] = "clicktocall_server_settings"
        env["PYTHONPATH"] = os.pathsep.join(
            [str(tmp_path), str(ROOT), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
    return env


class Server:
    """A gunicorn process on a free port (``GUNICORN_BIND``, and ``{bind}`` in ``args``);
    its output goes to a log shown on failure."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.log = log
        bind = f"127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [GUNICORN, *(arg.format(bind=bind) for arg in args)],
            cwd=ROOT,
            env={**env, "GUNICORN_BIND": bind},
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )

    def wait_until_serving(self, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                pytest.fail(f"gunicorn exited:\n{self.log.read_text()}")
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.05)
        pytest.fail(f"gunicorn did not start in time:\n{self.log.read_text()}")

    def request(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, dict]:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read() or b"null")
        finally:
            conn.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_api_key_header_reaches_the_service_only_through_the_shipped_config(
    tenant, tmp_path
):
    agent = UserFactory(account=tenant.account)
    env = _environment(tmp_path)
    shipped = plain = None
    try:
        shipped = Server(
            ["-c", "config/gunicorn.py", "config.wsgi:application"],
            env,
            tmp_path / "shipped.log",
        )
        # gunicorn's defaults: no configuration file at all.
        plain = Server(
            ["--bind", "{bind}", "--workers", "1", "config.wsgi:application"],
            env,
            tmp_path / "plain.log",
        )
        deadline = time.monotonic() + BOOT_SECONDS
        shipped.wait_until_serving(deadline)
        plain.wait_until_serving(deadline)
        payload = json.dumps(
            {
                "account_id": tenant.account.pk,
                "user_id": str(agent.pk),
                "customer_phone_number": "(720) 555-0199",
            }
        ).encode()
        headers = {"Content-Type": "application/json", "api_key": tenant.key}

        kept = shipped.request("POST", URL, payload, **headers)
        dropped = plain.request("POST", URL, payload, **headers)

        assert kept[0] == 201, kept
        call = Call.objects.get()
        assert kept[1] == {
            "success": True,
            "message": "Call initiated",
            "callId": call.pk,
        }
        assert (call.requested_agent, call.phone) == (agent, "+17205550199")
        assert dropped == (401, {"success": False, "message": "Invalid API key"})
        assert Call.objects.count() == 1
    finally:
        for server in (shipped, plain):
            if server is not None:
                server.stop()
