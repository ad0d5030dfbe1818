import re
from datetime import UTC, datetime, timedelta

import lxml.html
import pytest
from django.contrib.messages import get_messages
from django.urls import reverse
from django.utils import timezone

from calls.admin.dialing import RUNS_ON_DEFAULTS, RUNS_ON_ITS_OWN
from calls.models import (
    AttemptOutcome,
    Call,
    CallAttempt,
    CallOrigin,
    CallStatus,
    DialingSettings,
    Leg,
)
from calls.recordings import recording_link
from calls.services import dialing_settings
from leads.models import Lead
from leads.services import lead_receive
from scoring.models import Score, ScoreRevision
from scoring.services import coaching_save, score_save
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.admin_pages import form_data, sign_in_support, text_of, typed
from tests.leads.factories import VendorRegistrationFactory, adf, catch_all_rule
from tests.scoring.factories import in_role
from tests.users.factories import agent
from users.models import User

pytestmark = pytest.mark.django_db


def url(model: str, view: str, *args) -> str:
    return reverse(f"admin:calls_{model}_{view}", args=args)


def messages_of(response) -> list[str]:
    return [str(message) for message in get_messages(response.wsgi_request)]


def make_call(account, *, status=CallStatus.QUEUED, minutes_ago=5, **fields) -> Call:
    return Call.objects.create(
        account=account,
        status=status,
        received_at=fields.pop(
            "received_at", timezone.now() - timedelta(minutes=minutes_ago)
        ),
        phone=fields.pop("phone", "+13035550123"),
        first_name=fields.pop("first_name", "Maria"),
        last_name=fields.pop("last_name", "Lopez"),
        **fields,
    )


def answered_call(account, user) -> Call:
    """A finished call as the pipeline leaves it: an agent leg that pressed 1, the lead answered."""
    received = timezone.now() - timedelta(hours=1)
    call = make_call(
        account,
        status=CallStatus.ANSWER,
        agent=user,
        attempts=1,
        duration=95,
        response_time=14,
        received_at=received,
        email="maria@example.com",
        altid="P-123",
    )
    CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=user,
        number=user.phone_number,
        provider="simulator",
        provider_id="SIM-A1",
        dial_requested_at=received + timedelta(seconds=1),
        ringing_at=received + timedelta(seconds=2),
        answered_at=received + timedelta(seconds=4),
        ended_at=received + timedelta(seconds=110),
        outcome=AttemptOutcome.ACCEPTED,
        key_pressed="1",
        duration=106,
    )
    lead_leg = CallAttempt.objects.create(
        call=call,
        leg=Leg.LEAD,
        number=call.phone,
        provider="simulator",
        provider_id="SIM-L1",
        dial_requested_at=received + timedelta(seconds=9),
        ringing_at=received + timedelta(seconds=10),
        answered_at=received + timedelta(seconds=14),
        ended_at=received + timedelta(seconds=109),
        outcome=AttemptOutcome.ANSWERED,
        duration=95,
    )
    call.recording_url = recording_link(lead_leg.pk)
    call.save(update_fields=["recording_url"])
    return call


def build_calls(accounts: int) -> None:
    for n in range(accounts):
        account = AccountFactory()
        user = agent(account, phone=f"+1303555{2000 + n:04d}")
        DialingSettings.objects.create(account=account, retry_cadence=[0, 60])
        for _ in range(3):
            answered_call(account, user)
        make_call(account, origin=CallOrigin.CLICK_TO_CALL, requested_agent=user)
        make_call(account, status=CallStatus.NOAGENT)


@pytest.mark.parametrize(
    ("model", "max_queries"), [("call", 7), ("dialingsettings", 7)]
)
def test_changelist_loads_in_a_fixed_number_of_queries(
    admin_client, django_assert_max_num_queries, model, max_queries
):
    build_calls(5)

    with django_assert_max_num_queries(max_queries):
        response = admin_client.get(url(model, "changelist"))

    assert response.status_code == 200
    assert response.context["cl"].result_count >= 5


