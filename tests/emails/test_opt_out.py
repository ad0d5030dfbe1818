"""The opt-out link: the page confirms, then records the revocation of the account's
e-mails in the consent ledger; the next lead from that address is not e-mailed (a new
submission does not give e-mail consent again), while the other accounts and
organizations e-mail it as before. A link not ours is a clear 404 page."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from consent.models import ConsentEvent, Kind, Source
from emails.models import EmailStatus, LeadEmail
from emails.optout import opt_out_url
from emails.services import email_to_lead, lead_email_send
from tests.emails.conftest import LEAD_EMAIL, dealer, post_lead

pytestmark = pytest.mark.django_db

BASE = "https://leads.example.test"


def link_of(mailbox, address: str = LEAD_EMAIL, index: int = -1) -> str:
    """The path of the opt-out link in the ``List-Unsubscribe`` of a received e-mail."""
    header = mailbox.to(address)[index]["List-Unsubscribe"].strip().strip("<>")
    assert header.startswith(BASE)
    return header.removeprefix(BASE)


def send_all(handed_over) -> list[str]:
    results = [lead_email_send(email_id=email_id) for email_id, _ in handed_over]
    handed_over.clear()
    return results


def test_the_link_asks_then_records_the_opt_out_and_the_next_lead_is_not_emailed(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000")
    dealer(tenant.other_account, "V-2000")
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    assert send_all(handed_over) == ["sent"]
    path = link_of(smtp_server.mailbox)
    browser = Client(enforce_csrf_checks=True)

    page = browser.get(path)
    assert page.status_code == 200
    html = page.content.decode()
    assert f"Unsubscribe from {tenant.account.name}'s e-mails" in html
    assert f"{LEAD_EMAIL} will get no more e-mails from {tenant.account.name}." in html
    assert re.search(r'<form method="post">\s*<button type="submit">Unsubscribe', html)
    assert not ConsentEvent.objects.filter(
        emails=True
    ).exists()  # a GET changes nothing

    done = browser.post(path)
    assert done.status_code == 200
    assert "You are unsubscribed" in done.content.decode()
    (revocation,) = ConsentEvent.objects.filter(emails=True)
    assert (
        revocation.account,
        revocation.organization,
        revocation.email,
        revocation.phone,
        revocation.kind,
        revocation.source,
        revocation.calls,
        revocation.texts,
    ) == (
        tenant.account,
        tenant.organization,
        LEAD_EMAIL,
        "",
        Kind.REVOCATION,
        Source.EMAIL,
        False,
        False,
    )
    # Twice (a second click, a mail program's one-click POST after the person's): once.
    assert browser.post(path).status_code == 200
    assert ConsentEvent.objects.filter(emails=True).count() == 1

    # The same person submits again: the account's e-mails stay stopped ...
    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        prospect_id="P-2",
    )
    # ... while the organization's other account still e-mails them.
    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-2000",
        prospect_id="P-3",
    )
    assert send_all(handed_over) == ["sent"]
    assert [mail["From"] for mail in smtp_server.mailbox.to(LEAD_EMAIL)] == [
        f"{tenant.account.name} <leadcall@localhost>",
        f"{tenant.other_account.name} <leadcall@localhost>",
    ]
    assert LeadEmail.objects.filter(account=tenant.account).count() == 1


def test_a_mail_programs_one_click_post_records_the_opt_out_without_a_page(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000")
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    send_all(handed_over)

    response = Client(enforce_csrf_checks=True).post(
        link_of(smtp_server.mailbox), {"List-Unsubscribe": "One-Click"}
    )

    assert response.status_code == 200
    assert ConsentEvent.objects.filter(
        account=tenant.account, email=LEAD_EMAIL, emails=True, kind=Kind.REVOCATION
    ).exists()


def test_an_email_waiting_when_the_lead_opts_out_is_never_sent(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000")
    call = post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    send_all(handed_over)
    later = email_to_lead(call=call, purpose="not_reached")
    assert later is not None
    assert later.status == EmailStatus.QUEUED

    assert Client().post(link_of(smtp_server.mailbox)).status_code == 200

    assert lead_email_send(email_id=later.pk) == "done"
    later.refresh_from_db()
    assert later.status == EmailStatus.CANCELED
    assert later.error == (
        "The lead opted out of the account's e-mails before it was sent."
    )
    assert len(smtp_server.mailbox.received) == 1


def test_an_opt_out_at_one_organization_leaves_anothers_emails_alone(
    tenant, other_tenant, smtp_server, handed_over, django_capture_on_commit_callbacks
):
    dealer(tenant.account, "V-1000", reply_to="sales@first.example")
    dealer(other_tenant.account, "V-9000", reply_to="sales@second.example")
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    send_all(handed_over)
    Client().post(link_of(smtp_server.mailbox))

    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        prospect_id="P-2",
    )
    post_lead(
        other_tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-9000",
        prospect_id="P-2",
    )
    assert send_all(handed_over) == ["sent"]

    mails = smtp_server.mailbox.to(LEAD_EMAIL)
    assert [mail["Reply-To"] for mail in mails] == [
        "sales@first.example",
        "sales@second.example",
    ]
    # Each organization's e-mail links to its own account's opt-out, and each ledger
    # holds only its own.
    assert link_of(smtp_server.mailbox, index=0) != link_of(
        smtp_server.mailbox, index=1
    )
    assert list(
        ConsentEvent.objects.filter(emails=True).values_list(
            "organization_id", flat=True
        )
    ) == [tenant.organization.pk]
    assert not LeadEmail.objects.filter(
        account=other_tenant.account, status=EmailStatus.CANCELED
    ).exists()


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_link_changed_or_made_up_is_a_clear_404_page_that_records_nothing(
    tenant, method
):
    dealer(tenant.account, "V-1000")
    path = opt_out_url(account_id=tenant.account.pk, email=LEAD_EMAIL).removeprefix(
        BASE
    )
    # Another account's id in the token, keeping the signature: no longer ours.
    forged = path.replace("eyJhIjo", "eyJhIjpa", 1)
    for bad in [path[:-3] + "abc", forged, "/emails/opt-out/nonsense", path + "x"]:
        response = getattr(Client(), method)(bad)
        assert response.status_code == 404, bad
        assert "This link is not valid" in response.content.decode()
    assert not ConsentEvent.objects.filter(emails=True).exists()


def test_a_link_for_an_account_deleted_since_is_not_valid(tenant):
    path = opt_out_url(account_id=tenant.account.pk + 1000, email=LEAD_EMAIL)
    response = Client().post(path.removeprefix(BASE))
    assert response.status_code == 404
    assert not ConsentEvent.objects.exists()


def test_support_lifts_an_opt_out_by_entering_a_consent_to_emails(
    tenant, smtp_server, handed_over, django_capture_on_commit_callbacks, admin_client
):
    dealer(tenant.account, "V-1000")
    post_lead(tenant, django_capture_on_commit_callbacks, vendor_id="V-1000")
    send_all(handed_over)
    Client().post(link_of(smtp_server.mailbox))
    add = reverse("admin:consent_consentevent_add")
    entry = {
        "account": str(tenant.account.pk),
        "kind": "consent",
        "source": "support",
        "email": LEAD_EMAIL,
        # A minute on: after the opt-out, which the form's whole seconds could precede.
        "at": (timezone.localtime() + timedelta(minutes=1)).strftime(
            "%Y-%m-%d %H:%M:%S"
        ),
        "detail": "Asked for e-mails again at the showroom",
    }

    # Of e-mails, and with an address: the form says what is missing.
    refused = admin_client.post(add, {**entry, "emails": "on", "email": ""})
    assert refused.status_code == 200
    assert "Consent to e-mails is of an e-mail address." in refused.content.decode()
    response = admin_client.post(add, {**entry, "emails": "on"})
    assert response.status_code == 302

    post_lead(
        tenant,
        django_capture_on_commit_callbacks,
        vendor_id="V-1000",
        prospect_id="P-2",
    )
    assert send_all(handed_over) == ["sent"]
    assert len(smtp_server.mailbox.to(LEAD_EMAIL)) == 2
