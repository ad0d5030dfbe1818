"""Agent selection (calls/routing.py): who may be offered a call at an instant, in which
order, and when someone next may be. Every instant is an explicit aware datetime."""

from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calls.models import Call, CallAttempt, Leg
from calls.routing import agents_available, agents_on_duty, next_opening
from tests.accounts.factories import AccountFactory, TeamFactory
from tests.users.factories import agent
from users.models import UserScheduleDay

pytestmark = pytest.mark.django_db

LEAD = "+13035550123"
NY = "America/New_York"
LA = "America/Los_Angeles"
DENVER = "America/Denver"
MONDAY = (2025, 6, 2)  # a Monday far from any DST change
TUESDAY = (2025, 6, 3)


def local(
    tz: str,
    year: int,
    month: int,
    day: int,
    hour: int = 0,
    minute: int = 0,
    second: int = 0,
    microsecond: int = 0,
) -> datetime:
    return datetime(
        year, month, day, hour, minute, second, microsecond, tzinfo=ZoneInfo(tz)
    )


def make_call(account, at, **kwargs):
    return Call.objects.create(account=account, phone=LEAD, received_at=at, **kwargs)


def pks(users):
    return [user.pk for user in users]


def set_days(user, days, *, active=True):
    """Replace the user's own schedule: ``days`` maps weekday -> (start, end) or None (inactive)."""
    user.schedule_active = active
    user.save(update_fields=["schedule_active"])
    user.schedule_days.all().delete()
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(
            user=user,
            weekday=weekday,
            active=hours is not None,
            start_time=time.fromisoformat(hours[0]) if hours else time(9),
            end_time=time.fromisoformat(hours[1]) if hours else time(17),
        )
        for weekday, hours in days.items()
    )
    return user


def leg(user, *, created_at, ended_at=None, call=None, account=None):
    """An agent leg offered to ``user`` at ``created_at`` (auto_now_add is overridden)."""
    call = call or make_call(account or user.accounts.first(), created_at)
    attempt = CallAttempt.objects.create(
        call=call,
        leg=Leg.AGENT,
        agent=user,
        number=user.phone_number,
        provider="simulator",
        ended_at=ended_at,
    )
    CallAttempt.objects.filter(pk=attempt.pk).update(created_at=created_at)
    return attempt


@pytest.fixture
def account():
    """New York, weekdays 08:00-18:00 (the factory's default schedule)."""
    return AccountFactory(timezone=NY)


# --- own schedule, own timezone -------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (local(LA, *MONDAY, 16, 30), True),
        (local(NY, *MONDAY, 19, 30), True),  # the same instant, seen from New York
        (datetime(2025, 6, 2, 23, 30, tzinfo=UTC), True),  # and from UTC
        (local(LA, *MONDAY, 9, 0), True),  # start inclusive
        (local(LA, *MONDAY, 16, 59, 59), True),
        (local(LA, *MONDAY, 17, 0), False),  # end exclusive
        (local(NY, *MONDAY, 20, 0), False),  # 17:00 in LA
        (local(LA, *MONDAY, 8, 59), False),
        (local(LA, *MONDAY, 8, 59, 59), False),
        (local(NY, *MONDAY, 11, 59), False),  # 08:59 in LA, while the account is open
    ],
)
def test_an_agent_is_available_inside_their_own_schedule_in_their_own_timezone(
    account, at, expected
):
    west = agent(account, phone="+13035550140", schedule=("09:00", "17:00"), tz=LA)
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == ([west.pk] if expected else [])
    assert agents_on_duty(call=call, at=at) is expected


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        # 2025-03-09, a Sunday: Los Angeles moves from UTC-8 to UTC-7 at 02:00.
        (datetime(2025, 3, 9, 16, 0, tzinfo=UTC), True),  # 09:00 PDT
        (datetime(2025, 3, 9, 15, 59, tzinfo=UTC), False),  # 08:59 PDT (07:59 PST)
        (datetime(2025, 3, 9, 16, 30, tzinfo=UTC), True),
        (datetime(2025, 3, 9, 23, 59, tzinfo=UTC), True),  # 16:59 PDT
        (datetime(2025, 3, 10, 0, 0, tzinfo=UTC), False),  # 17:00 PDT (16:00 PST)
        (datetime(2025, 3, 8, 16, 30, tzinfo=UTC), False),  # 08:30 PST the day before
        # 2025-11-02, a Sunday: Los Angeles moves from UTC-7 back to UTC-8 at 02:00.
        (datetime(2025, 11, 2, 16, 30, tzinfo=UTC), False),  # 08:30 PST
        (datetime(2025, 11, 2, 17, 0, tzinfo=UTC), True),  # 09:00 PST
        (datetime(2025, 11, 3, 0, 30, tzinfo=UTC), True),  # 16:30 PST
        (datetime(2025, 11, 3, 1, 0, tzinfo=UTC), False),  # 17:00 PST
        (datetime(2025, 11, 1, 16, 30, tzinfo=UTC), True),  # 09:30 PDT the day before
    ],
)
def test_schedules_follow_daylight_saving_changes(account, at, expected):
    west = agent(account, phone="+13035550140", schedule=("09:00", "17:00"), tz=LA)
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == ([west.pk] if expected else [])


