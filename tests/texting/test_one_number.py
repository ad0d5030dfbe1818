"""One number, one organization (issue 36 part 4): a number an account calls or texts from
belongs to one organization. A conflict stored before the rule stops texting from the
number and keeps leads' texts to it out of every thread, for support; a settled number
routes a lead's text to its organization only, and a STOP to it stops every account of
that organization texting from it, never another organization's."""

from __future__ import annotations

import lxml.html
import pytest
from django.contrib.auth.models import Permission
from django.core.exceptions import ValidationError
from django.urls import reverse

from calls.models import CallStatus
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.admin_pages import sign_in_support
from tests.scoring.factories import CallFactory
from tests.texting.conftest import texting_on
from tests.texting.factories import text_in_thread
from tests.texting.test_twilio_texts import EMPTY_TWIML, callback, inbound_params
from tests.users.factories import agent
from texting.inbound import text_receive
from texting.models import (
    Direction,
    OptOut,
    Purpose,
    Text,
    TextingSettings,
    TextStatus,
    UnroutedText,
)
from texting.selectors import (
    number_conflicts,
    opted_out,
    thread_timeline,
)
from texting.services import (
    SHARED_NUMBER,
    text_automatic,
    text_reply_send,
    text_send,
)

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("twilio_settings")]

NUMBER = "+13035550188"  # the Twilio tests' number: their inbound webhook posts To it
LEAD = "+13035557777"  # and From this lead
OTHER_NUMBER = "+13035550166"
INBOUND = "/texts/twilio/inbound"


@pytest.fixture
def front_range(db):
    """Organization 1: an account texting from its caller ID ``NUMBER``."""
    organization = OrganizationFactory(name="Front Range Motors")
    account = AccountFactory(organization=organization, caller_id=NUMBER)
    texting_on(account, sender="")
    return account


@pytest.fixture
def plains(db):
    """Organization 2: an account whose sending number is ``NUMBER`` too, stored before
    the rule (the admin compared sending numbers only, never a caller ID)."""
    organization = OrganizationFactory(name="Plains Auto Group")
    account = AccountFactory(organization=organization, caller_id="+13085550100")
    texting_on(account, sender=NUMBER)
    return account


def stop_posted(client, sid: str = "SM" + "1" * 32):
    response = callback(client, INBOUND, inbound_params("STOP", sid=sid))
    assert (response.status_code, response.content) == (200, EMPTY_TWIML)


def test_the_measured_case_stop_to_a_shared_number_joins_no_thread_and_nothing_is_texted_from_it(
    client, front_range, plains, dispatched, django_capture_on_commit_callbacks
):
    front_call = CallFactory(
        account=front_range, phone=LEAD, status=CallStatus.NOANSWER
    )
    CallFactory(account=plains, phone=LEAD)
    # Plains texted the lead last: today's routing sent the STOP to its thread alone.
    text_in_thread(plains, LEAD, at=front_call.received_at, body="Still looking?")

    stop_posted(client)

    assert not Text.objects.filter(direction=Direction.IN).exists()
    assert not OptOut.objects.exists()
    (kept,) = UnroutedText.objects.all()
    assert (kept.to_number, kept.from_number, kept.body, kept.provider) == (
        NUMBER,
        LEAD,
        "STOP",
        "twilio",
    )
    assert NUMBER in kept.reason
    stop_posted(client)  # Twilio posts it again: kept once
    assert UnroutedText.objects.count() == 1

    # Front Range's automatic text to the lead is not sent from the shared number.
    with django_capture_on_commit_callbacks(execute=True):
        automatic = text_automatic(call=front_call, purpose=Purpose.NOT_REACHED)
    assert automatic is not None
    assert automatic.from_number == NUMBER
    assert text_send(text_id=automatic.pk) == "canceled"
    automatic.refresh_from_db()
    assert (automatic.status, automatic.error) == (TextStatus.CANCELED, SHARED_NUMBER)
    # Nor a reply written on the call page (the message names no other organization).
    with pytest.raises(ValidationError) as refused:
        text_reply_send(
            call=front_call, user=agent(front_range, phone="+13035551001"), body="Hi"
        )
    assert refused.value.messages == [SHARED_NUMBER]
    assert "Plains" not in SHARED_NUMBER

    # Support settles it: Plains texts from a number of its own. The lead's next STOP to
    # NUMBER is Front Range's, and stops Front Range only.
    TextingSettings.objects.filter(account=plains).update(sender=OTHER_NUMBER)
    stop_posted(client, sid="SM" + "2" * 32)

    (stop,) = Text.objects.filter(direction=Direction.IN)
    assert (stop.account, stop.body) == (front_range, "STOP")
    assert list(OptOut.objects.values_list("account", "phone")) == [
        (front_range.pk, LEAD)
    ]
    assert opted_out(account_id=front_range.pk, phone=LEAD)
    assert not opted_out(account_id=plains.pk, phone=LEAD)