def test_call_changelist_filtered_by_account_offers_its_agents(
    admin_client, django_assert_max_num_queries
):
    build_calls(3)
    account = AccountFactory()
    first = agent(account, phone="+13035553001", first_name="Avery", last_name="Lopez")
    agent(account, phone="+13035553002", first_name="Jordan", last_name="Kim")
    answered_call(account, first)

    with django_assert_max_num_queries(10):
        response = admin_client.get(
            url("call", "changelist"), {"account__id__exact": account.pk}
        )
    by_agent = admin_client.get(
        url("call", "changelist"), {"account__id__exact": account.pk, "agent": first.pk}
    )

    page = response.content.decode()
    assert "Avery Lopez" in page
    assert "Jordan Kim" in page
    assert [call.agent for call in by_agent.context["cl"].result_list] == [first]


@pytest.mark.parametrize("number", ["²", "\u0661"])
def test_an_agent_in_other_digits_than_0_to_9_filters_nothing(admin_client, number):
    """``str.isdigit`` takes "²" (which ``int`` refuses: the changelist's ``?e=1``) and
    Arabic-Indic digits (which ``int`` reads as 1: another agent's calls). The filter
    applies once an account is chosen (it offers that account's agents)."""
    account = AccountFactory()
    first = agent(account, phone="+13035553001", first_name="Avery", last_name="Lopez")
    call = answered_call(account, first)
    query = {"account__id__exact": account.pk, "agent": number}

    response = admin_client.get(url("call", "changelist"), query)

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [call]


def test_an_account_in_other_digits_than_0_to_9_is_no_500(admin_client):
    """The agent filter offered that account's agents through ``int`` (a 500 on "²"); now
    the changelist answers as for any lookup it cannot use (a page, or its ``?e=1``)."""
    account = AccountFactory()
    answered_call(account, agent(account, phone="+13035553001"))

    response = admin_client.get(url("call", "changelist"), {"account__id__exact": "²"})

    assert response.status_code in (200, 302)
    if response.status_code == 302:
        assert response["Location"] == "?e=1"


def test_calls_are_found_by_phone_name_email_and_altid(admin_client):
    account = AccountFactory()
    wanted = make_call(
        account,
        phone="+13035550177",
        first_name="Zed",
        email="zed@example.com",
        altid="CC-42",
    )
    make_call(account)

    for q in ["+13035550177", "Zed", "zed@example.com", "CC-42"]:
        response = admin_client.get(url("call", "changelist"), {"q": q})
        assert list(response.context["cl"].result_list) == [wanted], q


def test_call_detail_shows_the_attempts_timeline_and_the_recording_player(admin_client):
    account = AccountFactory()
    user = agent(account, phone="+13035554001", first_name="Avery", last_name="Lopez")
    call = answered_call(account, user)

    response = admin_client.get(url("call", "change", call.pk))

    assert response.status_code == 200
    page = response.content.decode()
    rows = [form.original for form in response.context["inline_admin_formsets"][0]]
    assert [(a.leg, a.outcome) for a in rows] == [
        ("agent", "accepted"),
        ("lead", "answered"),
    ]
    assert "SIM-A1" in page
    assert "SIM-L1" in page
    assert "Agent pressed 1" in page
    assert "Lead answered" in page
    assert f'<audio controls preload="none" src="{call.recording_url}"></audio>' in page
    assert 'name="_save"' not in page


def test_call_detail_links_its_lead(
    admin_client, tenant, django_capture_on_commit_callbacks
):
    VendorRegistrationFactory(account=tenant.account, vendor_id="V-1000")
    catch_all_rule(tenant.account)
    with django_capture_on_commit_callbacks():
        lead_receive(credential=tenant.credential, raw_xml=adf(vendor_id="V-1000"))
    lead = Lead.objects.get()

    page = admin_client.get(url("call", "change", lead.call_id)).content.decode()

    assert (
        f'<a href="{reverse("admin:leads_lead_change", args=[lead.pk])}">Lead {lead.pk}</a>'
        in page
    )