def test_agents_in_different_timezones_are_each_read_in_their_own(account):
    west = agent(account, phone="+13035550140", schedule=("09:00", "17:00"), tz=LA)
    east = agent(account, phone="+13035550141", schedule=("09:00", "17:00"), tz=NY)
    india = agent(
        account, phone="+13035550142", schedule=("09:00", "17:00"), tz="Asia/Kolkata"
    )
    call = make_call(account, local(NY, *MONDAY, 12))

    # 12:00 New York = 09:00 Los Angeles = 21:30 Kolkata
    assert pks(agents_available(call=call, at=local(NY, *MONDAY, 12))) == [
        west.pk,
        east.pk,
    ]
    # 23:40 New York Monday = 09:10 Kolkata Tuesday
    assert pks(agents_available(call=call, at=local(NY, *MONDAY, 23, 40))) == [india.pk]


# --- midnight ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (local(LA, *MONDAY, 23, 59, 30), True),  # a 23:59 end runs until midnight
        (local(LA, *MONDAY, 23, 59, 59, 999999), True),
        (local(NY, *TUESDAY, 2, 59, 30), True),  # the same instant, a day later in NY
        (local(LA, *MONDAY, 20, 0), True),
        (local(LA, *MONDAY, 19, 59), False),
        (local(LA, *TUESDAY, 0, 0), False),  # Monday's day does not cover Tuesday
        (local(LA, *TUESDAY, 0, 0, 30), False),
        (local(NY, *TUESDAY, 3, 0, 30), False),
    ],
)
def test_a_day_ending_23_59_runs_until_midnight_and_no_further(account, at, expected):
    night = set_days(
        agent(account, phone="+13035550140", schedule=None, tz=LA),
        {0: ("20:00", "23:59")},
    )
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == ([night.pk] if expected else [])


def test_an_active_monday_does_not_carry_into_an_inactive_tuesday(account):
    allday = set_days(
        agent(account, phone="+13035550140", schedule=None, tz=LA),
        {0: ("00:00", "23:59"), 1: None, 2: ("00:00", "23:59")},
    )
    call = make_call(account, local(LA, *MONDAY, 23, 59))

    assert pks(agents_available(call=call, at=local(LA, *MONDAY, 23, 59, 59))) == [
        allday.pk
    ]
    assert agents_available(call=call, at=local(LA, *TUESDAY, 0, 10)) == []
    assert agents_available(call=call, at=local(LA, *TUESDAY, 12)) == []
    assert agents_on_duty(call=call, at=local(LA, *TUESDAY, 0, 10)) is False
    # Wednesday 00:00 in Los Angeles is Wednesday 03:00 in New York
    assert pks(agents_available(call=call, at=local(NY, 2025, 6, 4, 3, 0))) == [
        allday.pk
    ]


