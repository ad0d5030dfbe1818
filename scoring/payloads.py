"""A call's score and coaching as webhook events (``call_scored``, ``call_coached``)."""

from __future__ import annotations

from typing import Any

from calls.payloads import call_event_emit, iso
from scoring.models import CATEGORY_SLOTS, Score

# A vehicle's members on a score, each prefixed "current_" or "called_on_".
VEHICLE = ("make", "model", "year", "registration", "summary")


def scored_call_object(score: Score) -> dict[str, Any]:
    """The scored record: what the scorer filled in, and each used category by the name it
    was scored under."""
    names = score.category_names or [None] * CATEGORY_SLOTS
    return {
        "scored_at": iso(score.scored_at),
        "scored_by": score.scorer_name,
        "first_name": score.first_name,
        "last_name": score.last_name,
        "alt_phone": score.alt_phone,
        "email": score.email,
        "department": score.department,
        "notes": score.notes,
        "appointment": {
            "date": score.appointment_date.isoformat()
            if score.appointment_date
            else None,
            "time": score.appointment_time.strftime("%H:%M")
            if score.appointment_time
            else None,
        },
        "call_end": score.call_end,
        "alert": score.alert,
        "lead_type": score.lead_type,
        "vehicles": {
            which: {part: getattr(score, f"{which}_{part}") for part in VEHICLE}
            for which in ("current", "called_on")
        },
        "categories": [
            {"name": name, "applied": bool(getattr(score, f"cat{slot}"))}
            for slot, name in enumerate(names, start=1)
            if name
        ],
        "wow": bool(score.wow),
    }


def score_event_emit(*, score: Score) -> None:
    call_event_emit(
        call=score.call, type="call_scored", scored_call=scored_call_object(score)
    )


def coaching_event_emit(*, score: Score) -> None:
    call_event_emit(
        call=score.call,
        type="call_coached",
        coaching={
            "notes": score.coach_notes,
            "coached_by": score.coached_by,
            "coached_at": iso(score.coached_at),
        },
    )
