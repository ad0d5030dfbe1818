"""An agent coming on duty takes a waiting call at once: added or changed through the User
API or the admin, an account's hours opened in the admin, or a schedule opening on the
minute. The call is handed over in the transaction that made the change and dispatched on
its commit; the sweep remains the fallback."""

from datetime import time, timedelta

import pytest
from django.db import OperationalError
from django.db.models import F
from django.urls import reverse
from django.utils import timezone

from accounts.models import AccountScheduleDay
from accounts.schedules import WEEKDAYS
from calls import services
from calls.models import Call, CallAttempt, CallStatus, Leg
from calls.pipeline import waiting
from tests.accounts.factories import AccountFactory
from tests.admin_pages import form_data, sign_in_support, typed
from tests.calls.test_hand_over import open_leg, waiting_call
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

PHOENIX = timezone.get_fixed_timezone(-420)  # America/Phoenix keeps no daylight time
ALWAYS_OPEN = {
    "active": True,
    **{
        day: {"active": True, "startTime": "00:00", "endTime": "23:59"}
        for day in WEEKDAYS
    },
}


@pytest.fixture
def sent(monkeypatch):
    """(call id, eta) of each setup handed to the broker, in order."""
    from calls.tasks import call_setup_task

    dispatched: list[tuple[int, object]] = []
    monkeypatch.setattr(
        call_setup_task,
        "apply_async",
        lambda kwargs, eta=None, **options: dispatched.append((kwargs["call_id"], eta)),
    )
    return dispatched


def later_window():
    """A half hour starting two hours from now, Phoenix time: closed now."""
    start = (timezone.now().astimezone(PHOENIX).hour + 2) % 24
    return time(start), time(start, 30)


def waiting_for_the_opening(account, django_capture_on_commit_callbacks):
    """A call set up while nobody was on duty: it waits for the next opening."""
    call = Call.objects.create(
        account=account, phone="+13035550123", received_at=timezone.now()
    )
    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=call.pk)
    call.refresh_from_db()
    assert call.status == CallStatus.QUEUED
    assert call.next_attempt_at is not None
    assert call.next_attempt_at > timezone.now()
    return call


def test_a_call_waiting_for_the_opening_is_marked_as_waiting_for_an_agent(
    sent, django_capture_on_commit_callbacks
):
    account = AccountFactory(timezone="America/Phoenix")
    start, end = later_window()
    agent(account, phone="+13035550140", schedule=(str(start), str(end)))

    call = waiting_for_the_opening(account, django_capture_on_commit_callbacks)

    assert call.waiting_since is not None
    assert call.next_attempt_at.astimezone(PHOENIX).time() == start


def test_an_agent_added_through_the_user_api_takes_the_oldest_waiting_call_at_once(
    tenant, sent, django_capture_on_commit_callbacks
):
    busy = agent(tenant.account, phone="+13035550140")
    open_leg(busy, tenant.account)
    now = timezone.now()
    newer = waiting_call(tenant.account, now - timedelta(seconds=5))
    oldest = waiting_call(tenant.account, now - timedelta(seconds=30))

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().post(
            "/api/users",
            {
                "organizationId": tenant.organization.pk,
                "firstName": "Nia",
                "lastName": "Lopez",
                "emailAddress": "nia@example.com",
                "accountIds": [tenant.account.pk],
                "phoneNumber": "+13035550141",
                "schedule": ALWAYS_OPEN,
            },
            format="json",
        )

    assert response.status_code == 201
    assert [call_id for call_id, _ in sent] == [oldest.pk]
    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=oldest.pk)
    newer.refresh_from_db()
    offered = CallAttempt.objects.get(call=oldest, leg=Leg.AGENT).agent
    assert offered is not None
    assert offered.email == "nia@example.com"
    assert newer.status == CallStatus.QUEUED


def test_an_agent_whose_hours_open_through_the_user_api_takes_the_call_waiting_for_them(
    tenant, sent, django_capture_on_commit_callbacks
):
    start, end = later_window()
    tenant.account.timezone = "America/Phoenix"
    tenant.account.save(update_fields=["timezone"])
    taker = agent(tenant.account, phone="+13035550140", schedule=(str(start), str(end)))
    call = waiting_for_the_opening(tenant.account, django_capture_on_commit_callbacks)
    assert sent == []  # the opening is two hours away: the sweep hands it over then

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{taker.pk}", {"schedule": ALWAYS_OPEN}, format="json"
        )

    assert response.status_code == 200
    assert [call_id for call_id, _ in sent] == [call.pk]
    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=call.pk)  # before its opening: taken early
    call.refresh_from_db()
    assert call.status == CallStatus.DIALING
    assert call.waiting_since is None
    assert CallAttempt.objects.get(call=call, leg=Leg.AGENT).agent == taker


def test_a_busy_agent_changed_through_the_user_api_is_handed_nothing(
    tenant, sent, django_capture_on_commit_callbacks
):
    busy = agent(tenant.account, phone="+13035550140")
    open_leg(busy, tenant.account)
    waiting_call(tenant.account, timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{busy.pk}", {"firstName": "Busy"}, format="json"
        )

    assert response.status_code == 200
    assert sent == []


def test_an_agent_activated_in_the_admin_takes_a_waiting_call(
    client, sent, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    account = AccountFactory()
    busy = agent(account, phone="+13035550140")
    open_leg(busy, account)
    idle = agent(account, phone="+13035550141", is_active=False)
    call = waiting_call(account, timezone.now())
    url = reverse("admin:users_user_change", args=[idle.pk])
    data = form_data(client.get(url), "user_form")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, typed(data, {"is_active": "on"}))

    assert response.status_code == 302
    assert [call_id for call_id, _ in sent] == [call.pk]


