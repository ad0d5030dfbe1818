"""When the morning report is stored: at or past 07:00 in each user's timezone, on the
days they work, once per user and local date, for managers and global managers only."""

from __future__ import annotations

from datetime import UTC, datetime, time

import pytest

from notify.models import Message, MessageKind, MessageStatus
from notify.report import reports_due
from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.scoring.factories import CallFactory, in_role
from users.models import User, UserScheduleDay

pytestmark = pytest.mark.django_db

# Thursday 5 March 2026 (no DST change near): New York is UTC-5, Los Angeles UTC-8.
THURSDAY = datetime(2026, 3, 5, tzinfo=UTC)


def at(day: int, hour: int, minute: int = 0) -> datetime:
    return THURSDAY.replace(day=day, hour=hour, minute=minute)


def _manager(name: str, account, tz: str, **kwargs) -> User:
    return in_role(
        "Manager",
        accounts=[account],
        email=f"{name}@example.com",
        timezone=tz,
        **kwargs,
    )


@pytest.fixture
def people():
    group = OrganizationFactory(name="Demo Group")
    north = AccountFactory(organization=group, name="North", timezone="America/Denver")
    south = AccountFactory(
        organization=group, name="South", timezone="America/New_York"
    )
    foreign = AccountFactory(name="Elsewhere")
    users = {
        "la": _manager("la", north, "America/Los_Angeles"),
        "ny": _manager("ny", south, "America/New_York"),
        "foreign": _manager("foreign", foreign, "America/New_York"),
        "gm": in_role(
            "Global Manager",
            organizations=[group],
            email="gm@example.com",
            timezone="America/New_York",
        ),
        # Works Monday, Tuesday, Wednesday and Friday (Thursday inactive) in Los Angeles.
        "part_time": _manager("part", north, "America/Los_Angeles"),
    }
    part_time = users["part_time"]
    part_time.schedule_active = True
    part_time.save(update_fields=["schedule_active"])
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(
            user=part_time,
            weekday=d,
            active=d != 3,
            start_time=time(9),
            end_time=time(17),
        )
        for d in range(5)
    )
    # Never reported: an agent, a manager without an address, an inactive manager.
    in_role("Agent", accounts=[north], email="agent@example.com", timezone="UTC")
    no_address = _manager("no-address", north, "America/New_York")
    User.objects.filter(pk=no_address.pk).update(email="")
    gone = _manager("gone", north, "America/New_York")
    gone.is_active = False
    gone.save(update_fields=["is_active"])
    # Leads of Wednesday 4 March, the day the Thursday reports tell of.
    CallFactory(account=north, received_at=datetime(2026, 3, 4, 18, tzinfo=UTC))
    CallFactory(account=south, received_at=datetime(2026, 3, 4, 15, tzinfo=UTC))
    CallFactory(account=foreign, received_at=datetime(2026, 3, 4, 16, tzinfo=UTC))
    return users


def _keys() -> set[str]:
    return set(
        Message.objects.filter(kind=MessageKind.REPORT).values_list("key", flat=True)
    )


def _key(user: User, day: str) -> str:
    return f"report:{user.pk}:{day}"


def test_each_manager_at_seven_in_their_own_timezone_once(
    people, django_assert_max_num_queries
):
    la, ny, gm = people["la"], people["ny"], people["gm"]
    # 06:30 in New York, 03:30 in Los Angeles: nothing yet.
    assert reports_due(now=at(5, 11, 30)) == 0
    assert _keys() == set()
    # 07:05 in New York, 04:05 in Los Angeles (the same instant): New York's only.
    assert reports_due(now=at(5, 12, 5)) == 3
    assert _keys() == {
        _key(ny, "2026-03-05"),
        _key(gm, "2026-03-05"),
        _key(people["foreign"], "2026-03-05"),
    }
    # A second run (the beat every five minutes) stores nothing more, and finds the users
    # already reported in its queries, not by building their reports again.
    with django_assert_max_num_queries(4):
        assert reports_due(now=at(5, 12, 10)) == 0
    # 07:05 in Los Angeles: its manager; the part-timer does not work on Thursdays.
    assert reports_due(now=at(5, 15, 5)) == 1
    assert _key(la, "2026-03-05") in _keys()
    assert not any(k.startswith(f"report:{people['part_time'].pk}:") for k in _keys())
    assert reports_due(now=at(5, 15, 10)) == 0
    assert len(_keys()) == 4