# --- the account's schedule when the agent has none --------------------------------------------


@pytest.mark.parametrize(
    ("at", "expected"),
    [
        (local(NY, *MONDAY, 8, 0), True),  # 05:00 in the agent's Los Angeles
        (local(NY, *MONDAY, 17, 59), True),
        (local(LA, *MONDAY, 14, 59), True),  # 17:59 in New York
        (local(NY, *MONDAY, 7, 59), False),
        (local(NY, *MONDAY, 18, 0), False),
        (local(LA, *MONDAY, 15, 0), False),  # 18:00 in New York
        (
            local(NY, 2025, 6, 7, 12),
            False,
        ),  # Saturday: inactive in the account schedule
    ],
)
def test_an_agent_without_a_schedule_follows_the_accounts_in_its_timezone(
    account, at, expected
):
    plain = agent(account, phone="+13035550140", schedule=None, tz=LA)
    assert plain.schedule_active is None
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == ([plain.pk] if expected else [])
    assert agents_on_duty(call=call, at=at) is expected


def test_an_agent_with_an_inactive_schedule_follows_the_accounts(account):
    off = agent(account, phone="+13035550140", schedule=("00:00", "23:59"), tz=LA)
    off.schedule_active = False
    off.save(update_fields=["schedule_active"])
    call = make_call(account, local(NY, *MONDAY, 9))

    assert pks(agents_available(call=call, at=local(NY, *MONDAY, 9))) == [off.pk]
    # Their own (inactive) days would say yes; the account's say no.
    assert agents_available(call=call, at=local(NY, *MONDAY, 19)) == []
    assert agents_available(call=call, at=local(NY, 2025, 6, 8, 12)) == []


def test_an_inactive_account_schedule_leaves_only_agents_with_their_own(account):
    account.schedule_active = False
    account.save(update_fields=["schedule_active"])
    agent(account, phone="+13035550140", schedule=None)
    inactive = agent(account, phone="+13035550141", schedule=("00:00", "23:59"))
    inactive.schedule_active = False
    inactive.save(update_fields=["schedule_active"])
    own = agent(account, phone="+13035550142", schedule=("08:00", "18:00"), tz=NY)
    at = local(NY, *MONDAY, 9)
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [own.pk]
    own.delete()
    assert agents_available(call=call, at=at) == []
    assert agents_on_duty(call=call, at=at) is False
    assert next_opening(call=call, after=at) is None


# --- who is a candidate -----------------------------------------------------------------------


def test_only_active_agents_of_the_calls_account_with_a_phone(account):
    at = local(NY, *MONDAY, 10)
    kept = agent(account, phone="+13035550140")
    agent(account, phone="+13035550141", is_active=False)
    agent(account, phone="")
    agent(AccountFactory(organization=account.organization), phone="+13035550142")
    agent(AccountFactory(), phone="+13035550143")
    both = agent(account, phone="+13035550144")
    both.accounts.add(AccountFactory(organization=account.organization))
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [kept.pk, both.pk]


def test_a_call_with_a_team_goes_to_that_teams_agents_only(account):
    sales, service = (
        TeamFactory(account=account, name="Sales"),
        TeamFactory(account=account, name="Service"),
    )
    at = local(NY, *MONDAY, 10)
    seller = agent(account, phone="+13035550140", teams=[sales])
    agent(account, phone="+13035550141", teams=[service])
    agent(account, phone="+13035550142")  # no team
    versatile = agent(account, phone="+13035550143", teams=[sales, service])

    team_call = make_call(account, at, team=sales)
    assert pks(agents_available(call=team_call, at=at)) == [seller.pk, versatile.pk]

    open_call = make_call(account, at)
    assert len(agents_available(call=open_call, at=at)) == 4