def test_an_accounts_hours_opened_in_the_admin_hand_its_waiting_call_to_an_agent(
    client, sent, django_capture_on_commit_callbacks
):
    sign_in_support(client)
    account = AccountFactory(timezone="America/Phoenix", schedule=False)
    start, end = later_window()
    AccountScheduleDay.objects.bulk_create(
        AccountScheduleDay(account=account, weekday=d, start_time=start, end_time=end)
        for d in range(7)
    )
    taker = agent(account, phone="+13035550140", schedule=None)  # the account's hours
    call = waiting_for_the_opening(account, django_capture_on_commit_callbacks)
    url = reverse("admin:accounts_account_change", args=[account.pk])
    data = form_data(client.get(url), "account_form")
    opened = {}
    for n in range(7):
        opened[f"schedule_days-{n}-start_time"] = "00:00"
        opened[f"schedule_days-{n}-end_time"] = "23:59"

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, typed(data, opened))

    assert response.status_code == 302
    assert [call_id for call_id, _ in sent] == [call.pk]
    with django_capture_on_commit_callbacks(execute=True):
        services.call_setup(call_id=call.pk)
    assert CallAttempt.objects.get(call=call, leg=Leg.AGENT).agent == taker


def test_a_failing_hand_over_never_undoes_the_change_that_came_first(
    tenant, sent, monkeypatch, caplog, django_capture_on_commit_callbacks
):
    taker = agent(tenant.account, phone="+13035550140")
    waiting_call(tenant.account, timezone.now())
    tried: list[int] = []

    def broken(agent_id):
        tried.append(agent_id)
        raise OperationalError("the database went away mid-hand-over")

    monkeypatch.setattr(waiting, "hand_over_to_agent", broken)
    with django_capture_on_commit_callbacks(execute=True):
        response = tenant.client().put(
            f"/api/users/{taker.pk}", {"firstName": "Kept"}, format="json"
        )

    assert response.status_code == 200
    assert tried == [taker.pk]
    assert "call.hand_over_failed" in caplog.text
    taker.refresh_from_db()
    assert taker.first_name == "Kept"
    assert sent == []


def test_at_a_schedule_opening_free_agents_are_handed_the_calls_waiting_for_them(
    sent, django_capture_on_commit_callbacks
):
    account = AccountFactory()
    agent(account, phone="+13035550140")  # on duty now: its hours have just opened
    oldest = waiting_call(account, timezone.now() - timedelta(minutes=30))
    waiting_call(account, timezone.now())

    with django_capture_on_commit_callbacks(execute=True):
        handed = services.calls_hand_over()

    assert handed == [oldest.pk]
    assert [call_id for call_id, _ in sent] == [oldest.pk]


def test_the_hand_over_runs_on_every_minute_on_the_calls_queue(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["calls-hand-over-at-openings"]

    assert entry["task"] == "calls.tasks.calls_hand_over_task"
    assert entry["schedule"].minute == set(range(60))
    assert entry["schedule"].hour == set(range(24))
    assert settings.CELERY_TASK_ROUTES[entry["task"]] == {"queue": "calls"}


def test_the_sweep_hands_the_broker_a_call_due_soon_with_its_due_time(sent):
    account = AccountFactory()
    now = timezone.now()
    created = now - timedelta(minutes=1)
    soon = Call.objects.create(
        account=account,
        phone="+13035550123",
        received_at=created,
        next_attempt_at=now + timedelta(seconds=90),
    )
    later = Call.objects.create(
        account=account,
        phone="+13035550124",
        received_at=created,
        next_attempt_at=now + timedelta(minutes=5),
    )
    Call.objects.filter(pk__in=[soon.pk, later.pk]).update(created_at=created)

    counts = services.calls_sweep(now=now)

    assert sent == [(soon.pk, soon.next_attempt_at)]
    assert counts["queued"] == 1
    soon.refresh_from_db()
    assert soon.setup_dispatched_at == soon.next_attempt_at
    # The next sweep leaves it to the broker until well after it was due.
    services.calls_sweep(now=now + timedelta(seconds=100))
    assert len(sent) == 1


def test_a_call_held_for_its_opening_may_be_taken_early_but_one_handed_over_never_twice():
    from calls.routing import call_waiting_for

    account = AccountFactory()
    taker = agent(account, phone="+13035550140")
    at = timezone.now()
    held = waiting_call(account, at - timedelta(minutes=5))
    Call.objects.filter(pk=held.pk).update(setup_dispatched_at=F("next_attempt_at"))
    handed = waiting_call(account, at - timedelta(minutes=10))
    # Another agent's hand-over marked it a moment after this one read the clock.
    Call.objects.filter(pk=handed.pk).update(
        setup_dispatched_at=at + timedelta(milliseconds=1)
    )

    assert call_waiting_for(agent=taker, at=at) == held


@pytest.mark.parametrize(
    ("task", "queue"),
    [
        ("calls.tasks.call_setup_task", "calls"),
        ("calls.tasks.attempt_dial_task", "calls"),
        ("calls.tasks.calls_hand_over_task", "calls"),
        ("calls.tasks.simulator_event_task", "events"),
        ("calls.tasks.simulator_events_task", "events"),
        ("calls.tasks.calls_sweep_task", "default"),
        ("leads.tasks.leads_sweep_task", "default"),
    ],
)
def test_latency_critical_work_is_routed_apart_from_the_sweeps(task, queue):
    """Celery's own router (what apply_async uses): dials never wait behind slow work."""
    from config.celery import app

    assert app.amqp.router.route({}, task)["queue"].name == queue
