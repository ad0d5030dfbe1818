"""The days the service accepts wherever a caller names one: the scored-data API's
``fromDate``/``toDate`` and the pages' date filters (call browser, CSV export, dashboard).

A day is turned into the instants where it starts and ends in each account's timezone
(midnight of the day and of the day after, UTC offsets up to 14 hours either way), and the
dashboard reaches a week back from its last day. Near the ends of Python's calendar
(0001-01-01, 9999-12-31) those sums overflow; within ``FIRST_DAY``..``LAST_DAY`` none can,
in any timezone. A day outside is refused as a bad parameter (the API's 400) or a form
error (the pages), never computed with.
"""

from __future__ import annotations

from datetime import date
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

FIRST_DAY = date(1900, 1, 1)
LAST_DAY = date(9998, 12, 31)
BETWEEN = f"between {FIRST_DAY.isoformat()} and {LAST_DAY.isoformat()}"
OUT_OF_RANGE = f"Enter a date {BETWEEN}."


def day_accepted(day: date) -> bool:
    """Whether ``day`` is one the service computes with (see the module's docstring)."""
    return FIRST_DAY <= day <= LAST_DAY


def validate_day(day: date) -> None:
    """The form validator of ``day_accepted``."""
    if not day_accepted(day):
        raise ValidationError(OUT_OF_RANGE, code="out_of_range")


class DayField(forms.DateField):
    """A date field of the pages' filters: an HTML date input limited to the days the
    service accepts (the browser's picker stops there too), checked again on the server."""

    default_validators = [validate_day]

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault(
            "widget",
            forms.DateInput(
                attrs={
                    "type": "date",
                    "min": FIRST_DAY.isoformat(),
                    "max": LAST_DAY.isoformat(),
                }
            ),
        )
        super().__init__(**kwargs)