def test_a_requested_agent_is_the_only_candidate(account):
    sales = TeamFactory(account=account, name="Sales")
    at = local(NY, *MONDAY, 10)
    agent(account, phone="+13035550140", teams=[sales])
    wanted = agent(account, phone="+13035550141")
    out_of_hours = agent(account, phone="+13035550142", schedule=("20:00", "21:00"))
    stranger = agent(AccountFactory(), phone="+13035550143")

    call = make_call(account, at, requested_agent=wanted, team=sales)
    assert pks(agents_available(call=call, at=at)) == [wanted.pk]

    call = make_call(account, at, requested_agent=out_of_hours)
    assert agents_available(call=call, at=at) == []
    assert agents_on_duty(call=call, at=at) is False
    assert next_opening(call=call, after=at) == local(NY, *MONDAY, 20)

    leg(wanted, created_at=at - timedelta(minutes=1))
    call = make_call(account, at, requested_agent=wanted)
    assert agents_available(call=call, at=at) == []
    assert agents_on_duty(call=call, at=at) is True

    call = make_call(account, at, requested_agent=stranger)
    assert agents_available(call=call, at=at) == []
    assert agents_on_duty(call=call, at=at) is False
    assert next_opening(call=call, after=at) is None


# --- busy agents ------------------------------------------------------------------------------


def test_an_agent_on_another_leg_is_busy_until_it_ends(account):
    at = local(NY, *MONDAY, 10)
    busy = agent(account, phone="+13035550140")
    other = AccountFactory(organization=account.organization)
    elsewhere = agent(account, phone="+13035550141")
    elsewhere.accounts.add(other)
    free = agent(account, phone="+13035550142")
    leg(busy, created_at=at - timedelta(minutes=2))
    leg(elsewhere, created_at=at - timedelta(hours=1), account=other)
    leg(free, created_at=at - timedelta(minutes=9), ended_at=at - timedelta(minutes=8))
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [free.pk]
    assert agents_on_duty(call=call, at=at) is True


def test_an_agent_is_busy_while_a_leg_is_open_however_old_and_free_once_it_ended(
    account,
):
    # No time window guesses at lost legs: the sweep asks the provider about a silent
    # leg and ends it once the provider says it ended (test_sweep_*).
    at = local(NY, *MONDAY, 15)
    on_a_long_call = agent(account, phone="+13035550140")
    done = agent(account, phone="+13035550141")
    leg(on_a_long_call, created_at=at - timedelta(hours=9))
    leg(done, created_at=at - timedelta(minutes=3), ended_at=at - timedelta(minutes=1))
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [done.pk]


def test_agents_on_duty_is_true_when_everyone_in_schedule_is_busy(account):
    at = local(NY, *MONDAY, 10)
    taken = agent(account, phone="+13035550140", schedule=("09:00", "17:00"))
    agent(account, phone="+13035550141", schedule=("20:00", "22:00"))
    leg(taken, created_at=at - timedelta(minutes=1))
    call = make_call(account, at)

    assert agents_available(call=call, at=at) == []
    assert agents_on_duty(call=call, at=at) is True
    assert agents_on_duty(call=call, at=local(NY, *MONDAY, 23, 30)) is False


# --- fairness ---------------------------------------------------------------------------------


def test_least_recently_offered_first_then_by_id(account):
    at = local(NY, *MONDAY, 12)
    a, b, c, d, e = (agent(account, phone=f"+1303555015{i}") for i in range(5))
    ended = {"ended_at": at - timedelta(minutes=1)}
    leg(a, created_at=at - timedelta(hours=3), **ended)
    leg(a, created_at=at - timedelta(minutes=10), **ended)  # a's last offer: 10 min ago
    leg(c, created_at=at - timedelta(hours=1), **ended)
    leg(e, created_at=at - timedelta(hours=1), **ended)  # ties with c: by id
    # b and d were never offered a call
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [b.pk, d.pk, c.pk, e.pk, a.pk]
    assert pks(agents_available(call=call, at=at, exclude={b.pk, c.pk})) == [
        d.pk,
        e.pk,
        a.pk,
    ]
    assert pks(
        agents_available(call=call, at=at, exclude=frozenset({a.pk, b.pk, d.pk}))
    ) == [c.pk, e.pk]
    assert agents_available(call=call, at=at, exclude=set(pks([a, b, c, d, e]))) == []


