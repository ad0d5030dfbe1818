"""The dashboard's appointment figures: set, show and no-show rates over the range and the
previous period of the same length, overall and by agent, by source and by account
(``appointments.figures``), each row beside its previous period, over the accounts the
manager may see (or the one chosen)."""

from __future__ import annotations

from datetime import date
from typing import Any

from accounts.models import Account
from appointments.figures import AppointmentFigures, appointment_figures_grouped
from scoring.selectors import accounts_coachable_by
from users.models import User

NONE = AppointmentFigures(answered=0, set=0, due=0, kept=0, no_show=0, missing=0)
GROUPS = ("agent", "source", "account")


def share(rate: float | None) -> float | None:
    """A rate from 0 to 1 as a percentage (None where there is none)."""
    return None if rate is None else 100 * rate


def _row(
    label: str, figures: AppointmentFigures, before: AppointmentFigures | None = None
) -> dict[str, Any]:
    row: dict[str, Any] = {
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
    if before is not None:
        row["was"] = {
            "set_rate": share(before.set_rate),
            "show_rate": share(before.show_rate),
            "no_show_rate": share(before.no_show_rate),
        }
    return row


def appointment_rows(
    *,
    user: User,
    first: date,
    last: date,
    account: Account | None = None,
    previous: tuple[date, date] | None = None,
) -> dict[str, Any]:
    """``overall`` (the range, then the ``previous`` period when there is one: the
    dashboard's), ``agents``, ``sources`` and ``accounts``: rows of counts and rates,
    each with the previous period's rates (``was``) when there is one, each account's
    days in its own timezone; and ``by_agent``: each agent's figures now and before, for
    the leaderboard. Seven queries: three per period and the agents' names."""
    accounts = accounts_coachable_by(user)
    if account is not None:
        accounts = accounts.filter(pk=account.pk)
    pairs = list(accounts.values_list("pk", "timezone"))  # read once for every figure
    now = appointment_figures_grouped(accounts=pairs, first=first, last=last, by=GROUPS)
    before: dict[str, dict[Any, AppointmentFigures]] | None = None
    if previous is not None:
        before = appointment_figures_grouped(
            accounts=pairs, first=previous[0], last=previous[1], by=GROUPS
        )

    def then(group: str, key: Any) -> AppointmentFigures | None:
        return None if before is None else before[group].get(key, NONE)

    overall = [_row(f"{first:%Y-%m-%d} to {last:%Y-%m-%d}", now["all"].get(None, NONE))]
    if previous is not None and before is not None:
        label = f"{previous[0]:%Y-%m-%d} to {previous[1]:%Y-%m-%d}"
        overall.append(_row(label, before["all"].get(None, NONE)))
    by_agent = now["agent"]
    full = {
        agent.pk: agent.get_full_name() or agent.username
        for agent in User.objects.filter(pk__in=[pk for pk in by_agent if pk]).only(
            "first_name", "last_name", "username"
        )
    }
    agents = sorted(
        (
            _row(full.get(pk, "No agent") if pk else "No agent", f, then("agent", pk))
            for pk, f in by_agent.items()
        ),
        key=lambda row: (-(row["set_rate"] or 0), row["label"]),
    )
    sources = sorted(
        (
            _row(str(source or "(none)"), f, then("source", source))
            for source, f in now["source"].items()
        ),
        key=lambda row: (-row["answered"], row["label"]),
    )
    names = dict(accounts.values_list("pk", "name")) if len(pairs) > 1 else {}
    by_account = sorted(
        (
            _row(names.get(pk, ""), f, then("account", pk))
            for pk, f in now["account"].items()
        ),
        key=lambda row: row["label"],
    )
    return {
        "overall": overall,
        "agents": agents,
        "sources": sources,
        # Only worth a table beside the overall row when there are several accounts.
        "accounts": by_account if len(pairs) > 1 else [],
        "by_agent": {
            pk: (f, then("agent", pk)) for pk, f in by_agent.items() if pk is not None
        },
    }
