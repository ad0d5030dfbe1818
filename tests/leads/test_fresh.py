"""A lead's place in the fair order: fresh, or an old lead sent again (leads/fresh.py)."""

from datetime import UTC, datetime, timedelta

import pytest

from calls.services import SetupPriority
from leads.fresh import lead_setup_priority, request_made_at

ARRIVED = datetime(2026, 12, 7, 15, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("request_date", "expected"),
    [
        ("2026-12-07T09:30:00-05:00", SetupPriority.FRESH),  # 30 minutes before
        ("2026-12-07T08:00:00-05:00", SetupPriority.RESEND),  # 2 hours before
        ("2026-12-07T14:30:00Z", SetupPriority.FRESH),
        # Without an offset: the account's time (Denver is UTC-7 in December).
        ("2026-12-07T07:45:00", SetupPriority.FRESH),
        ("2026-12-07T07:45:00.123", SetupPriority.FRESH),
        ("2026-12-05", SetupPriority.RESEND),
        ("2026-12-07", SetupPriority.FRESH),  # some time today: never taken as old
        ("", SetupPriority.FRESH),  # missing or unreadable: a lead never waits for it
        ("yesterday", SetupPriority.FRESH),
        ("2026-13-45T99:00:00", SetupPriority.FRESH),
        ("2026-12-08T10:00:00Z", SetupPriority.FRESH),  # in the future: a clock ahead
    ],
)
def test_a_lead_asked_for_over_an_hour_before_it_came_is_a_resend(
    request_date, expected, settings
):
    settings.LEAD_RESEND_AFTER_SECONDS = 3600
    assert (
        lead_setup_priority(
            request_date=request_date, zone="America/Denver", received_at=ARRIVED
        )
        == expected
    )


def test_an_unknown_timezone_reads_the_time_as_utc():
    made = request_made_at("2026-12-07T07:45:00", "Nowhere/Else")
    assert made == ARRIVED - timedelta(hours=7, minutes=15)
