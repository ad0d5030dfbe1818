"""The dashboard's appointment figures: set, show and no-show rates over the range and the
previous period of the same length, then by agent and by source (``appointments.figures``),
over the accounts the manager may see (or the one chosen)."""

from __future__ import annotations

from datetime import date
from typing import Any

from accounts.models import Account
from appointments.figures import (
    AppointmentFigures,
    appointment_figures,
    appointment_figures_grouped,
)
from scoring.selectors import accounts_coachable_by
from users.models import User

NONE = AppointmentFigures(answered=0, set=0, due=0, kept=0, no_show=0, missing=0)


def _row(label: str, figures: AppointmentFigures) -> dict[str, Any]:
    def share(rate: float | None) -> float | None:
        return None if rate is None else 100 * rate

    return {
        "label": label,
        "answered": figures.answered,
        "set": figures.set,
        "set_rate": share(figures.set_rate),
        "due": figures.due,
        "kept": figures.kept,
        "no_show": figures.no_show,
        "missing": figures.missing,
        "show_rate": share(figures.show_rate),
        "no_show_rate": share(figures.no_show_rate),
    }


def appointment_rows(
    *,
    user: User,
    first: date,
    last: date,
    account: Account | None = None,
    previous: tuple[date, date] | None = None,
) -> dict[str, list[dict[str, Any]]]:
    """``overall`` (the range, then the ``previous`` period when there is one: the
    dashboard's), ``agents`` and ``sources``: rows of counts and rates, each account's
    days in its own timezone."""
    accounts = accounts_coachable_by(user)
    if account is not None:
        accounts = accounts.filter(pk=account.pk)
    pairs = list(accounts.values_list("pk", "timezone"))  # read once for every figure
    now = appointment_figures_grouped(
        accounts=pairs, first=first, last=last, by=("agent", "source")
    )
    overall = [_row(f"{first:%Y-%m-%d} to {last:%Y-%m-%d}", now["all"].get(None, NONE))]
    if previous is not None:
        before = appointment_figures(
            accounts=pairs, first=previous[0], last=previous[1]
        )
        overall.append(
            _row(f"{previous[0]:%Y-%m-%d} to {previous[1]:%Y-%m-%d}", before)
        )
    by_agent = now["agent"]
    full = {
        agent.pk: agent.get_full_name() or agent.username
        for agent in User.objects.filter(pk__in=[pk for pk in by_agent if pk])
    }
    agents = sorted(
        (
            _row(full.get(pk, "No agent") if pk else "No agent", figures)
            for pk, figures in by_agent.items()
        ),
        key=lambda row: (-(row["set_rate"] or 0), row["label"]),
    )
    sources = sorted(
        (_row(str(source or "(none)"), f) for source, f in now["source"].items()),
        key=lambda row: (-row["answered"], row["label"]),
    )
    return {"overall": overall, "agents": agents, "sources": sources}
