"""A reply that reads like an opt-out without its words (CONTRACT.md "Texting"): texts
to the number pause at once, and a person on the call page's thread confirms it (one
confirmation text, the ``lead_opted_out`` event) or dismisses it (texting goes on).
The lead's texts come through Twilio's signed inbound webhook; decisions through the
page, as a browser (or htmx) posts them."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.pages.conftest import World, make_world
from tests.scoring.factories import CallFactory
from tests.texting.factories import SENDER, texting_on
from tests.texting.test_twilio_texts import callback, inbound_params
from texting import compose, services
from texting.models import Direction, OptOut, Purpose, Text, TextStatus
from webhooks.endpoints import webhook_endpoint_create
from webhooks.models import WebhookEvent

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("twilio_settings")]

HTMX = {"HTTP_HX_REQUEST": "true"}
POSSIBLE = [
    "take me off your list",
    "Please don't text me anymore",
    "Please stop texting me, thanks",
    "Remove my number from your system",
    "How do I unsubscribe from these?",
    "I want to opt-out of this",
    "no me escriban más por favor",
    "Sácame de la lista",
]
NOT_AN_OPT_OUT = [
    "I'll stop by Saturday",
    "End of day works",
    "Can you text me the price?",
    "Don't call me at work, text me",
]


@pytest.fixture
def world(db) -> World:
    world = make_world()
    texting_on(world.north)
    world.agent.phone_number = "+13035551001"
    world.agent.save(update_fields=["phone_number"])
    return world


@pytest.fixture
def lead_texts(client, world, dispatched, django_capture_on_commit_callbacks):
    """The lead of the agent's call texts the account, as Twilio posts it."""
    sent = iter(range(1, 100))

    def send(body: str) -> Text:
        params = inbound_params(
            body,
            sid=f"SM{next(sent):032x}",
            From=world.agent_call.phone,
            To=SENDER,
        )
        with django_capture_on_commit_callbacks(execute=True):
            response = callback(client, "/texts/twilio/inbound", params)
        assert response.status_code == 200
        return Text.objects.filter(direction=Direction.IN).latest("pk")

    return send


def to_lead(world: World, purpose: str | None = None) -> list[Text]:
    texts = Text.objects.filter(
        account=world.north,
        to_number=world.agent_call.phone,
        direction=Direction.OUT,
    )
    return list(texts.filter(purpose=purpose) if purpose else texts)


def decide(client, world: World, decision: str, **headers):
    url = reverse("pages:call-possible-opt-out", args=[world.agent_call.pk, decision])
    return client.post(url, **headers)


def page(client, world: World) -> str:
    response = client.get(reverse("pages:call-detail", args=[world.agent_call.pk]))
    assert response.status_code == 200
    return " ".join(response.content.decode().split())


@pytest.mark.parametrize("body", POSSIBLE)
def test_a_reply_that_reads_like_an_opt_out_pauses_texts_and_tells_the_team(
    world, lead_texts, body
):
    lead_texts(body)

    pause = OptOut.objects.get(account=world.north, phone=world.agent_call.phone)
    assert (pause.confirmed, pause.opted_in_at, pause.message) == (False, None, body)
    assert to_lead(world) == []  # no confirmation: nobody decided yet
    (note,) = Text.objects.filter(purpose=Purpose.FORWARD)
    assert note.to_number == world.agent.phone_number
    assert body in note.body
    assert "possible opt-out" in note.body


@pytest.mark.parametrize("body", NOT_AN_OPT_OUT)
def test_a_message_that_merely_holds_such_a_word_changes_nothing(
    world, lead_texts, body
):
    assert not compose.reads_like_opt_out(body)
    lead_texts(body)

    assert not OptOut.objects.exists()


def test_while_paused_nothing_goes_to_the_lead(world, lead_texts, client):
    waiting = Text.objects.create(
        account=world.north,
        lead_phone=world.agent_call.phone,
        call=world.agent_call,
        direction=Direction.OUT,
        purpose=Purpose.NOT_REACHED,
        to_number=world.agent_call.phone,
        body="Sorry we missed you.",
        status=TextStatus.SCHEDULED,
        due_at=timezone.now() - timedelta(seconds=1),
    )
    lead_texts("take me off your list")

    assert services.text_send(text_id=waiting.pk) == "canceled"
    waiting.refresh_from_db()
    assert waiting.status == TextStatus.CANCELED
    assert "paused (a possible opt-out)" in waiting.error
    client.force_login(world.agent)
    reply = client.post(
        reverse("pages:call-text-reply", args=[world.agent_call.pk]),
        {"body": "Sorry to bother you"},
        **HTMX,
    )
    assert "Texts to this lead are paused" in reply.content.decode()
    assert to_lead(world) == [waiting]  # the reply was not stored


