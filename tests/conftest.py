import pytest
from django.contrib.auth.models import Group
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    TeamFactory,
    issue_credential,
)


@pytest.fixture(autouse=True)
def _clear_cache():
    """Rate-limit counters and cached values never leak between tests (each xdist worker has its own Redis db)."""
    cache.clear()
    return


@pytest.fixture(autouse=True)
def _broker_breaker_closed():
    """A broker a test made fail opens this process's breaker (config/celery.py); the next
    test starts with it closed."""
    from config.celery import breaker

    breaker.succeeded()
    yield
    breaker.succeeded()


@pytest.fixture(autouse=True)
def _permission_templates(request):
    """Transactional tests flush every table, the migration's permission templates too;
    put them back for whichever test comes next."""
    marker = request.node.get_closest_marker("django_db")
    transactional = "transactional_db" in request.fixturenames or bool(
        marker and marker.kwargs.get("transaction")
    )
    if not (marker or transactional or "db" in request.fixturenames):
        yield
        return
    request.getfixturevalue("transactional_db" if transactional else "db")
    for name in ("Agent", "Manager", "Global Manager", "Scorer"):
        Group.objects.get_or_create(name=name)
    yield


@pytest.fixture
def one_window(monkeypatch):
    """Every request of the test falls in the same rate-limit window, 20 s before its end,
    so a test near a minute boundary cannot see its counter reset."""
    from types import SimpleNamespace

    from core import throttling

    monkeypatch.setattr(
        throttling, "time", SimpleNamespace(time=lambda: 60.0 * 1000 + 40)
    )


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
def tenant(db) -> Tenant:
    return Tenant()


@pytest.fixture
def other_tenant(db) -> Tenant:
    return Tenant()
