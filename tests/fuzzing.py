"""What the schemathesis tests share (tests/test_api_fuzz.py, tests/test_api_stateful.py):
a tenant to aim at and its credentials, the WSGI application kept in the test's
transaction, and lead intake's steering. Registered as a plugin by tests/conftest.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import pytest
from django.core import signals
from django.db import close_old_connections
from hypothesis import strategies as st

from appointments.services import appointment_set_for_call
from tests.accounts.factories import issue_credential, issue_scored_data_key
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.scoring.factories import CallFactory
from tests.users.factories import UserFactory
from users.pictures import PictureError

if TYPE_CHECKING:
    from tests.conftest import Tenant

# Mostly the tenant's own key, so examples get past authentication.
CREDENTIALS = ["valid"] * 6 + ["narrowed", "other tenant", "wrong", "none"]

# Lead intake's bodies: a form (the credentials its fields, or the headers), or the
# document itself (the credentials the headers).
FORMS = ("application/x-www-form-urlencoded", "multipart/form-data")
XML_BODIES = ("application/xml", "text/xml")
# A lead's generated values: any text (control characters make the document not
# well-formed, blanks leave the lead without a prospect id), or text XML carries.
ANY_TEXT = st.text(max_size=40)
XML_TEXT = st.text(
    st.characters(exclude_categories=["Cc", "Cs", "Cn"]), min_size=1, max_size=40
).filter(str.strip)


class Fuzzed:
    """What the examples aim at: a tenant with agents, a user, a call and its appointment, a
    vendor registration and a parsing rule; a credential narrowed to its first account;
    another tenant."""

    def __init__(self, tenant: Tenant, other_tenant: Tenant) -> None:
        self.tenant = tenant
        self.other_tenant = other_tenant
        self.narrowed, self.narrowed_key = issue_credential(
            tenant.organization, accounts=[tenant.account]
        )
        self.agent = UserFactory(account=tenant.account, account__code="0007")
        self.outside_agent = UserFactory(account=tenant.other_account)
        self.foreign_user = UserFactory(account=other_tenant.account)
        self.scored_data_key = issue_scored_data_key(tenant.account)
        self.call = CallFactory(account=tenant.account)
        self.appointment = appointment_set_for_call(
            call=self.call,
            starts_at=self.call.received_at + timedelta(days=2),
            by="agent",
        )
        self.vendor = VendorRegistrationFactory(account=tenant.account)
        catch_all_rule(tenant.account)

    def api_user_and_key(self, credentials: str) -> tuple[str, str]:
        return {
            "valid": (self.tenant.credential.api_user, self.tenant.key),
            "narrowed": (self.narrowed.api_user, self.narrowed_key),
            "other tenant": (
                self.other_tenant.credential.api_user,
                self.other_tenant.key,
            ),
            "wrong": (self.tenant.credential.api_user, "lc_notakey_0000"),
            "none": ("", ""),
        }[credentials]

    def lead(self, **values: str) -> str:
        """An ADF document of the tenant's registered vendor, which its rule processes."""
        return adf(
            vendor_id=self.vendor.vendor_id,
            vendor_name=self.vendor.vendor_name,
            **values,
        )


@pytest.fixture
def fuzzed(
    tenant: Tenant, other_tenant: Tenant, settings: Any, monkeypatch: Any
) -> Fuzzed:
    # A generous limit: the search sends far more requests a minute than the defaults allow.
    settings.API_RATE_LIMITS = dict.fromkeys(settings.API_RATE_LIMITS, "100000/min")

    def no_download(url: str) -> bytes:
        raise PictureError("The profile picture could not be downloaded.")

    monkeypatch.setattr("users.services.fetch_picture", no_download)
    return Fuzzed(tenant, other_tenant)


@pytest.fixture
def wsgi_in_the_test_transaction() -> Iterator[None]:
    """Schemathesis calls the WSGI application as a server would, and Django closes the
    database connection after each request: the test's transaction with it. Django's
    test client keeps it open the same way."""
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


def steer_lead_intake(
    case: Any,
    data: st.DataObject,
    fuzzed: Fuzzed,
    headers: dict[str, str],
    *,
    credentials: str,
    document: bool,
    text: st.SearchStrategy[str] = ANY_TEXT,
    in_form: bool | None = None,
) -> None:
    """Lead intake: ``credentials`` (a key of ``Fuzzed.api_user_and_key``) in the form's
    fields or in the headers (for a form: ``in_form``, drawn when None; always headers
    for an XML body); with ``document``, the tenant's lead with ``text`` in it as the
    form's ``xml`` or as the body."""
    api_user, key = fuzzed.api_user_and_key(credentials)
    lead = None
    if document:
        text = text.map(escape)
        lead = fuzzed.lead(
            prospect_id=data.draw(text, label="prospect id"),
            phone=data.draw(text, label="phone"),
            request_type=data.draw(text, label="request type"),
            provider_name=data.draw(text, label="provider name"),
        )
    if isinstance(case.body, dict):
        if in_form is None:
            in_form = data.draw(st.booleans(), label="credentials as the form's fields")
        if in_form:
            case.body.update({"apiuser": api_user, "apikey": key})
        else:
            case.body.pop("apiuser", None)
            case.body.pop("apikey", None)
            headers.update({"apiuser": api_user, "apikey": key})
        if lead is not None:
            case.body["xml"] = lead
    elif case.media_type in XML_BODIES:
        # The document is the body, the credentials are headers; bytes go out as they are
        # (a generated string is wrapped in an element by schemathesis: well-formed, not ADF).
        headers.update({"apiuser": api_user, "apikey": key})
        if lead is not None:
            encoding = data.draw(
                st.sampled_from(["utf-8", "utf-16", "windows-1252"]), label="encoding"
            )
            declared = lead.replace('encoding="UTF-8"', f'encoding="{encoding}"')
            case.body = declared.encode(encoding, errors="xmlcharrefreplace")