def test_offers_on_other_accounts_calls_count_for_fairness(account):
    at = local(NY, *MONDAY, 12)
    shared, other = (
        agent(account, phone="+13035550140"),
        agent(account, phone="+13035550141"),
    )
    elsewhere = AccountFactory(organization=account.organization)
    shared.accounts.add(elsewhere)
    leg(
        shared,
        created_at=at - timedelta(minutes=5),
        ended_at=at - timedelta(minutes=4),
        account=elsewhere,
    )
    leg(other, created_at=at - timedelta(hours=2), ended_at=at - timedelta(hours=2))
    call = make_call(account, at)

    assert pks(agents_available(call=call, at=at)) == [other.pk, shared.pk]


# --- next opening -----------------------------------------------------------------------------


def test_next_opening_is_the_next_start_of_the_agents_schedule(account):
    agent(account, phone="+13035550140", schedule=("09:00", "17:00"), tz=LA)
    call = make_call(account, local(LA, *MONDAY, 18))

    assert next_opening(call=call, after=local(LA, *MONDAY, 18)) == local(
        LA, *TUESDAY, 9
    )
    assert next_opening(call=call, after=local(LA, *MONDAY, 17)) == local(
        LA, *TUESDAY, 9
    )
    assert next_opening(call=call, after=local(LA, *MONDAY, 7)) == local(LA, *MONDAY, 9)
    # Seen from New York: 21:00 Monday there is 18:00 in Los Angeles
    assert next_opening(call=call, after=local(NY, *MONDAY, 21)) == local(
        NY, *TUESDAY, 12
    )


def test_next_opening_is_the_earliest_among_agents_across_timezones(account):
    agent(account, phone="+13035550140", schedule=("06:00", "14:00"), tz=LA)
    agent(account, phone="+13035550141", schedule=("07:00", "17:00"), tz=DENVER)
    agent(account, phone="+13035550142", schedule=("08:00", "17:00"), tz=NY)
    after = local(NY, *MONDAY, 20)  # 17:00 in Los Angeles, 18:00 in Denver
    call = make_call(account, after)

    # The earliest wall-clock start (06:00 Los Angeles) is 09:00 in New York, as is
    # 07:00 Denver; 08:00 New York comes first.
    opening = next_opening(call=call, after=after)
    assert opening == local(NY, *TUESDAY, 8)
    assert opening == local(LA, *TUESDAY, 5)


def test_next_opening_skips_inactive_days_and_looks_a_week_ahead(account):
    only_monday = set_days(
        agent(account, phone="+13035550140", schedule=None, tz=LA),
        {0: ("09:00", "17:00"), 1: None, 2: None},
    )
    call = make_call(account, local(LA, *MONDAY, 18), requested_agent=only_monday)

    assert next_opening(call=call, after=local(LA, *MONDAY, 18)) == local(
        LA, 2025, 6, 9, 9
    )
    assert next_opening(call=call, after=local(LA, *TUESDAY, 0, 10)) == local(
        LA, 2025, 6, 9, 9
    )


def test_next_opening_crosses_a_daylight_saving_change(account):
    agent(account, phone="+13035550140", schedule=("09:00", "17:00"), tz=LA)
    after = local(LA, 2025, 3, 8, 18)  # Saturday, PST
    call = make_call(account, after)

    opening = next_opening(call=call, after=after)
    assert opening == datetime(2025, 3, 9, 16, 0, tzinfo=UTC)  # 09:00 PDT
    assert agents_on_duty(call=call, at=opening) is True
    assert agents_on_duty(call=call, at=opening - timedelta(seconds=1)) is False


