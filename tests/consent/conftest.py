import pytest
from rest_framework.test import APIClient

from leads.models import Lead
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.texting.conftest import dispatched, simulated, world  # noqa: F401
from tests.users.factories import agent
from tests.webhooks.conftest import broker, hooks, receiver  # noqa: F401

LEAD = "+13035550123"  # the factory lead's 303-555-0123
SENDER = "+13035550999"
VENDOR = "V-CONSENT"


@pytest.fixture
def dealer(tenant):
    """The tenant's first account takes the vendor's leads and has an agent on duty."""
    VendorRegistrationFactory(account=tenant.account, vendor_id=VENDOR)
    catch_all_rule(tenant.account)
    tenant.agent = agent(tenant.account, phone="+13035551000")
    return tenant


@pytest.fixture
def lead_in(django_capture_on_commit_callbacks):
    """Post a lead through intake, committed; the lead stored for it."""

    def post(tenant, prospect_id, **document):
        with django_capture_on_commit_callbacks(execute=True):
            response = APIClient().post(
                "/api/nl",
                {
                    "xml": adf(vendor_id=VENDOR, prospect_id=prospect_id, **document),
                    **tenant.headers,
                },
            )
        assert response.status_code == 200, response.json()
        return Lead.objects.get(pk=response.json()["leadId"])

    return post
