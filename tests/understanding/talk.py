"""Hand-written dealer calls for the understanding tests: people, vehicles and words the
simulator's conversations (calls/telephony/conversation.py) never use."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from understanding import Context, Vehicle

CHICAGO = ZoneInfo("America/Chicago")
# Monday, December 7 2026, 10:00 in Chicago; "tomorrow" is Tuesday, December 8.
STARTED = dt.datetime(2026, 12, 7, 10, 0, tzinfo=CHICAGO)


def context(**changes) -> Context:
    """Siobhan Keane calls Wojciech Nowak for Lakeside Honda; the form says a 2025 Honda
    CR-V, trading a 2017 Ford Focus."""
    values: dict[str, Any] = {
        "agent_name": "Siobhan Keane",
        "lead_first_name": "Wojciech",
        "lead_last_name": "Nowak",
        "dealer": "Lakeside Honda",
        "called_on": Vehicle("2025", "Honda", "CR-V"),
        "current": Vehicle("2017", "Ford", "Focus"),
        "received_at": STARTED - dt.timedelta(minutes=1),
        "call_started_at": STARTED,
        "timezone": "America/Chicago",
    }
    values.update(changes)
    return Context(**values)


def turns(*said: tuple[str, str]) -> list[dict]:
    """Turns from ("agent"|"lead", text) pairs, four seconds apart."""
    return [
        {"side": side, "start": 4.0 * at, "end": 4.0 * at + 3.5, "text": text}
        for at, (side, text) in enumerate(said)
    ]


def agent(text: str) -> tuple[str, str]:
    return ("agent", text)


def lead(text: str) -> tuple[str, str]:
    return ("lead", text)