def test_the_thread_shows_the_reply_and_the_decision(world, lead_texts, client):
    lead_texts("take me off your list")

    client.force_login(world.agent)
    body = page(client, world)
    assert "Possible opt-out: the lead wrote “take me off your list”" in body
    for decision in ("confirm", "dismiss"):
        url = reverse(
            "pages:call-possible-opt-out", args=[world.agent_call.pk, decision]
        )
        assert f'action="{url}"' in body
    client.force_login(world.scorer)  # sees the call, may not decide
    body = page(client, world)
    assert "Possible opt-out" in body
    assert "Confirm opt-out" not in body


def test_confirming_stops_texting_with_one_confirmation_and_the_event(
    world, lead_texts, client, dispatched, django_capture_on_commit_callbacks, settings
):
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]  # nothing is delivered here
    webhook_endpoint_create(
        organization=world.north.organization, url="https://127.0.0.1:9/hook"
    )
    lead = lead_texts("Please don't text me anymore")
    client.force_login(world.agent)

    with django_capture_on_commit_callbacks(execute=True):
        response = decide(client, world, "confirm", **HTMX)

    assert response.status_code == 200
    assert "Opt-out confirmed" in response.content.decode()
    opt_out = OptOut.objects.get()
    assert (opt_out.confirmed, opt_out.decided_by, opt_out.text) == (
        True,
        world.agent,
        lead,
    )
    (confirmation,) = to_lead(world)
    assert confirmation.purpose == Purpose.OPT_OUT
    assert confirmation.body == compose.render(
        compose.OPT_OUT_CONFIRMATION, dealer=world.north.name
    )
    assert confirmation.pk in dispatched
    event = WebhookEvent.objects.get(type="lead_opted_out")
    assert json.loads(event.body)["opt_out"]["message"] == lead.body
    # Decided once: a second confirmation changes nothing and says why.
    again = decide(client, world, "confirm", **HTMX)
    assert "Nothing to decide" in again.content.decode()
    assert len(to_lead(world)) == 1


def test_dismissing_lets_texts_go_on_and_sends_nothing(world, lead_texts, client):
    lead_texts("take me off your list")
    client.force_login(world.manager)

    response = decide(client, world, "dismiss")

    assert response.status_code == 302
    opt_out = OptOut.objects.get()
    assert opt_out.opted_in_at is not None
    assert (opt_out.confirmed, opt_out.decided_by) == (False, world.manager)
    assert opt_out.state == "dismissed"
    assert to_lead(world) == []
    reply = client.post(
        reverse("pages:call-text-reply", args=[world.agent_call.pk]),
        {"body": "Noted, thanks!"},
    )
    assert reply.status_code == 302
    assert [t.body for t in to_lead(world)] == ["Noted, thanks!"]


def test_the_leads_own_stop_while_paused_confirms_it_once(world, lead_texts):
    lead_texts("take me off your list")
    lead_texts("STOP")

    opt_out = OptOut.objects.get()
    assert (opt_out.confirmed, opt_out.decided_by) == (True, None)
    assert [t.purpose for t in to_lead(world)] == [Purpose.OPT_OUT]
    lead_texts("stop")  # already out: nothing more
    assert len(to_lead(world)) == 1


@pytest.mark.parametrize(
    ("role", "status"), [("scorer", 403), ("foreign_manager", 404)]
)
def test_only_those_who_may_reply_decide(world, lead_texts, client, role, status):
    lead_texts("take me off your list")
    client.force_login(world.users()[role])

    assert decide(client, world, "confirm").status_code == status
    assert decide(client, world, "dismiss").status_code == status
    assert OptOut.objects.get().state == "possible opt-out, paused"


def test_an_unknown_decision_is_not_found(world, lead_texts, client):
    lead_texts("take me off your list")
    client.force_login(world.agent)

    assert decide(client, world, "maybe").status_code == 404
    assert OptOut.objects.get().state == "possible opt-out, paused"


def test_a_pause_holds_for_every_account_texting_from_the_number(
    world, lead_texts, client
):
    """CONTRACT.md "Texting": what the lead says to a number holds for every account of
    the organization texting from it; decided from either account's call page."""
    texting_on(world.south)  # the same sending number, the same organization
    south_call = CallFactory(account=world.south, phone=world.agent_call.phone)
    lead_texts("take me off your list")

    client.force_login(world.global_manager)
    reply = client.post(
        reverse("pages:call-text-reply", args=[south_call.pk]),
        {"body": "Hello from South"},
        **HTMX,
    )
    assert "Texts to this lead are paused" in reply.content.decode()
    url = reverse("pages:call-possible-opt-out", args=[south_call.pk, "confirm"])
    assert client.post(url).status_code == 302

    rows = OptOut.objects.filter(phone=world.agent_call.phone)
    assert {(row.account, row.state) for row in rows} == {
        (world.north, "opted out"),
        (world.south, "opted out"),
    }
    # One confirmation, from the account whose thread the reply joined (the newest call's).
    (confirmation,) = Text.objects.filter(purpose=Purpose.OPT_OUT)
    assert (confirmation.account, confirmation.to_number) == (
        world.south,
        world.agent_call.phone,
    )