def test_recording_that_is_not_a_web_address_is_never_played(admin_client):
    call = make_call(
        AccountFactory(), status=CallStatus.ANSWER, recording_url="javascript:alert(1)"
    )

    page = admin_client.get(url("call", "change", call.pk)).content.decode()

    assert "<audio" not in page
    assert 'href="javascript:' not in page


def test_calls_cannot_be_added_changed_or_deleted(admin_client):
    call = make_call(AccountFactory())

    assert admin_client.get(url("call", "add")).status_code == 403
    assert (
        admin_client.post(
            url("call", "change", call.pk), {"status": "ANSWER"}
        ).status_code
        == 403
    )
    assert admin_client.get(url("call", "delete", call.pk)).status_code == 403
    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED


def test_cancel_action_cancels_calls_not_connected_and_reports_the_rest(admin_client):
    account = AccountFactory()
    user = agent(account, phone="+13035555001")
    queued = make_call(account)
    ringing = make_call(account, status=CallStatus.DIALING, rounds=1)
    leg = CallAttempt.objects.create(
        call=ringing,
        leg=Leg.AGENT,
        agent=user,
        number=user.phone_number,
        provider="simulator",
    )
    connected = make_call(account, status=CallStatus.DIALING, agent=user, attempts=1)
    answered = answered_call(account, user)
    listed = admin_client.get(url("call", "changelist")).content.decode()

    response = admin_client.post(
        url("call", "changelist"),
        {
            "action": "cancel_calls",
            "_selected_action": [queued.pk, ringing.pk, connected.pk, answered.pk],
        },
    )

    assert response.status_code == 302
    statuses = dict(Call.objects.values_list("pk", "status"))
    assert statuses == {
        queued.pk: CallStatus.CANCEL,
        ringing.pk: CallStatus.CANCEL,
        connected.pk: CallStatus.DIALING,
        answered.pk: CallStatus.ANSWER,
    }
    leg.refresh_from_db()
    assert leg.outcome == AttemptOutcome.CANCELED
    assert leg.ended_at is not None
    assert '<option value="cancel_calls">Cancel queued calls</option>' in listed
    assert messages_of(response) == [
        "Cancelled 2 calls. 2 calls could not be cancelled: already connected to an agent, or ended."
    ]


# --- dialing settings


def settings_post(account, **fields) -> dict[str, str]:
    return {
        "account": str(account.pk),
        "ring_mode": "sequential",
        "agent_ring_seconds": "20",
        "press_one_required": "on",
        "lead_attempt_limit": "3",
        "retry_cadence": "0, 120, 600",
        "agent_rounds": "2",
        "agent_round_pause_seconds": "60",
        "no_agent_policy": "wait",
        **fields,
    }


def test_dialing_settings_add_page_shows_the_defaults(admin_client):
    response = admin_client.get(url("dialingsettings", "add"))

    assert response.status_code == 200
    assert 'value="0, 120, 600"' in response.content.decode()