def test_a_stop_stops_every_account_of_the_organization_texting_from_the_number(
    front_range, dispatched, django_capture_on_commit_callbacks
):
    organization = front_range.organization
    # A sister dealer texting from NUMBER through its sending number, another calling
    # from NUMBER but texting from its own, and another organization's dealer.
    sister = AccountFactory(organization=organization, caller_id="+13035550121")
    texting_on(sister, sender=NUMBER)
    apart = AccountFactory(organization=organization, caller_id=NUMBER)
    texting_on(apart, sender="+13035550122")
    stranger = AccountFactory(caller_id="+17205550100")
    texting_on(stranger, sender="")
    calls = {
        account: CallFactory(account=account, phone=LEAD)
        for account in (front_range, sister, apart, stranger)
    }
    text_in_thread(sister, LEAD, at=calls[sister].received_at, body="Hello")

    with django_capture_on_commit_callbacks(execute=True):
        stop = text_receive(
            to_number=NUMBER,
            from_number=LEAD,
            body="Stop texting me",
            provider="twilio",
            provider_id="SMstop",
        )

    assert stop is not None
    assert stop.account == sister  # it texted the lead last
    assert set(OptOut.objects.values_list("account", flat=True)) == {
        sister.pk,
        front_range.pk,
    }
    assert len(Text.objects.filter(purpose=Purpose.OPT_OUT)) == 1  # one confirmation
    with pytest.raises(ValidationError, match="opted out"):
        text_reply_send(
            call=calls[front_range],
            user=agent(front_range, phone="+13035551002"),
            body="Hi",
        )
    # A number the lead never said STOP to, and another organization: still texting.
    for account in (apart, stranger):
        assert not opted_out(account_id=account.pk, phone=LEAD)
        text_reply_send(
            call=calls[account],
            user=agent(account, phone=f"+1303555{1003 + account.pk % 1000:04d}"),
            body="Hi",
        )

    with django_capture_on_commit_callbacks(execute=True):
        text_receive(
            to_number=NUMBER,
            from_number=LEAD,
            body="START",
            provider="twilio",
            provider_id="SMstart",
        )

    assert not OptOut.objects.filter(opted_in_at__isnull=True).exists()


def test_an_account_that_starts_texting_from_the_number_later_is_held_by_the_stop(
    front_range, dispatched, django_capture_on_commit_callbacks
):
    call = CallFactory(account=front_range, phone=LEAD)
    with django_capture_on_commit_callbacks(execute=True):
        text_receive(
            to_number=NUMBER,
            from_number=LEAD,
            body="STOP",
            provider="twilio",
            provider_id="SMstop",
        )
    newcomer = AccountFactory(
        organization=front_range.organization, caller_id="+13035550123"
    )
    texting_on(newcomer, sender=NUMBER)

    assert opted_out(account_id=newcomer.pk, phone=LEAD)
    last = thread_timeline(call)[-1].text
    assert last is not None
    assert last.purpose == Purpose.OPT_OUT