def test_next_opening_falls_back_on_the_account_schedule(account):
    agent(account, phone="+13035550140", schedule=None, tz=LA)
    inactive = agent(account, phone="+13035550141", schedule=("00:00", "23:59"), tz=LA)
    inactive.schedule_active = False
    inactive.save(update_fields=["schedule_active"])
    friday_evening = local(NY, 2025, 6, 6, 19)
    call = make_call(account, friday_evening)

    # Weekdays 08:00-18:00 New York: Monday 08:00 New York
    opening = next_opening(call=call, after=friday_evening)
    assert opening == local(NY, 2025, 6, 9, 8)
    assert agents_on_duty(call=call, at=opening) is True


def test_next_opening_is_none_when_nobody_has_an_active_schedule(account):
    account.schedule_active = False
    account.save(update_fields=["schedule_active"])
    agent(account, phone="+13035550140", schedule=None)
    set_days(
        agent(account, phone="+13035550141", schedule=None),
        dict.fromkeys(range(7)),
    )
    set_days(
        agent(account, phone="+13035550142", schedule=None),
        {0: ("09:00", "17:00")},
        active=False,
    )
    agent(account, phone="+13035550143", is_active=False)
    agent(account, phone="")
    after = local(NY, *MONDAY, 20)
    call = make_call(account, after)

    assert next_opening(call=call, after=after) is None
    assert next_opening(call=make_call(AccountFactory(), after), after=after) is None


def test_next_opening_only_counts_the_calls_candidates(account):
    sales = TeamFactory(account=account, name="Sales")
    agent(account, phone="+13035550140", schedule=("06:00", "17:00"), tz=NY)
    agent(
        account, phone="+13035550141", schedule=("10:00", "17:00"), tz=NY, teams=[sales]
    )
    after = local(NY, *MONDAY, 20)

    assert next_opening(call=make_call(account, after), after=after) == local(
        NY, *TUESDAY, 6
    )
    assert next_opening(
        call=make_call(account, after, team=sales), after=after
    ) == local(NY, *TUESDAY, 10)


# --- queries ----------------------------------------------------------------------------------


def _crowd(account, count, at):
    """``count`` available agents, mixing own schedules, the account's, teams and past offers."""
    team = TeamFactory(account=account)
    made = []
    for i in range(count):
        user = agent(
            account,
            phone=f"+1720555{1000 + i:04d}",
            schedule=("00:00", "23:59") if i % 2 else None,
            tz=(NY, LA, DENVER)[i % 3],
            teams=[team],
        )
        leg(
            user,
            created_at=at - timedelta(hours=i + 1),
            ended_at=at - timedelta(hours=i),
        )
        made.append(user)
    return team, made


def test_agents_available_runs_a_constant_number_of_queries(
    django_assert_max_num_queries,
):
    at = local(NY, *MONDAY, 12)
    baseline = AccountFactory(timezone=NY)
    team, _ = _crowd(baseline, 2, at)  # one on the account's schedule, one on their own
    fresh = Call.objects.get(pk=make_call(baseline, at, team=team).pk)
    with CaptureQueriesContext(connection) as one:
        assert len(agents_available(call=fresh, at=at)) == 2
    assert len(one.captured_queries) <= 4

    account = AccountFactory(timezone=NY)
    team, made = _crowd(account, 10, at)
    call = Call.objects.get(pk=make_call(account, at, team=team).pk)
    with django_assert_max_num_queries(len(one.captured_queries)):
        found = agents_available(call=call, at=at)
    assert pks(found) == pks(reversed(made))  # the oldest last offer first
    call = Call.objects.get(pk=call.pk)
    with django_assert_max_num_queries(len(one.captured_queries)):
        assert agents_on_duty(call=call, at=at) is True