@pytest.mark.parametrize(
    ("cadence", "saved"),
    [("0, 120, 600", [0, 120, 600]), ("[0, 60]", [0, 60]), ("30", [30])],
)
def test_dialing_settings_accept_a_cadence_up_to_the_attempt_limit(
    admin_client, cadence, saved
):
    account = AccountFactory()

    response = admin_client.post(
        url("dialingsettings", "add"), settings_post(account, retry_cadence=cadence)
    )

    assert response.status_code == 302
    assert DialingSettings.objects.get(account=account).retry_cadence == saved


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"retry_cadence": "0, -5"},
            "retry_cadence",
            "-5 is negative; waits are 0 seconds or more.",
        ),
        (
            {"retry_cadence": "0, 2m"},
            "retry_cadence",
            "'2m' is not a whole number of seconds. Write e.g. 0, 120, 600.",
        ),
        (
            {"retry_cadence": " , "},
            "retry_cadence",
            "Give at least one number of seconds, e.g. 0, 120, 600.",
        ),
        (
            {"retry_cadence": "0, 60, 120, 240", "lead_attempt_limit": "3"},
            "retry_cadence",
            "4 numbers for 3 attempts: the extra waits would never be used. Give at most 3, or raise the attempt limit.",
        ),
        (
            {"lead_attempt_limit": "0"},
            "lead_attempt_limit",
            "The lead is dialed at least once.",
        ),
    ],
)
def test_dialing_settings_refuse_a_bad_cadence(admin_client, fields, field, message):
    account = AccountFactory()

    response = admin_client.post(
        url("dialingsettings", "add"), settings_post(account, **fields)
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors[field] == [message]
    assert not DialingSettings.objects.exists()


def test_dialing_settings_change_page_keeps_the_account(admin_client):
    organization = OrganizationFactory()
    account, other = (
        AccountFactory(organization=organization),
        AccountFactory(organization=organization),
    )
    row = DialingSettings.objects.create(account=account, retry_cadence=[0, 300])

    page = admin_client.get(url("dialingsettings", "change", row.pk))
    response = admin_client.post(
        url("dialingsettings", "change", row.pk),
        settings_post(other, retry_cadence="0, 90", lead_attempt_limit="2"),
    )

    assert 'value="0, 300"' in page.content.decode()
    assert response.status_code == 302
    row.refresh_from_db()
    assert (row.account, row.retry_cadence, row.lead_attempt_limit) == (
        account,
        [0, 90],
        2,
    )


# --- dialing settings on the account's page


def account_url(account) -> str:
    return reverse("admin:accounts_account_change", args=[account.pk])


def settings_form(data) -> dict[str, str]:
    """The dialing settings form's fields as the page fills them."""
    prefix = "dialing_settings-0-"
    return {
        name.removeprefix(prefix): values[0]
        for name, values in data.items()
        if name.startswith(prefix) and name.removeprefix(prefix) != "account"
    }


def test_account_page_shows_the_default_dialing_settings_it_runs_on(client):
    sign_in_support(client)
    account = AccountFactory()

    page = client.get(account_url(account))

    assert page.status_code == 200
    assert RUNS_ON_DEFAULTS in text_of(page)
    assert settings_form(form_data(page, "account_form")) == {
        "id": "",
        "ring_mode": "sequential",
        "agent_ring_seconds": "20",
        "press_one_required": "on",
        "lead_attempt_limit": "3",
        "retry_cadence": "0, 120, 600",
        "agent_rounds": "2",
        "agent_round_pause_seconds": "60",
        "no_agent_policy": "wait",
    }
    defaults = dialing_settings(account)
    assert (defaults.agent_ring_seconds, defaults.retry_cadence) == (20, [0, 120, 600])


def test_saving_the_account_with_the_defaults_untouched_stores_no_dialing_settings(
    client,
):
    sign_in_support(client)
    account = AccountFactory(name="Demo Motors")
    data = typed(form_data(client.get(account_url(account)), "account_form"), {})
    data = typed(data, {"name": "Demo Motors North"})

    response = client.post(account_url(account), data)

    assert response.status_code == 302
    account.refresh_from_db()
    assert account.name == "Demo Motors North"
    assert not DialingSettings.objects.exists()
    assert RUNS_ON_DEFAULTS in text_of(client.get(account_url(account)))


def test_changing_a_default_on_the_account_page_gives_the_account_its_own_settings(
    client,
):
    sign_in_support(client)
    account = AccountFactory()
    data = typed(
        form_data(client.get(account_url(account)), "account_form"),
        {
            "dialing_settings-0-agent_ring_seconds": "30",
            "dialing_settings-0-retry_cadence": "0, 60",
            "dialing_settings-0-press_one_required": None,
        },
    )

    response = client.post(account_url(account), data)

    assert response.status_code == 302
    row = DialingSettings.objects.get()
    assert (
        row.account,
        row.agent_ring_seconds,
        row.retry_cadence,
        row.press_one_required,
        row.lead_attempt_limit,
    ) == (account, 30, [0, 60], False, 3)
    page = client.get(account_url(account))
    assert RUNS_ON_ITS_OWN in text_of(page)
    assert RUNS_ON_DEFAULTS not in text_of(page)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"retry_cadence": "0, 60, 120, 240", "lead_attempt_limit": "3"},
            "4 numbers for 3 attempts: the extra waits would never be used. Give at most 3, or raise the attempt limit.",
        ),
        ({"retry_cadence": "0, -5"}, "-5 is negative; waits are 0 seconds or more."),
        ({"lead_attempt_limit": "0"}, "The lead is dialed at least once."),
    ],
)
def test_account_page_refuses_bad_dialing_settings_and_changes_nothing(
    client, fields, message
):
    sign_in_support(client)
    account = AccountFactory(name="Demo Motors")
    data = typed(
        form_data(client.get(account_url(account)), "account_form"),
        {
            "name": "Renamed",
            **{f"dialing_settings-0-{k}": v for k, v in fields.items()},
        },
    )

    response = client.post(account_url(account), data)

    assert response.status_code == 200
    assert message in text_of(response)
    assert not DialingSettings.objects.exists()
    account.refresh_from_db()
    assert account.name == "Demo Motors"


