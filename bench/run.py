"""``make bench``: the service under gunicorn (production settings) on PostgreSQL and Redis,
each endpoint's throughput printed next to a baseline measured in the same run.

Baseline: ``/healthz``, a bare Django view returning a constant, through the same server,
middleware and database settings. Tests never assert timings; this prints them.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.load import Request, run  # noqa: E402

DB_NAME = "leadcall_bench"
SECONDS = float(os.environ.get("BENCH_SECONDS", "5"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def environment(port: int) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.production",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(60),
        "DJANGO_SECURE_SSL_REDIRECT": "0",
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
        "DATABASE_URL": f"postgres://postgres@127.0.0.1:5432/{DB_NAME}",
        "REDIS_URL": "redis://127.0.0.1:6379/15",
        "CELERY_BROKER_URL": "redis://127.0.0.1:6379/15",
        # Limits are not what is measured here.
        "API_RATE_LIMITS": "users=10000000/min,leads=10000000/min,clicktocall=10000000/min,scoreddata=10000000/min",
        "GUNICORN_BIND": f"127.0.0.1:{port}",
        "GUNICORN_WORKERS": os.environ.get("BENCH_WORKERS", "4"),
        "GUNICORN_ACCESSLOG": "",
        "LOG_LEVEL": "WARNING",
    }


def python(env: dict[str, str], code: str) -> str:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def prepare_database(env: dict[str, str]) -> None:
    admin = {**env, "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres"}
    python(
        admin,
        "import psycopg; c = psycopg.connect('postgresql://postgres@127.0.0.1:5432/postgres', autocommit=True);"
        f"c.execute('DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)'); c.execute('CREATE DATABASE {DB_NAME}')",
    )
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput", "-v0"],
        cwd=ROOT,
        env=env,
        check=True,
    )


SEED = """
import django, json; django.setup()
from datetime import time
from accounts.models import Account, Organization, Team, AccountScheduleDay
from accounts.services import api_credential_issue
from users.services import user_create
org = Organization.objects.create(name="Bench Group")
account = Account.objects.create(organization=org, name="Bench Dealer", timezone="America/Denver")
AccountScheduleDay.objects.bulk_create(AccountScheduleDay(account=account, weekday=d, start_time=time(0), end_time=time(23, 59)) for d in range(7))
Team.objects.create(account=account, name="Sales"); Team.objects.create(account=account, name="Service")
credential, key = api_credential_issue(organization=org)
user = user_create(organization=org, data={"first_name": "Bench", "last_name": "Agent", "email": "bench@example.com",
    "account_ids": [account.pk], "phone_number": "+13035550123"})
print(json.dumps({"org": org.pk, "account": account.pk, "api_user": credential.api_user, "key": key, "user": user.pk}))
"""


def wait_until_up(port: int, process: subprocess.Popen) -> None:
    for _ in range(200):
        if process.poll() is not None:
            raise SystemExit("gunicorn exited during start-up")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("gunicorn did not start")


def report(name: str, result, baseline) -> None:
    ratio = result.rate / baseline.rate if baseline.rate else float("nan")
    print(
        f"  {name:<34} {result.rate:8.0f} req/s  p50 {result.median:6.1f} ms  p99 {result.percentile(99):6.1f} ms"
        f"  errors {result.errors:<4} ratio to bare view {ratio:5.2f}"
    )


def main() -> None:
    port = free_port()
    env = environment(port)
    print(f"Preparing database {DB_NAME} ...", flush=True)
    prepare_database(env)
    seed = json.loads(python(env, SEED))
    server = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "-c",
            "config/gunicorn.py",
            "config.wsgi:application",
        ],
        cwd=ROOT,
        env=env,
    )
    try:
        wait_until_up(port, server)
        auth = {"apiuser": seed["api_user"], "apikey": seed["key"]}
        bare = Request("GET", "/healthz", {})
        get_user = Request("GET", f"/api/users/{seed['user']}", auth)
        run(port, bare, seconds=1)  # warm up every worker
        run(port, get_user, seconds=1)
        print(
            f"gunicorn {env['GUNICORN_WORKERS']} sync workers, PostgreSQL, Redis; {SECONDS:.0f} s per endpoint, 2x4 clients"
        )
        baseline = run(port, bare, seconds=SECONDS)
        report("bare Django view (baseline)", baseline, baseline)
        report("GET /api/users/{id}", run(port, get_user, seconds=SECONDS), baseline)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
