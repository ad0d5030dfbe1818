import pytest
from django.core.cache import cache
from rest_framework.test import APIClient

from tests.accounts.factories import AccountFactory, OrganizationFactory, TeamFactory, issue_credential


@pytest.fixture(autouse=True)
def _clear_cache():
    """Rate-limit counters and cached values never leak between tests (each xdist worker has its own Redis db)."""
    cache.clear()
    yield


@pytest.fixture
def api_client() -> APIClient:
    return APIClient()


class Tenant:
    """An organization with two accounts (each with two teams), and a credential for it."""

    def __init__(self) -> None:
        self.organization = OrganizationFactory()
        self.account = AccountFactory(organization=self.organization)
        self.other_account = AccountFactory(organization=self.organization)
        self.teams = [TeamFactory(account=self.account, name="Sales"), TeamFactory(account=self.account, name="Service")]
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
