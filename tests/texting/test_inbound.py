"""A lead's texts: matched to the right account's thread (never another tenant's), STOP,
START and HELP, "call me" reaching a dial, and forwarded to the team."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from calls.models import Call, CallOrigin, CallStatus, Leg
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory
from tests.texting.conftest import texting_on
from tests.users.factories import agent
from texting.inbound import text_receive
from texting.models import Direction, OptOut, Purpose, Text, TextStatus
from texting.services import text_reply_send
from texting.tasks import simulator_text_reply_task

pytestmark = pytest.mark.django_db

LEAD = "+13035550147"
SENDER = "+13035550999"


@pytest.fixture
def receive(django_capture_on_commit_callbacks):
    """A lead's text as Twilio posts it, committed (what it hands over is run)."""

    def received(body, *, to=SENDER, sender=LEAD, sid="SM1"):
        with django_capture_on_commit_callbacks(execute=True):
            return text_receive(
                to_number=to,
                from_number=sender,
                body=body,
                provider="twilio",
                provider_id=sid,
            )

    return received


def out(account, purpose):
    return list(
        Text.objects.filter(account=account, direction=Direction.OUT, purpose=purpose)
    )


def test_a_leads_text_joins_the_thread_of_its_latest_call(account, dispatched, receive):
    texting_on(account)
    call = CallFactory(account=account, phone=LEAD, status=CallStatus.BUSY)

    text = receive("Who is this?")

    assert text is not None
    assert (text.account, text.call, text.direction) == (account, call, Direction.IN)
    assert (text.body, text.status) == ("Who is this?", TextStatus.RECEIVED)
    assert receive("Who is this?") is None  # the provider posted it again
    assert Text.objects.filter(direction=Direction.IN).count() == 1


def test_matching_never_crosses_accounts_or_organizations(db, dispatched, receive):
    north = AccountFactory(caller_id="+13035550199")
    south = AccountFactory(organization=north.organization, caller_id="+13035550199")
    # Another organization has a number of its own (one number, one organization).
    other = AccountFactory(caller_id="+13035550188")
    own = AccountFactory(organization=north.organization)
    for account in (north, south, other):
        texting_on(account, sender="")  # texts from its caller ID
    texting_on(own, sender="+13035550777")
    CallFactory(account=north, phone="+13035550101")
    CallFactory(account=south, phone="+13035550102")
    CallFactory(account=other, phone="+13035550103")
    CallFactory(account=own, phone="+13035550101")
    # The same lead in two organizations: each reply goes to the organization of the
    # number it was sent to, whichever last reached the lead.
    CallFactory(account=north, phone="+13035550104")
    later = CallFactory(account=other, phone="+13035550104")
    Text.objects.create(
        account=other,
        lead_phone="+13035550104",
        call=later,
        direction=Direction.OUT,
        purpose=Purpose.NOT_REACHED,
        to_number="+13035550104",
        body="Sorry",
        due_at=timezone.now(),
    )

    shared, theirs = "+13035550199", "+13035550188"
    got = {
        (to, sender): receive("hi", to=to, sender=sender, sid=f"SM{sender}{to}")
        for to, sender in [
            (shared, "+13035550101"),
            (shared, "+13035550102"),
            (theirs, "+13035550103"),
            (shared, "+13035550104"),
            (theirs, "+13035550104"),
            ("+13035550777", "+13035550101"),
        ]
    }

    assert got[shared, "+13035550102"].account == south
    assert got[theirs, "+13035550103"].account == other
    assert got[shared, "+13035550104"].account == north
    assert got[theirs, "+13035550104"].account == other
    assert [
        t.account
        for t in Text.objects.filter(lead_phone="+13035550101", direction="in")
    ] == [
        north,
        own,
    ]
    # A number no account texts from: not stored. A lead no account of the number knows:
    # the first of them (never an account of another organization).
    assert receive("hi", to="+13035550000", sender="+13035550101", sid="SMx") is None
    assert receive("hi", to=shared, sender="+13035550999", sid="SMy").account == north


