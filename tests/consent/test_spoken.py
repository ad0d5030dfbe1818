"""A lead saying "don't call me again" on a call: read from the transcript once it is
saved, shown on the call page for a person to confirm or dismiss, under a handoff timer.
Confirmed, it is a revocation of the account's calls (who, when, the call) and the next
lead call to the number ends CANCEL; dismissed, the decision is kept and calls go on."""

import pytest
from django.urls import reverse

from calls.models import CallStatus
from calls.pipeline.records import call_transcription_save
from consent.models import ConsentEvent, Kind, Source
from consenting.models import Decision, SpokenRevocation
from handoffs.models import ClosedBy, Handoff, HandoffKind
from tests.accounts.factories import AccountFactory
from tests.consent.conftest import LEAD
from tests.scoring.factories import CallFactory, in_role

pytestmark = pytest.mark.django_db

SAID = "I bought one last week. Please take me off your list."
ASKED = "Please take me off your list."
SHOWN = "The lead may have asked not to be called again: <q>Please take me off your list.</q>"


def conversation(said=SAID):
    return [
        {
            "side": "agent",
            "start": 0,
            "end": 3,
            "text": "Hi, it's Sam from North Motors.",
        },
        {"side": "lead", "start": 3, "end": 7, "text": said},
        {
            "side": "agent",
            "start": 7,
            "end": 9,
            "text": "Understood, sorry to bother you.",
        },
    ]


@pytest.fixture
def transcribed(dealer, django_capture_on_commit_callbacks):
    """An answered call of the dealer's agent, its transcript saved (its readers run)."""

    def save(said=SAID, **fields):
        call = CallFactory(
            account=dealer.account,
            phone=LEAD,
            agent=dealer.agent,
            status=CallStatus.ANSWER,
            **fields,
        )
        with django_capture_on_commit_callbacks(execute=True):
            call_transcription_save(call=call, turns=conversation(said))
        return call

    return save


def page(client, call):
    response = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert response.status_code == 200
    return response.content.decode()


def decide(client, call, decision):
    return client.post(
        reverse("pages:call-spoken-revocation", args=[call.pk, decision])
    )


def open_timers(kind=HandoffKind.SPOKEN_OPT_OUT):
    return list(Handoff.objects.filter(kind=kind, closed_at=None))


def test_the_agent_confirms_and_the_next_lead_call_ends_cancel(
    dealer, transcribed, lead_in, world, client, django_capture_on_commit_callbacks
):
    call = transcribed()
    (timer,) = open_timers()
    assert (timer.account, timer.phone, timer.call) == (dealer.account, LEAD, call)
    client.force_login(dealer.agent)
    shown = page(client, call)
    assert SHOWN in shown
    assert ">Confirm</button>" in shown
    assert ">Dismiss</button>" in shown
    queued = lead_in(dealer, "P-2")  # its consent comes before the confirmation

    with django_capture_on_commit_callbacks(execute=True):
        response = decide(client, call, "confirm")

    assert response.status_code == 302
    assert response["Location"] == reverse("pages:call-detail", args=[call.pk])
    row = ConsentEvent.objects.get(kind=Kind.REVOCATION)
    assert (row.account, row.phone, row.calls, row.texts, row.source) == (
        dealer.account,
        LEAD,
        True,
        False,
        Source.SPOKEN,
    )
    assert (row.by, row.detail, row.reference) == (
        dealer.agent,
        ASKED,
        f"call {call.pk}",
    )
    suggestion = SpokenRevocation.objects.get()
    assert (suggestion.decision, suggestion.decided_by) == (
        Decision.CONFIRMED,
        dealer.agent,
    )
    timer.refresh_from_db()
    assert (timer.closed_by, timer.closed_by_user) == (ClosedBy.DECISION, dealer.agent)
    after = page(client, call)
    assert ">Confirm</button>" not in after
    assert "Confirmed: calls stop by" in after

    world.run()
    queued.call.refresh_from_db()
    assert queued.call.status == CallStatus.CANCEL
    assert queued.call.update_notes == row.reason()
    assert "said on a call (confirmed by a person)" in row.reason()
    assert world.dials == []


def test_a_manager_dismisses_and_calls_go_on(
    dealer, transcribed, lead_in, world, client
):
    call = transcribed()
    manager = in_role("Manager", accounts=[dealer.account])
    client.force_login(manager)

    assert decide(client, call, "dismiss").status_code == 302

    assert not ConsentEvent.objects.filter(kind=Kind.REVOCATION).exists()
    suggestion = SpokenRevocation.objects.get()
    assert (suggestion.decision, suggestion.decided_by) == (Decision.DISMISSED, manager)
    assert open_timers() == []
    assert "Dismissed by" in page(client, call)
    lead = lead_in(dealer, "P-2")
    world.run()
    lead.call.refresh_from_db()
    assert lead.call.status == CallStatus.ANSWER


def test_a_second_decision_changes_nothing(dealer, transcribed, client):
    call = transcribed()
    client.force_login(dealer.agent)
    decide(client, call, "dismiss")

    response = decide(client, call, "confirm")

    assert response.status_code == 302
    assert not ConsentEvent.objects.filter(kind=Kind.REVOCATION).exists()
    assert SpokenRevocation.objects.get().decision == Decision.DISMISSED


@pytest.mark.parametrize(
    "said",
    [
        "Don't call me before 5, I'm at work.",
        "You don't need to call me, I'll come in on Saturday.",
        "Stop calling me by my first name, it's Mr. Nowak.",
    ],
)
def test_what_only_looks_like_it_suggests_nothing(dealer, transcribed, client, said):
    call = transcribed(said)

    assert not SpokenRevocation.objects.exists()
    assert open_timers() == []
    client.force_login(dealer.agent)
    assert "may have asked not to be called" not in page(client, call)


def test_a_scorer_sees_it_but_may_not_decide(dealer, transcribed, client):
    call = transcribed()
    scorer = in_role("Scorer", accounts=[dealer.account])
    client.force_login(scorer)
    shown = page(client, call)
    assert SHOWN in shown
    assert ">Confirm</button>" not in shown

    assert decide(client, call, "confirm").status_code == 403
    assert not ConsentEvent.objects.filter(kind=Kind.REVOCATION).exists()


def test_another_organizations_manager_finds_no_call(dealer, transcribed, client):
    call = transcribed()
    client.force_login(in_role("Manager", accounts=[AccountFactory()]))

    assert decide(client, call, "confirm").status_code == 404
    assert SpokenRevocation.objects.get().decision == Decision.WAITING


def test_a_transcript_saved_again_suggests_once(
    dealer, transcribed, django_capture_on_commit_callbacks
):
    call = transcribed()
    with django_capture_on_commit_callbacks(execute=True):
        call_transcription_save(call=call, turns=conversation())

    assert SpokenRevocation.objects.count() == 1
    assert len(open_timers()) == 1


def test_deciding_needs_a_post(dealer, transcribed, client):
    call = transcribed()
    client.force_login(dealer.agent)
    url = reverse("pages:call-spoken-revocation", args=[call.pk, "confirm"])

    assert client.get(url).status_code == 405
    assert decide(client, call, "maybe").status_code == 404


def test_support_reads_the_decision_in_the_admin(dealer, transcribed, admin_client):
    call = transcribed()

    response = admin_client.get(reverse("admin:consenting_spokenrevocation_changelist"))

    assert response.status_code == 200
    body = response.content.decode()
    assert ASKED in body
    assert LEAD in body
    assert str(call.account) in body
