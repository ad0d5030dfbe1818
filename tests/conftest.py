from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from redis.connection import Connection
from rest_framework.test import APIClient

from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    TeamFactory,
    issue_credential,
)
from users.models import User

# The fake Twilio's fixtures (``fake_twilio``, ``twilio_settings``) for the voice and the
# texting tests alike; the schemathesis tests' (``fuzzed``, ``wsgi_in_the_test_transaction``);
# media on moto's S3 server (``s3_server``, ``bucket``).
pytest_plugins = ["tests.calls.fake_twilio", "tests.fuzzing", "tests.media_s3"]


@pytest.fixture(autouse=True)
def _clear_cache() -> None:
    """Rate-limit counters and cached values never leak between tests (each xdist worker has its own Redis db)."""
    cache.clear()
    return


@pytest.fixture(autouse=True)
def _effects_run_when_handed_over(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A side effect recorded by a change (core.outbox) is handed over once the change
    commits; here the hand-over runs it at once, through the service its task calls, as
    an idle worker would. Tests of the hand-over itself (``@pytest.mark.outbox``) keep the
    real one; processes a test starts always do."""
    if request.node.get_closest_marker("outbox"):
        return
    from core import outbox
    from tests.handover import hold_hand_overs

    hold_hand_overs(
        monkeypatch,
        "core.tasks.effect_run_task",
        then=lambda effect_id, countdown: outbox.effect_run(effect_id=effect_id),
    )


@pytest.fixture(autouse=True)
def _broker_breaker_closed() -> Iterator[None]:
    """A broker a test made fail opens this process's breaker (core/handover.py); the next
    test starts with it closed."""
    from core.handover import breaker

    breaker.succeeded()
    yield
    breaker.succeeded()


@pytest.fixture(autouse=True)
def _permission_templates(request: pytest.FixtureRequest) -> Iterator[None]:
    """Transactional tests flush every table, the migrations' permission templates and
    their grants too; put them back for whichever test comes next."""
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or bool(
        marker and marker.kwargs.get("transaction")
    )
    if not (marker or transactional or "db" in request.fixturenames):
        yield
        return
    request.getfixturevalue("transactional_db" if transactional else "db")
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType

    from scoring.defaults import TEMPLATE_PERMISSIONS
    from scoring.models import Score

    content_type = ContentType.objects.get_for_model(Score)
    for name, codenames in TEMPLATE_PERMISSIONS.items():
        group, created = Group.objects.get_or_create(name=name)
        if created:
            group.permissions.set(
                Permission.objects.get(content_type=content_type, codename=codename)
                for codename in codenames
            )
    yield


@pytest.fixture(autouse=True)
def _writebacks_are_valid_adf(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every CRM write-back any test produces is valid against the ADF 1.0 DTD
    (tests/notify/adf_dtd.py): an invalid one fails the test that made it, even where
    the effect that built it swallows the failure."""
    from notify import crm
    from tests.notify.adf_dtd import DTD_PATH, dtd_errors

    if not DTD_PATH.exists():
        yield
        return
    invalid: list[tuple[list[str], str]] = []
    build = crm.writeback_adf

    def checked(*args: object, **kwargs: object) -> str:
        document = build(*args, **kwargs)  # type: ignore[arg-type]
        errors = dtd_errors(document)
        if errors:
            invalid.append((errors, document))
        return document

    monkeypatch.setattr(crm, "writeback_adf", checked)
    yield
    if invalid:
        errors, document = invalid[0]
        pytest.fail(
            f"{len(invalid)} write-back(s) invalid against the ADF 1.0 DTD; the first: "
            f"{errors}\n{document}"
        )


@pytest.fixture
def one_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every request of the test falls in the same rate-limit window, 20 s before its end,
    so a test near a minute boundary cannot see its counter reset."""
    from types import SimpleNamespace

    from core import throttling

    monkeypatch.setattr(
        throttling, "time", SimpleNamespace(time=lambda: 60.0 * 1000 + 40)
    )


@pytest.fixture
def prepared_statements():
    """The statements this test's connection has prepared on the server (core.db's
    ``prepared_cursor``), each with how many times it has run."""
    from django.db import connection

    def prepared() -> dict[str, int]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT statement, generic_plans + custom_plans"
                " FROM pg_prepared_statements WHERE NOT from_sql"
            )
            return dict(cursor.fetchall())

    return prepared


@pytest.fixture
def round_trips(monkeypatch):
    """Every batch of commands sent to Redis (one per round trip)."""
    sent: list[bytes] = []
    send = Connection.send_packed_command

    def counted(self, command, *args, **kwargs):
        sent.append(b"".join(command) if isinstance(command, list) else command)
        return send(self, command, *args, **kwargs)

    monkeypatch.setattr(Connection, "send_packed_command", counted)
    return sent


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


class Tenant:
    """An organization with two accounts (each with two teams), and a credential for it."""

    def __init__(self) -> None:
        self.organization = OrganizationFactory()
        self.account = AccountFactory(organization=self.organization)
        self.other_account = AccountFactory(organization=self.organization)
        self.teams = [
            TeamFactory(account=self.account, name="Sales"),
            TeamFactory(account=self.account, name="Service"),
        ]
        self.other_teams = [TeamFactory(account=self.other_account, name="Sales")]
        self.credential, self.key = issue_credential(self.organization)

    @property
    def headers(self) -> dict[str, str]:
        return {"apiuser": self.credential.api_user, "apikey": self.key}

    def client(self) -> APIClient:
        client = APIClient()
        client.credentials(HTTP_APIUSER=self.credential.api_user, HTTP_APIKEY=self.key)
        return client


@pytest.fixture
def tenant(db: None) -> Tenant:
    return Tenant()


@pytest.fixture
def other_tenant(db: None) -> Tenant:
    return Tenant()


# --- a real browser (Debian's Chromium through Playwright), for every folder's browser
# tests: one per test process, so it lives here, defined once (a session fixture imported
# into a second module would start a second Playwright in the same event loop).

# The demo-like users of the pages' tests sign in with this (tests/pages/conftest.py).
PAGES_PASSWORD = "Pages-test-1!"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser():
    """One headless Chromium per test process."""
    import os

    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the tests' own ORM calls
    # are still plain synchronous code, so Django's guard against async use must step aside.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=CHROMIUM, args=CHROMIUM_ARGS
        )
        yield chromium
        chromium.close()


@pytest.fixture
def open_as(browser, live_server):
    """``open_as(user)``: a new browser page, signed in as ``user`` through the sign-in form."""
    contexts = []

    def sign_in(user: User, password: str = PAGES_PASSWORD):
        context = browser.new_context(base_url=live_server.url, accept_downloads=True)
        contexts.append(context)
        page = context.new_page()
        page.goto("/login/")
        page.fill("#id_username", user.username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        return page

    yield sign_in
    for context in contexts:
        context.close()