def test_account_page_edits_the_accounts_own_settings_and_deletes_them_for_the_defaults(
    client,
):
    sign_in_support(client)
    account = AccountFactory()
    row = DialingSettings.objects.create(
        account=account, retry_cadence=[0, 300], agent_rounds=4
    )

    page = client.get(account_url(account))
    data = form_data(page, "account_form")
    assert settings_form(data) | {"id": ""} == {
        "id": "",
        "ring_mode": "sequential",
        "agent_ring_seconds": "20",
        "press_one_required": "on",
        "lead_attempt_limit": "3",
        "retry_cadence": "0, 300",
        "agent_rounds": "4",
        "agent_round_pause_seconds": "60",
        "no_agent_policy": "wait",
    }
    assert RUNS_ON_ITS_OWN in text_of(page)

    edited = client.post(
        account_url(account),
        typed(data, {"dialing_settings-0-ring_mode": "simultaneous"}),
    )
    row.refresh_from_db()
    assert (edited.status_code, row.ring_mode, row.agent_rounds) == (
        302,
        "simultaneous",
        4,
    )

    data = form_data(client.get(account_url(account)), "account_form")
    deleted = client.post(
        account_url(account), typed(data, {"dialing_settings-0-DELETE": "on"})
    )
    assert deleted.status_code == 302
    assert not DialingSettings.objects.exists()
    assert RUNS_ON_DEFAULTS in text_of(client.get(account_url(account)))


def test_dialing_settings_list_says_where_accounts_on_the_defaults_are(client):
    sign_in_support(client)
    AccountFactory()

    page = client.get(url("dialingsettings", "changelist"))

    assert "0 dialing settings" in text_of(page)
    assert (
        "Only accounts with dialing settings of their own are listed here; every other "
        "account dials with the defaults. Each account's page shows the dialing settings "
        "it runs on, defaults included, and changes them in place."
    ) in text_of(page)


# --- times: the account's, labelled with its zone


def fixed_call(account) -> Call:
    """A call received at 16:14:03 UTC on 22 November 2026 (09:14:03 in Denver), with one
    agent leg, 4 s after, that is still ringing."""
    received = datetime(2026, 11, 22, 16, 14, 3, tzinfo=UTC)
    call = make_call(
        account,
        status=CallStatus.NOAGENT,
        received_at=received,
        ended_at=received + timedelta(minutes=3),
        next_attempt_at=received + timedelta(minutes=10),
    )
    Call.objects.filter(pk=call.pk).update(created_at=received + timedelta(seconds=1))
    attempt = CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        number="+13035554001",
        provider="simulator",
        dial_requested_at=received + timedelta(seconds=5),
    )
    CallAttempt.objects.filter(pk=attempt.pk).update(
        created_at=received + timedelta(seconds=4)
    )
    return call