def test_stop_opts_the_number_out_of_every_text_until_start(
    account, dispatched, receive
):
    config = texting_on(account)
    call = CallFactory(account=account, phone=LEAD, status=CallStatus.NOANSWER)
    waiting = Text.objects.create(
        account=account,
        lead_phone=LEAD,
        call=call,
        direction=Direction.OUT,
        purpose=Purpose.WAITING,
        to_number=LEAD,
        body="Later",
        due_at=timezone.now(),
    )

    receive("Stop.", sid="SM1")

    opt_out = OptOut.objects.get(account=account, phone=LEAD)
    assert (opt_out.message, opt_out.opted_in_at) == ("Stop.", None)
    waiting.refresh_from_db()
    assert waiting.status == TextStatus.CANCELED
    (confirmation,) = out(account, Purpose.OPT_OUT)
    assert "unsubscribed from Demo Motors North" in confirmation.body
    with pytest.raises(ValidationError, match="opted out"):
        text_reply_send(call=call, user=agent(account, phone="+13035550140"), body="Hi")
    assert out(account, Purpose.REPLY) == []

    receive("START", sid="SM2")

    opt_out.refresh_from_db()
    assert opt_out.opted_in_at is not None
    assert opt_out.opt_in_message == "START"
    assert len(out(account, Purpose.OPT_IN)) == 1
    reply = text_reply_send(
        call=call, user=agent(account, phone="+13035550141"), body="Hi"
    )
    assert reply.status == TextStatus.SCHEDULED
    assert config.enabled


@pytest.mark.parametrize("word", ["STOPALL", "unsubscribe", "Cancel", "END", "quit"])
def test_each_stop_word_opts_out(account, dispatched, word, receive):
    texting_on(account)
    CallFactory(account=account, phone=LEAD)

    receive(word)

    assert OptOut.objects.filter(account=account, phone=LEAD).count() == 1


@pytest.mark.parametrize(
    "body",
    [
        # The FCC's words (2025), as the whole message or first in a short request.
        "revoke",
        "opt out",
        "optout",
        "Opt-Out",
        "STOP STOP",
        "Stop please",
        "Stop texting me",
        "opt out now",
        "stop!!!",
        # Full-width and look-alike letters, the stop sign.
        "\uff33\uff34\uff2f\uff30",  # full-width STOP
        "\u0405\u0422\u041e\u0420",  # Cyrillic look-alikes of STOP
        "\U0001f6d1",
        # Spanish.
        "Alto",
        "parar",
        "CANCELAR",
        "baja por favor",
    ],
)
def test_every_reasonable_opt_out_stops_texting(account, dispatched, body, receive):
    """CONTRACT.md "Texting": consent revoked by any reasonable means (FCC, April 2025)."""
    texting_on(account)
    CallFactory(account=account, phone=LEAD)

    receive(body)

    assert OptOut.objects.filter(account=account, phone=LEAD).count() == 1
    assert len(out(account, Purpose.OPT_OUT)) == 1  # one confirmation, nothing else


@pytest.mark.parametrize(
    "body",
    [
        "I'll stop by Saturday",
        "End of day works",
        "Cancel Tuesday, can we do Wednesday?",
        "Can you stop by the trade-in appraisal first?",
        "Yes",
    ],
)
def test_a_longer_message_holding_such_a_word_is_not_an_opt_out(
    account, dispatched, body, receive
):
    texting_on(account)
    CallFactory(account=account, phone=LEAD)

    receive(body)

    assert not OptOut.objects.filter(account=account, phone=LEAD).exists()


def test_help_answers_with_the_accounts_help_text(account, dispatched, receive):
    texting_on(account, help_template="{dealer} texts about your lead. STOP to stop.")
    CallFactory(account=account, phone=LEAD)

    receive("help")

    (answer,) = out(account, Purpose.HELP)
    assert answer.body == "Demo Motors North texts about your lead. STOP to stop."
    assert answer.to_number == LEAD
    assert answer.pk in dispatched


def test_call_me_queues_a_new_call_that_reaches_a_dial(world, account, receive):
    texting_on(account)
    taker = agent(account, phone="+13035550140")
    first = CallFactory(
        account=account,
        phone=LEAD,
        status=CallStatus.BUSY,
        agent=taker,
        whisper="Website lead. New 2025 Toyota Camry.",
    )

    text = receive("Yes, call me now please")
    world.run()

    assert text is not None
    again = text.queued_call
    assert again is not None
    again.refresh_from_db()
    assert again.origin == CallOrigin.TEXT_REPLY
    assert (again.phone, again.first_name, again.account) == (LEAD, "Sam", account)
    assert again.whisper == (
        "Sam Rivera texted back asking for a call. Website lead. New 2025 Toyota Camry."
    )
    # The same pipeline: the agent was rung and the lead dialed and answered.
    assert again.attempts_log.filter(leg=Leg.AGENT, agent=taker).exists()
    assert again.attempts_log.filter(leg=Leg.LEAD, number=LEAD).exists()
    assert again.status == CallStatus.ANSWER
    assert first.pk != again.pk


