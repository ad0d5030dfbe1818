"""The dashboard's agent leaderboard, ranked on the number the customer feels: each
agent's median time from the lead's receipt to the first human (the agent connected or a
person's text; ``handoffs.selectors.speed_figures``), with the automatic first touch
beside it, the rollup's answered calls, scores and legs (``scoring.figures``), and the
agent's appointment set and show rates against the previous period
(``pages.appointment_figures``)."""

from __future__ import annotations

from typing import Any

from appointments.figures import AppointmentFigures
from handoffs.selectors import Speed
from pages.appointment_figures import share
from users.models import User


def leaderboard(
    *,
    agents: list[dict[str, Any]],
    speed: dict[int | None, Speed],
    appointments: dict[Any, tuple[AppointmentFigures, AppointmentFigures | None]],
) -> list[dict[str, Any]]:
    """One row per agent of the range (who took, was offered or reached a lead), ranked by
    median first human (lower first; an agent who reached nobody last), then its 90th
    percentile, then calls answered (more first), then name."""
    rows = {row["pk"]: dict(row) for row in agents}
    missing = [pk for pk in speed if pk is not None and pk not in rows]
    if missing:  # an agent of the calls the rollup has not counted yet
        for user in User.objects.filter(pk__in=missing).only(
            "first_name", "last_name", "username"
        ):
            rows[user.pk] = {
                "pk": user.pk,
                "name": user.get_full_name() or user.username,
                **dict.fromkeys(("offered", "accepted", "answered", "scored"), 0),
                **dict.fromkeys(("answered_offered", "offered_calls", "wow"), 0),
                "appointments": 0,
                "answer_rate": None,
                "median_response": None,
                "avg_score": None,
            }
    for pk, row in rows.items():
        mine = speed.get(pk)
        row["leads"] = mine.leads if mine else 0
        row["reached"] = mine.reached if mine else 0
        row["human_median"] = mine.human_median if mine else None
        row["human_p90"] = mine.human_p90 if mine else None
        row["touch_median"] = mine.touch_median if mine else None
        now, before = appointments.get(pk, (None, None))
        row["set"] = now.set if now else 0
        row["set_rate"] = share(now.set_rate) if now else None
        row["show_rate"] = share(now.show_rate) if now else None
        row["set_rate_was"] = share(before.set_rate) if before else None
        row["show_rate_was"] = share(before.show_rate) if before else None
    ranked = sorted(
        rows.values(),
        key=lambda row: (
            row["human_median"] is None,
            row["human_median"] or 0,
            row["human_p90"] or 0,
            -row["answered"],
            row["name"],
        ),
    )
    for rank, row in enumerate(ranked, start=1):
        row["rank"] = rank
    return ranked
