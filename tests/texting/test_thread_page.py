"""The call page's thread through the test client: the lead's texts and calls in one
timeline, and replies from the agent, a manager or staff (never run: the send is only
recorded as handed to the broker on commit)."""

from __future__ import annotations

from datetime import timedelta
from zoneinfo import ZoneInfo

import pytest
from django.urls import reverse
from django.utils import timezone

from calls.models import CallStatus
from scoring.selectors import call_may_be_texted_by
from tests.pages.conftest import World, make_world
from tests.scoring.factories import CallFactory
from tests.texting.factories import SENDER, text_in_thread, texting_on
from texting.models import Direction, OptOut, Purpose, Text, TextStatus

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def world(db) -> World:
    world = make_world()
    texting_on(world.north)
    return world


@pytest.fixture
def signed_in(client):
    def sign_in(user):
        client.force_login(user)
        return client

    return sign_in


def page(client, call) -> str:
    response = client.get(reverse("pages:call-detail", args=[call.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


def reply_url(call) -> str:
    return reverse("pages:call-text-reply", args=[call.pk])


def thread(world: World):
    """An earlier unanswered call, the automatic text, the lead's "call me" that queued the
    page's call, and a reply that failed."""
    call = world.agent_call
    start = call.received_at
    first = CallFactory(
        account=world.north,
        phone=call.phone,
        status=CallStatus.NOANSWER,
        received_at=start - timedelta(hours=1),
    )
    automatic = text_in_thread(
        world.north,
        call.phone,
        at=start - timedelta(minutes=50),
        body="Hi Pat, we just tried to call you.",
        call=first,
    )
    call_me = text_in_thread(
        world.north,
        call.phone,
        at=start - timedelta(minutes=1),
        body="call me",
        direction=Direction.IN,
        queued_call=call,
    )
    failed = text_in_thread(
        world.north,
        call.phone,
        at=start + timedelta(minutes=30),
        body="Are you still looking?",
        purpose=Purpose.REPLY,
        status=TextStatus.FAILED,
        error="30006 Landline or unreachable carrier",
        sent_by=world.manager,
    )
    forward = text_in_thread(
        world.north,
        call.phone,
        at=start + timedelta(minutes=31),
        body="Lead +13035550177: call me",
        purpose=Purpose.FORWARD,
        recipient=world.agent,
    )
    return first, automatic, call_me, failed, forward


def test_the_timeline_shows_texts_and_calls_oldest_first_with_statuses(
    world, signed_in
):
    first, automatic, *_ = thread(world)
    body = page(signed_in(world.manager), world.agent_call)
    denver = ZoneInfo("America/Denver")
    lines = [
        f"{first.received_at.astimezone(denver):%Y-%m-%d %H:%M}</strong> "
        f'<a href="/calls/{first.pk}/">Call {first.pk}</a> · '
        '<span class="badge NOANSWER">No answer</span>',
        f"{automatic.created_at.astimezone(denver):%Y-%m-%d %H:%M}</strong> "
        '↗ <span class="who">North</span> · '
        '<span class="badge delivered">Delivered</span> '
        '<pre class="text">Hi Pat, we just tried to call you.</pre>',
        '↘ <span class="who">Lead</span> · <span class="badge received">Received</span> '
        '<pre class="text">call me</pre> <p> '
        f'<a href="/calls/{world.agent_call.pk}/">A call back was queued</a>',
        'This call · <span class="badge ANSWER">Answered</span> · Avery Lopez',
        '↗ <span class="who">Sent by Morgan Reyes</span> · '
        '<span class="badge failed">Failed</span> '
        '<pre class="text">Are you still looking?</pre> '
        '<p class="error">Not delivered: 30006 Landline or unreachable carrier</p>',
        '↗ <span class="who">Forwarded to Avery Lopez</span>',
    ]
    positions = [body.find(line) for line in lines]
    assert -1 not in positions, dict(zip(lines, positions, strict=True))
    assert positions == sorted(positions)


def test_an_opted_out_lead_is_shown_with_the_date(world, signed_in):
    at = timezone.now() - timedelta(days=2)
    OptOut.objects.create(
        account=world.north,
        phone=world.agent_call.phone,
        opted_out_at=at,
        message="STOP",
    )
    body = page(signed_in(world.agent), world.agent_call)
    local = at.astimezone(ZoneInfo("America/Denver"))
    assert f"The lead opted out of texts on {local:%Y-%m-%d %H:%M}." in body


@pytest.mark.parametrize(
    ("role", "shown"),
    [
        ("agent", True),
        ("manager", True),
        ("global_manager", True),
        ("staff", True),
        ("scorer", False),
    ],
)
def test_the_reply_form_is_shown_to_those_who_may_reply(world, signed_in, role, shown):
    body = page(signed_in(world.users()[role]), world.agent_call)
    assert ("Send text</button>" in body) is shown
    assert f'action="{reply_url(world.agent_call)}"' in body or not shown


def test_a_scorer_may_not_reply(world, signed_in, dispatched):
    response = signed_in(world.scorer).post(
        reply_url(world.agent_call), {"body": "Hello"}
    )
    assert response.status_code == 403
    assert not Text.objects.exists()


def test_another_organizations_manager_finds_neither_page_nor_reply(
    world, signed_in, dispatched
):
    client = signed_in(world.foreign_manager)
    url = reverse("pages:call-detail", args=[world.agent_call.pk])
    assert client.get(url).status_code == 404
    assert client.post(reply_url(world.agent_call), {"body": "Hi"}).status_code == 404
    assert not Text.objects.exists()


def test_no_form_and_no_reply_while_texting_is_off(world, signed_in, dispatched):
    world.north.texting_settings.delete()
    client = signed_in(world.manager)
    body = page(client, world.agent_call)
    assert "Send text</button>" not in body
    assert "Texting is off for this account." in body
    assert client.post(reply_url(world.agent_call), {"body": "Hi"}).status_code == 403
    assert not Text.objects.exists()


def test_the_agent_of_any_call_of_the_lead_may_reply():
    world = make_world()
    call = world.agent_call
    assert not call_may_be_texted_by(user=world.other_agent, call=call)
    CallFactory(account=world.north, phone=call.phone, agent=world.other_agent)
    assert call_may_be_texted_by(user=world.other_agent, call=call)
    assert not call_may_be_texted_by(user=world.scorer, call=call)


def test_a_reply_is_stored_once_and_handed_over_on_commit_then_redirects(
    world, signed_in, dispatched, django_capture_on_commit_callbacks
):
    client = signed_in(world.agent)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            reply_url(world.agent_call), {"body": "  Is 4 pm good for you?  "}
        )
    assert response.status_code == 302
    assert response["Location"] == reverse(
        "pages:call-detail", args=[world.agent_call.pk]
    )
    text = Text.objects.get()
    assert (
        text.direction,
        text.purpose,
        text.sent_by,
        text.to_number,
        text.from_number,
        text.lead_phone,
        text.body,
        text.status,
    ) == (
        Direction.OUT,
        Purpose.REPLY,
        world.agent,
        world.agent_call.phone,
        SENDER,
        world.agent_call.phone,
        "Is 4 pm good for you?",
        TextStatus.SCHEDULED,
    )
    assert dispatched == [text.pk]
    body = page(client, world.agent_call)
    assert '<li class="success">Text sent.</li>' in body
    assert '<span class="who">Sent by Avery Lopez</span>' in body
    assert "Is 4 pm good for you?" in body


def test_a_reply_with_htmx_returns_the_thread_card(
    world, signed_in, dispatched, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = signed_in(world.manager).post(
            reply_url(world.agent_call), {"body": "See you at 4."}, **HTMX
        )
    assert response.status_code == 200
    body = " ".join(response.content.decode().split())
    assert body.startswith('<section class="card" id="thread">')
    assert "<html" not in body
    assert (
        '<span class="who">Sent by Morgan Reyes</span> · '
        '<span class="badge scheduled">Scheduled</span> '
        '<pre class="text">See you at 4.</pre>'
    ) in body
    assert 'role="status">Text sent.</p>' in body
    assert "See you at 4.</textarea>" not in body  # the form is empty again
    assert dispatched == [Text.objects.get().pk]


def test_an_opted_out_lead_is_not_texted(
    world, signed_in, dispatched, django_capture_on_commit_callbacks
):
    OptOut.objects.create(
        account=world.north,
        phone=world.agent_call.phone,
        opted_out_at=timezone.now(),
        message="STOP",
    )
    client = signed_in(world.agent)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reply_url(world.agent_call), {"body": "Hi"}, follow=True)
        partial = client.post(reply_url(world.agent_call), {"body": "Hi"}, **HTMX)
    refusal = "This lead opted out of texts (replied STOP)"
    assert response.redirect_chain == [
        (reverse("pages:call-detail", args=[world.agent_call.pk]), 302)
    ]
    assert refusal in response.content.decode()
    assert partial.status_code == 200
    assert f'<p class="error" id="id_body-error">{refusal}' in partial.content.decode()
    assert "Hi</textarea>" in partial.content.decode()  # kept to correct
    assert not Text.objects.exists()
    assert dispatched == []


def test_an_empty_reply_is_refused_inline(world, signed_in, dispatched):
    response = signed_in(world.agent).post(
        reply_url(world.agent_call), {"body": "   "}, **HTMX
    )
    assert "Write the text first." in response.content.decode()
    assert not Text.objects.exists()


def test_the_page_reads_a_long_thread_in_a_bounded_number_of_queries(
    world, signed_in, django_assert_max_num_queries
):
    client = signed_in(world.manager)
    thread(world)
    with django_assert_max_num_queries(QUERIES) as short:
        page(client, world.agent_call)
    start = world.agent_call.received_at
    for minute in range(20):
        CallFactory(
            account=world.north,
            phone=world.agent_call.phone,
            agent=world.other_agent,
            received_at=start + timedelta(minutes=minute),
        )
        text_in_thread(
            world.north,
            world.agent_call.phone,
            at=start + timedelta(minutes=minute),
            body=f"Text {minute}",
            sent_by=world.manager,
        )
    with django_assert_max_num_queries(len(short.captured_queries)):
        body = page(client, world.agent_call)
    assert "Text 19" in body


# The page, the thread and the reply form, whatever its length (with the call page's
# cards: the next follow-up step and a spoken revocation's suggestion, one query each).
QUERIES = 17