def test_call_times_read_in_the_accounts_timezone_labelled_with_it(client):
    # Support works from Chicago; the dealer, and so its calls' times, are in Denver.
    sign_in_support(client, tz="America/Chicago")
    call = fixed_call(AccountFactory(timezone="America/Denver"))

    listed = client.get(url("call", "changelist"))
    detail = client.get(url("call", "change", call.pk))

    cell = lxml.html.fromstring(listed.content.decode()).find_class("field-received")[0]
    assert cell.text_content().strip() == "2026-11-22 09:14:03 MST"
    fields = {
        name: readonly_field(detail, name)
        for name in ("received", "ended", "next_attempt", "created")
    }
    assert fields == {
        "received": "2026-11-22 09:14:03 MST",
        "ended": "2026-11-22 09:17:03 MST",
        "next_attempt": "2026-11-22 09:24:03 MST",
        "created": "2026-11-22 09:14:04 MST",
    }
    # The timeline gives the time of day (the date only when it is another day than the
    # lead's) and the seconds since the lead arrived; its heading names whose time it is.
    CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        number="+13035554001",
        provider="simulator",
        dial_requested_at=call.received_at + timedelta(days=1),
    )
    detail = client.get(url("call", "change", call.pk))
    timeline = lxml.html.fromstring(detail.content.decode()).get_element_by_id(
        "attempts_log-group"
    )
    assert [
        timeline.find_class(f"field-{name}")[0].text_content().strip()
        for name in ("created", "dial_requested", "ringing")
    ] == ["09:14:07 (+4 s)", "09:14:08 (+5 s)", "—"]
    assert (
        timeline.find_class("field-dial_requested")[1].text_content().strip()
        == "2026-11-23 09:14:03 (+86400 s)"
    )
    assert "times in the account's timezone" in timeline.text_content()


def test_call_times_follow_daylight_saving_time(client):
    sign_in_support(client, tz="UTC")
    call = make_call(
        AccountFactory(timezone="America/Denver"),
        received_at=datetime(2026, 7, 1, 15, 0, 0, tzinfo=UTC),
    )

    detail = client.get(url("call", "change", call.pk))

    assert readonly_field(detail, "received") == "2026-07-01 09:00:00 MDT"


def readonly_field(response, name: str) -> str:
    """The text of a read-only field of a change page's main form."""
    page = lxml.html.fromstring(response.content.decode())
    row = page.find_class(f"field-{name}")[0]
    return " ".join(row.find_class("readonly")[0].text_content().split())


# A moment as a page shows it: ours, labelled with its zone ("2026-11-22 09:14:03 MST"),
# Django's own format for a date and time ("Nov. 23, 2026, 1:14 a.m."), or "UTC" named.
MOMENT = re.compile(
    r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} [A-Z]{3,5}"
    r"|[A-Z][a-z]{2,3}\.? \d{1,2}, \d{4}, (?:\d{1,2}(?::\d{2})? [ap]\.m\.|midnight|noon)"
    r"|\bUTC\b"
)


def moments_shown(response) -> list[str]:
    return sorted(MOMENT.findall(text_of(response)))


def sign_in_superuser(client, *, tz: str) -> None:
    client.force_login(
        User.objects.create_superuser(username="root@example.com", timezone=tz)
    )