@pytest.mark.parametrize("body", ["Don't call me", "no thanks", "Who is this?"])
def test_a_reply_that_does_not_ask_for_a_call_queues_none(
    account, dispatched, body, receive
):
    texting_on(account)
    CallFactory(account=account, phone=LEAD, status=CallStatus.BUSY)

    text = receive(body)

    assert text is not None
    assert text.queued_call is None
    assert Call.objects.filter(origin=CallOrigin.TEXT_REPLY).count() == 0


def test_call_me_while_a_call_is_under_way_queues_no_second_one(
    account, dispatched, receive
):
    texting_on(account)
    CallFactory(account=account, phone=LEAD, status=CallStatus.QUEUED)

    text = receive("call me")

    assert text is not None
    assert text.queued_call is None


def test_the_leads_text_is_forwarded_to_the_agent_of_their_last_call(
    account, dispatched, receive
):
    texting_on(account)
    taker = agent(account, phone="+13035550140", first_name="Alex", last_name="Morgan")
    CallFactory(account=account, phone=LEAD, agent=taker, status=CallStatus.BUSY)

    receive("I am free after 5")

    (forward,) = out(account, Purpose.FORWARD)
    assert (forward.to_number, forward.recipient) == ("+13035550140", taker)
    assert forward.from_number == SENDER
    assert forward.body == "Text from Sam Rivera (+13035550147): I am free after 5"
    assert forward.pk in dispatched


def test_the_simulated_busy_lead_replies_call_me_once(
    account, dispatched, simulated, receive
):
    from texting.services import text_send

    texting_on(account)
    CallFactory(account=account, phone="+13035550001", status=CallStatus.BUSY)
    first = Text.objects.create(
        account=account,
        lead_phone="+13035550001",
        direction=Direction.OUT,
        purpose=Purpose.NOT_REACHED,
        to_number="+13035550001",
        from_number=SENDER,
        body="Sorry",
        due_at=timezone.now(),
    )
    text_send(text_id=first.pk)
    replies = [kwargs for name, kwargs in simulated if name.endswith("reply_task")]
    assert replies == [
        {
            "answering": first.pk,
            "to_number": SENDER,
            "from_number": "+13035550001",
            "body": "Call me please",
        }
    ]
    assert simulator_text_reply_task.run(**replies[0]) is True
    assert simulator_text_reply_task.run(**replies[0]) is False  # delivered twice: once

    second = Text.objects.create(
        account=account,
        lead_phone="+13035550001",
        direction=Direction.OUT,
        purpose=Purpose.NOT_REACHED,
        to_number="+13035550001",
        from_number=SENDER,
        body="Sorry again",
        due_at=timezone.now(),
    )
    simulated.clear()
    text_send(text_id=second.pk)
    assert [name for name, _ in simulated if name.endswith("reply_task")] == []


def test_with_no_agent_yet_the_leads_text_goes_to_the_accounts_managers(
    account, dispatched, receive
):
    from tests.scoring.factories import in_role

    texting_on(account)
    manager = in_role("Manager", accounts=[account], phone_number="+13035550150")
    in_role("Manager", accounts=[account], phone_number="")  # cannot be texted
    boss = in_role(
        "Global Manager",
        organizations=[account.organization],
        phone_number="+13035550151",
    )
    elsewhere = AccountFactory()
    in_role("Manager", accounts=[elsewhere], phone_number="+13035550152")
    in_role("Scorer", accounts=[account], phone_number="+13035550153")
    CallFactory(account=account, phone=LEAD, status=CallStatus.NOAGENT)

    receive("Anyone there?")

    forwards = out(account, Purpose.FORWARD)
    assert sorted(
        ((t.to_number, t.recipient) for t in forwards), key=lambda pair: pair[0]
    ) == [("+13035550150", manager), ("+13035550151", boss)]
    assert all(t.body.endswith(": Anyone there?") for t in forwards)


def test_a_text_whose_agent_left_goes_to_the_managers(account, dispatched, receive):
    from tests.scoring.factories import in_role

    texting_on(account)
    gone = agent(account, phone="+13035550140")
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    manager = in_role("Manager", accounts=[account], phone_number="+13035550150")
    CallFactory(account=account, phone=LEAD, agent=gone, status=CallStatus.BUSY)

    receive("Still interested")

    assert [(t.recipient, t.to_number) for t in out(account, Purpose.FORWARD)] == [
        (manager, "+13035550150")
    ]
