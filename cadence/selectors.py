"""Reads of the follow-up cadence: an account's cadence and its steps (the default ones when
it set none), whether a lead's plan is under way, and what is planned next for the lead
of a call (scoped by the call, which the caller has already found visible)."""

from __future__ import annotations

from dataclasses import dataclass

from accounts.models import Account
from cadence.models import AHEAD, DEFAULT_STEPS, Cadence, PlannedStep
from calls.models import Call


@dataclass(frozen=True)
class StepPlan:
    after_hours: int
    channel: str
    template: str
    body: str


def cadence_of(account: Account) -> Cadence | None:
    return Cadence.objects.filter(account_id=account.pk).first()


def cadence_steps(account: Account) -> list[StepPlan]:
    """The steps the account plans for a lead not reached: its own, else the default
    ones; none when it has no cadence or turned it off."""
    cadence = cadence_of(account)
    if cadence is None or not cadence.enabled:
        return []
    own = [
        StepPlan(step.after_hours, step.channel, step.template, step.body)
        for step in cadence.steps.all()
    ]
    return own or [StepPlan(*step) for step in DEFAULT_STEPS]


def plan_under_way(*, account_id: int, phone: str) -> bool:
    return PlannedStep.objects.filter(
        account_id=account_id, phone=phone, status__in=AHEAD
    ).exists()


def steps_ahead_of(call: Call) -> list[PlannedStep]:
    """The steps not run yet for the lead of ``call`` (its account and number), soonest
    first."""
    return list(
        PlannedStep.objects.filter(
            account_id=call.account_id, phone=call.phone, status__in=AHEAD
        ).order_by("due_at", "pk")
    )