def test_every_time_on_a_call_page_reads_in_the_dealers_timezone(client):
    # Support works from Tokyo (the call arrived at 01:14 on the 23rd there, 16:14 UTC);
    # the dealer, and so every time of its call and its score, is in Denver.
    sign_in_superuser(client, tz="Asia/Tokyo")
    call = fixed_call(AccountFactory(timezone="America/Denver"))
    Call.objects.filter(pk=call.pk).update(status=CallStatus.ANSWER)
    score = score_save(
        call=call, scorer=in_role("Scorer", accounts=[call.account]), values={}
    )
    coaching_save(
        call=call, coach=in_role("Manager", accounts=[call.account]), notes="Sooner."
    )
    scored = datetime(2026, 11, 22, 17, 0, 0, tzinfo=UTC)
    Score.objects.filter(pk=score.pk).update(
        scored_at=scored, coaching_read_at=scored + timedelta(hours=1)
    )
    scoring, coaching = score.revisions.order_by("id")
    ScoreRevision.objects.filter(pk=scoring.pk).update(changed_at=scored)
    ScoreRevision.objects.filter(pk=coaching.pk).update(
        changed_at=scored + timedelta(minutes=30)
    )

    detail = client.get(url("call", "change", call.pk))

    assert moments_shown(detail) == [
        "2026-11-22 09:14:03 MST",  # received
        "2026-11-22 09:14:04 MST",  # created
        "2026-11-22 09:17:03 MST",  # ended
        "2026-11-22 09:24:03 MST",  # not dialed before
        "2026-11-22 10:00:00 MST",  # the score: scored at
        "2026-11-22 10:00:00 MST",  # its revisions: the score
        "2026-11-22 10:30:00 MST",  # the coaching
        "2026-11-22 11:00:00 MST",  # coaching read at
    ]
    # The timeline's times of day are Denver's too.
    assert "09:14:07 (+4 s)" in text_of(detail)
    for elsewhere in ("01:14:03", "16:14:03", "02:00:00", "17:00:00"):
        assert elsewhere not in text_of(detail)


def test_the_call_list_groups_one_dealers_calls_by_the_dealers_days(client):
    sign_in_superuser(client, tz="Asia/Tokyo")
    call = fixed_call(AccountFactory(timezone="America/Denver"))

    def days(response) -> str:
        nav = lxml.html.fromstring(response.content.decode()).find_class("toplinks")
        return " ".join(nav[0].text_content().split())

    everyone = client.get(url("call", "changelist"))
    one = client.get(url("call", "changelist"), {"account__id__exact": call.account_id})

    # Calls of many dealers: the days are the viewer's, and the list says so.
    assert moments_shown(everyone) == ["2026-11-22 09:14:03 MST"]
    assert days(everyone) == "Days in Asia/Tokyo: \u2039 2026 November 23"
    # One dealer's: its days, as its times read; the day's link finds the call.
    assert moments_shown(one) == ["2026-11-22 09:14:03 MST"]
    assert days(one) == "Days in America/Denver: \u2039 2026 November 22"
    day = client.get(
        url("call", "changelist"),
        {
            "account__id__exact": call.account_id,
            "received_at__year": 2026,
            "received_at__month": 11,
            "received_at__day": 22,
        },
    )
    assert [row.pk for row in day.context["cl"].result_list] == [call.pk]


def test_a_vendor_agents_call_shows_their_id_as_the_agent(admin_client):
    account = AccountFactory()
    by_id = make_call(
        account,
        status=CallStatus.NOAGENT,
        origin=CallOrigin.CLICK_TO_CALL,
        vendor_agent_id="crm-417",
        agent_number="+13035550142",
    )
    make_call(
        account,
        status=CallStatus.NOAGENT,
        origin=CallOrigin.CLICK_TO_CALL,
        agent_number="+13035550143",
        minutes_ago=1,
    )

    listed = admin_client.get(
        url("call", "changelist"), {"account__id__exact": account.pk}
    )
    detail = admin_client.get(url("call", "change", by_id.pk)).content.decode()

    shown = [
        cell.text_content().strip()
        for cell in lxml.html.fromstring(listed.content).xpath(
            "//table[@id='result_list']//td[contains(@class, 'field-agent_shown')]"
        )
    ]
    # Newest first: the call without a vendor id is shown by the number it rang.
    assert shown == ["+13035550143", "crm-417"]
    assert "crm-417" in detail
    assert "+13035550142" in detail
