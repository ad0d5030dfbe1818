"""A call's transcript in the interface's line format (part 2.3, CONTRACT.md):
``{speaker} ({startTime}-{endTime}): {text}``, one line per turn in time order, times
``mm:ss`` from the start of the recording (``h:mm:ss`` past an hour), the agent's full name
for the agent's side and the lead's full name (or ``Lead``) for the lead's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.conf.locale import LANG_INFO

SIDES = ("agent", "lead")


def language_name(code: str) -> str:
    """A transcript language's English name ("Spanish" for "es"); the code when unknown,
    "" for none."""
    return str(LANG_INFO.get(code, {}).get("name") or code)


def clock(seconds: float) -> str:
    """``mm:ss``, or ``h:mm:ss`` from an hour on."""
    whole = max(int(seconds), 0)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes:02d}:{secs:02d}"


def speaker_names(call: Any) -> dict[str, str]:
    """Who each side is, as the transcript names them."""
    agent = call.agent.get_full_name().strip() if call.agent_id else ""
    lead = f"{call.first_name} {call.last_name}".strip()
    return {"agent": agent or call.agent_shown or "Agent", "lead": lead or "Lead"}


def render(turns: Iterable[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    """The transcript's text: turns ordered by their start."""
    ordered = sorted(turns, key=lambda turn: (turn["start"], turn["end"]))
    return "\n".join(
        f"{names[turn['side']]} ({clock(turn['start'])}-{clock(turn['end'])}): "
        f"{' '.join(str(turn['text']).split())}"
        for turn in ordered
        if str(turn["text"]).strip()
    )


def reading_context(call: Any) -> dict[str, Any]:
    """What reading the call's transcript may know beside it, as plain values
    (``understanding.Context.of``): who spoke, the dealer, the lead form's vehicles (hints
    for recognising what is said, never facts), when the lead came in and when the lead
    answered ("tomorrow" counts from it), and the account's timezone."""
    from calls.models import Leg

    started = (
        call.attempts_log.filter(leg=Leg.LEAD)
        .exclude(answered_at=None)
        .order_by("answered_at")
        .values_list("answered_at", flat=True)
        .first()
    )
    agent = call.agent.get_full_name().strip() if call.agent_id else ""
    return {
        "agent_name": agent or call.agent_shown or "",
        "lead_first_name": call.first_name or "",
        "lead_last_name": call.last_name or "",
        "dealer": call.account.name,
        "called_on": {
            part: getattr(call, f"called_on_{part}")
            for part in ("year", "make", "model")
        },
        "current": {
            part: getattr(call, f"current_{part}") for part in ("year", "make", "model")
        },
        "received_at": call.received_at,
        "call_started_at": started or call.received_at,
        "timezone": call.account.timezone,
    }