def test_the_message_is_yesterdays_report_to_the_user(people):
    reports_due(now=at(5, 12, 5))
    message = Message.objects.get(key=_key(people["ny"], "2026-03-05"))
    assert message.kind == MessageKind.REPORT
    assert message.status == MessageStatus.PENDING
    assert message.recipients == ["ny@example.com"]
    assert message.user == people["ny"]
    assert message.account is not None
    assert message.account.name == "South"
    assert message.subject.startswith("Morning report, Wed 4 Mar (South): 1 lead,")
    assert "Morning report for Wednesday 4 March 2026: South" in message.text
    assert message.html.startswith("<!DOCTYPE html>")
    assert [image["cid"] for image in message.images] == [
        "hours-2026-03-04.png",
        "responses-2026-03-04.png",
    ]
    global_report = Message.objects.get(key=_key(people["gm"], "2026-03-05"))
    assert global_report.account is None  # two accounts
    assert "2 accounts" in global_report.subject
    foreign = Message.objects.get(key=_key(people["foreign"], "2026-03-05"))
    assert "1 lead," in foreign.subject
    assert "North" not in foreign.text


def test_a_late_run_sends_the_days_report(people):
    # The beat was down all Thursday: at 23:30 in New York (20:30 in Los Angeles) it sends.
    assert reports_due(now=at(6, 4, 30)) == 4
    assert {k.rpartition(":")[2] for k in _keys()} == {"2026-03-05"}


def test_a_past_days_report_is_never_sent(people):
    # Down from Wednesday until Friday 08:00 in Los Angeles: Friday's reports only.
    assert reports_due(now=at(6, 16)) == 5  # the part-timer works Fridays
    assert {k.rpartition(":")[2] for k in _keys()} == {"2026-03-06"}
    assert _key(people["part_time"], "2026-03-06") in _keys()


def test_no_report_on_a_day_off(people):
    # Saturday 7 March, 08:00 in New York and Los Angeles: a user without a schedule of
    # their own works Monday to Friday; the part-timer's schedule has no Saturday.
    assert reports_due(now=at(7, 16)) == 0
    # A user whose own schedule has Saturday gets one.
    ny = people["ny"]
    ny.schedule_active = True
    ny.save(update_fields=["schedule_active"])
    UserScheduleDay.objects.create(
        user=ny, weekday=5, start_time=time(10), end_time=time(14)
    )
    assert reports_due(now=at(7, 16)) == 1
    assert _keys() == {_key(ny, "2026-03-07")}


def test_an_inactive_schedule_counts_as_monday_to_friday(people):
    part_time = people["part_time"]
    part_time.schedule_active = False
    part_time.save(update_fields=["schedule_active"])
    assert reports_due(now=at(5, 15, 5)) == 5  # Thursday: everyone, part-timer too
    assert _key(part_time, "2026-03-05") in _keys()


def test_a_report_that_fails_to_build_does_not_stop_the_others(people, monkeypatch):
    import notify.report

    real = notify.report.report_build

    def failing(*, user, day):
        if user == people["gm"]:
            raise RuntimeError("broken")
        return real(user=user, day=day)

    monkeypatch.setattr(notify.report, "report_build", failing)
    assert reports_due(now=at(5, 12, 5)) == 2
    assert _key(people["gm"], "2026-03-05") not in _keys()
    monkeypatch.setattr(notify.report, "report_build", real)
    assert reports_due(now=at(5, 12, 10)) == 1  # tried again by the next run
