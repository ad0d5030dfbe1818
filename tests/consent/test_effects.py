"""What the ledger changes: a revocation of calls (a manager's mark; a text opt-out, by a
setting on by default) ends the account's next call to the number CANCEL before anyone is
rung, with the reason in its notes; a new lead gives consent to calls again, not to
texts; click-to-call is refused only for a revocation of calls."""

import pytest
from django.urls import reverse
from rest_framework.test import APIClient

from calls.models import CallAttempt, CallStatus, Leg
from consent.models import Source
from consent.selectors import calls_revocation
from consent.services import consent_revoke
from tests.accounts.factories import issue_scored_data_key
from tests.consent.conftest import LEAD, SENDER
from tests.scoring.factories import in_role
from tests.texting.conftest import texting_on
from tests.users.factories import UserFactory
from texting.inbound import text_receive
from texting.selectors import opted_out

pytestmark = pytest.mark.django_db

INVALID = "The given data was invalid."
REFUSED = "The customer phone number has withdrawn consent to calls from this account."


def managers_mark(account, **fields):
    manager = UserFactory(account=account, first_name="Dana", last_name="Kim")
    (revocation,) = consent_revoke(
        accounts=[account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
        detail="Asked on the phone not to be called again",
        by=manager,
        **fields,
    )
    return revocation


def stop(django_capture_on_commit_callbacks, body="STOP"):
    with django_capture_on_commit_callbacks(execute=True):
        return text_receive(
            to_number=SENDER,
            from_number=LEAD,
            body=body,
            provider="twilio",
            provider_id=f"SM-{body}",
        )


def ran(world, lead):
    world.run()
    lead.call.refresh_from_db()
    return lead.call


def canceled_undialed(call, revocation):
    assert call.status == CallStatus.CANCEL
    assert call.update_notes == revocation.reason()
    assert not CallAttempt.objects.filter(call=call).exists()  # no agent, no lead leg


# --- the call pipeline -------------------------------------------------------------------


def test_a_managers_mark_ends_the_leads_call_cancel_with_the_reason_and_no_dial(
    dealer, lead_in, world
):
    lead = lead_in(dealer, "P-1")  # queued, not yet set up
    revocation = managers_mark(dealer.account)

    call = ran(world, lead)

    canceled_undialed(call, revocation)
    assert world.dials == []
    assert call.update_notes.startswith("Not called: consent to calls withdrawn ")
    assert call.update_notes.endswith(
        "UTC, marked by a manager (Dana Kim): Asked on the phone not to be called again"
    )


def test_the_scored_record_shows_the_cancel_and_its_reason(dealer, lead_in, world):
    key = issue_scored_data_key(dealer.account)
    lead = lead_in(dealer, "P-1")
    revocation = managers_mark(dealer.account)
    call = ran(world, lead)

    response = APIClient().get(
        "/api/scoreddata", {"apikey": key, "callId": str(call.pk)}
    )

    record = response.json()
    assert (record["status"], record["callAttempts"]) == ("CANCEL", "0")
    assert record["updateNotes"] == f"{lead.call_notes}\n{revocation.reason()}"


def test_the_call_page_shows_a_manager_why_the_call_was_not_made(
    dealer, lead_in, world, client
):
    lead = lead_in(dealer, "P-1")
    revocation = managers_mark(dealer.account)
    call = ran(world, lead)
    client.force_login(in_role("Manager", accounts=[dealer.account]))

    response = client.get(reverse("pages:call-detail", args=[call.pk]))

    assert response.status_code == 200
    body = response.content.decode()
    assert (
        f'<h3>Update notes</h3>\n  <pre class="text">{revocation.reason()}</pre>'
        in body
    )


def test_a_new_lead_gives_consent_to_calls_again(dealer, lead_in, world):
    managers_mark(dealer.account)

    call = ran(world, lead_in(dealer, "P-2"))

    assert call.status == CallStatus.ANSWER
    assert CallAttempt.objects.filter(call=call, leg=Leg.LEAD).exists()


def test_a_mark_for_another_account_or_number_dials_as_ever(dealer, lead_in, world):
    consent_revoke(
        accounts=[dealer.other_account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
    )
    consent_revoke(
        accounts=[dealer.account],
        source=Source.MANAGER,
        phone="+13035550124",
        calls=True,
        texts=False,
    )
    lead = lead_in(dealer, "P-1")

    assert ran(world, lead).status == CallStatus.ANSWER


def test_a_text_opt_out_stops_the_accounts_lead_calls(
    dealer, lead_in, world, django_capture_on_commit_callbacks
):
    texting_on(dealer.account)
    lead = lead_in(dealer, "P-1")
    stop(django_capture_on_commit_callbacks, "Stop texting me")
    revocation = calls_revocation(account_id=dealer.account.pk, phone=LEAD)
    assert revocation is not None
    assert revocation.source == Source.TEXT

    canceled_undialed(ran(world, lead), revocation)
    assert lead.call.update_notes.endswith("UTC, text from the lead: Stop texting me")


def test_with_the_setting_off_a_text_opt_out_stops_texts_only(
    dealer, lead_in, world, settings, django_capture_on_commit_callbacks
):
    settings.CONSENT_TEXT_OPT_OUT_STOPS_CALLS = False
    texting_on(dealer.account)
    lead = lead_in(dealer, "P-1")
    stop(django_capture_on_commit_callbacks)

    assert ran(world, lead).status == CallStatus.ANSWER
    assert opted_out(account_id=dealer.account.pk, phone=LEAD)


def test_after_a_stop_a_new_lead_gives_consent_to_calls_but_not_to_texts(
    dealer, lead_in, world, django_capture_on_commit_callbacks
):
    texting_on(dealer.account)
    ran(world, lead_in(dealer, "P-1"))
    stop(django_capture_on_commit_callbacks)

    call = ran(world, lead_in(dealer, "P-2"))

    assert call.status == CallStatus.ANSWER
    assert opted_out(account_id=dealer.account.pk, phone=LEAD)  # texts need START


def test_after_a_stop_the_leads_call_me_text_is_consent_to_that_call(
    dealer, lead_in, world, django_capture_on_commit_callbacks
):
    texting_on(dealer.account)
    ran(world, lead_in(dealer, "P-1"))
    stop(django_capture_on_commit_callbacks)

    text = stop(django_capture_on_commit_callbacks, "Call me please")
    world.run()

    assert text.queued_call is not None
    text.queued_call.refresh_from_db()
    assert text.queued_call.status == CallStatus.ANSWER
    assert opted_out(account_id=dealer.account.pk, phone=LEAD)


def test_start_lifts_a_text_opt_outs_stop_on_calls_but_not_a_managers_mark(
    tenant, django_capture_on_commit_callbacks, dispatched
):
    texting_on(tenant.account)
    from tests.scoring.factories import CallFactory

    CallFactory(account=tenant.account, phone=LEAD)
    stop(django_capture_on_commit_callbacks)
    stop(django_capture_on_commit_callbacks, "START")
    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) is None

    mark = managers_mark(tenant.account)
    stop(django_capture_on_commit_callbacks, "stop")
    stop(django_capture_on_commit_callbacks, "start")
    assert calls_revocation(account_id=tenant.account.pk, phone=LEAD) == mark


# --- click-to-call -----------------------------------------------------------------------


def click_to_call(tenant):
    return APIClient().post(
        "/api/clicktocallv2",
        {
            "account_id": str(tenant.account.pk),
            "customer_phone_number": "303-555-0123",  # national: read in the country
            "user_id": str(tenant.agent.pk),
        },
        format="json",
        HTTP_API_KEY=tenant.key,
    )


def test_click_to_call_is_refused_422_for_a_revocation_of_calls(dealer):
    managers_mark(dealer.account)

    response = click_to_call(dealer)

    assert response.status_code == 422
    assert response.json() == {
        "message": INVALID,
        "errors": {"customer_phone_number": [REFUSED]},
    }
    assert not dealer.account.calls.exists()


def test_click_to_call_is_refused_in_that_account_only(dealer):
    consent_revoke(
        accounts=[dealer.other_account],
        source=Source.MANAGER,
        phone=LEAD,
        calls=True,
        texts=False,
    )

    assert click_to_call(dealer).status_code == 201


def test_click_to_call_after_a_text_opt_out_is_the_persons_own_request(
    dealer, lead_in, world, django_capture_on_commit_callbacks
):
    texting_on(dealer.account)
    ran(world, lead_in(dealer, "P-1"))
    stop(django_capture_on_commit_callbacks)

    with django_capture_on_commit_callbacks(execute=True):
        response = click_to_call(dealer)
    assert response.status_code == 201
    world.run()

    call = dealer.account.calls.get(pk=response.json()["callId"])
    assert call.status == CallStatus.ANSWER
