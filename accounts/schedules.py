"""Weekly schedules as the User API shows them, shared by accounts and users."""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable
from datetime import datetime, time
from functools import cache
from typing import Any, Protocol

from django.core.exceptions import ValidationError

# HH:MM cannot say 24:00, so a day that ends at 23:59 runs until midnight.
END_OF_DAY = time(23, 59)

WEEKDAYS = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
)


class Day(Protocol):
    weekday: int
    active: bool
    start_time: time
    end_time: time


@cache
def timezone_names() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones())


def validate_timezone(value: str) -> None:
    if value not in timezone_names():
        raise ValidationError(f"{value!r} is not a known timezone (Area/City).")


def schedule_as_dict(
    *, active: bool | None, days: Iterable[Day]
) -> dict[str, Any] | None:
    """The schedule object of part 2.1, or None when there is no schedule."""
    if active is None:
        return None
    by_weekday = {day.weekday: day for day in days}
    out: dict[str, Any] = {"active": active}
    for index, name in enumerate(WEEKDAYS):
        day = by_weekday.get(index)
        out[name] = (
            {
                "active": day.active,
                "startTime": hh_mm(day.start_time),
                "endTime": hh_mm(day.end_time),
            }
            if day
            else None
        )
    return out


def hh_mm(value: time) -> str:
    """``HH:MM``, as ``f"{value:%H:%M}"`` writes it without strftime's cost (a tenth)."""
    return f"{value.hour:02d}:{value.minute:02d}"


def is_open(*, active: bool | None, days: Iterable[Day], tz: str, at: datetime) -> bool:
    """Whether a schedule is open at the aware instant ``at``, read in timezone ``tz``."""
    if not active:
        return False
    local = at.astimezone(zoneinfo.ZoneInfo(tz))
    wall = local.time().replace(tzinfo=None)
    return any(
        day.active
        and day.weekday == local.weekday()
        and day.start_time <= wall
        and (wall < day.end_time or day.end_time == END_OF_DAY)
        for day in days
    )