def test_a_leads_text_goes_to_the_account_of_its_latest_call_then_the_first_account(
    front_range, dispatched
):
    sister = AccountFactory(
        organization=front_range.organization, caller_id="+13035550121"
    )
    texting_on(sister, sender=NUMBER)
    CallFactory(account=front_range, phone="+13035550101")
    CallFactory(account=sister, phone="+13035550101")  # the newer call

    called = text_receive(
        to_number=NUMBER,
        from_number="+13035550101",
        body="Who called?",
        provider="twilio",
        provider_id="SMa",
    )
    unknown = text_receive(
        to_number=NUMBER,
        from_number="+13035550102",
        body="Hello?",
        provider="twilio",
        provider_id="SMb",
    )

    assert called is not None
    assert called.account == sister
    assert unknown is not None
    assert unknown.account == front_range  # the lowest id


def test_two_tenants_never_see_each_others_thread(
    client, front_range, dispatched, django_capture_on_commit_callbacks
):
    stranger = AccountFactory(caller_id="+17205550100")
    texting_on(stranger, sender="")
    theirs = CallFactory(account=stranger, phone=LEAD)
    ours = CallFactory(account=front_range, phone=LEAD)
    # The stranger texted the lead last: before, a reply to any shared number went there.
    text_in_thread(stranger, LEAD, at=theirs.received_at, body="Stranger's text")

    callback(client, INBOUND, inbound_params("Is the truck still there?"))

    (received,) = Text.objects.filter(direction=Direction.IN)
    assert received.account == front_range
    assert [e.text.body for e in thread_timeline(ours) if e.text] == [
        "Is the truck still there?"
    ]
    assert [e.text.body for e in thread_timeline(theirs) if e.text] == [
        "Stranger's text"
    ]


def test_the_overview_lists_shared_numbers_and_the_texts_kept_for_support(
    client, front_range, plains, dispatched
):
    callback(client, INBOUND, inbound_params("Is this Front Range?"))
    support = sign_in_support(client)
    without_texts = client.get(reverse("admin:index")).content.decode()
    support.user_permissions.add(Permission.objects.get(codename="view_unroutedtext"))

    response = client.get(reverse("admin:index"))

    assert response.status_code == 200
    page = lxml.html.fromstring(response.content.decode())
    module = page.get_element_by_id("overview-shared-numbers")
    links = {a.text_content(): a.get("href") for a in module.iter("a")}
    assert links == {
        "Front Range Motors / " + front_range.name: reverse(
            "admin:accounts_account_change", args=[front_range.pk]
        ),
        "Plains Auto Group / " + plains.name: reverse(
            "admin:accounts_account_change", args=[plains.pk]
        ),
        "Leads' texts to such a number, in no thread": reverse(
            "admin:texting_unroutedtext_changelist"
        ),
    }
    assert NUMBER in module.text_content()
    # Support without the texts' permission sees the numbers, not the texts' row.
    assert "Plains Auto Group / " in without_texts
    assert "in no thread" not in without_texts
    assert "(caller ID)" in module.text_content()
    assert "(sending number)" in module.text_content()
    listed = client.get(reverse("admin:texting_unroutedtext_changelist"))
    assert listed.status_code == 200
    assert listed.context["cl"].result_count == 1


def test_number_conflicts_finds_every_number_of_several_organizations(
    front_range, plains
):
    sister = AccountFactory(organization=front_range.organization, caller_id=NUMBER)
    AccountFactory(caller_id="+17205550111")  # a number of one organization only

    (conflict,) = [c for c in number_conflicts() if c.number == NUMBER]

    assert [(use.account, use.uses) for use in conflict.used_by] == sorted(
        [
            (front_range, "caller ID"),
            (sister, "caller ID"),
            (plains, "sending number"),
        ],
        key=lambda pair: (pair[0].organization.name, pair[0].name, pair[0].pk),
    )
    assert "+17205550111" not in {c.number for c in number_conflicts()}
