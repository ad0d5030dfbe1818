"""Hypothesis strategies the property-based tests share: days, with the calendar's ends
and the ends of the range the service accepts drawn far more often than chance would."""

from __future__ import annotations

from datetime import date, timedelta

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from scoring.dates import FIRST_DAY, LAST_DAY

ONE_DAY = timedelta(days=1)
# Python's calendar ends, the accepted range's ends, and a day either side of each.
EDGE_DAYS: list[date] = [
    date.min,
    date.min + ONE_DAY,
    FIRST_DAY - ONE_DAY,
    FIRST_DAY,
    LAST_DAY,
    LAST_DAY + ONE_DAY,
    date.max - ONE_DAY,
    date.max,
]

# An ISO day: an edge as often as any other day of the calendar.
days: SearchStrategy[str] = st.one_of(st.sampled_from(EDGE_DAYS), st.dates()).map(
    date.isoformat
)

# What a caller may type where a day is asked for: mostly days, sometimes not quite.
day_text: SearchStrategy[str] = st.one_of(
    days,
    days,
    days,
    st.sampled_from(
        ["", " ", "10000-01-01", "9999-12-32", "0000-01-01", "2026-02-29", "today"]
    ),
    st.from_regex(r"\A[0-9]{1,6}-[0-9]{1,3}-[0-9]{1,3}\Z"),
    st.text(max_size=12),
)
