"""Alerts to managers: a lead not reached, a call ending NOAGENT, a lead waiting too long
for an agent while the account is open, a call scored with an alert tag, an agent
missing three offers in a row, a handoff waiting past the account's limit. Each event tells each subscriber once (the message's key),
by e-mail and, where the account texts, by text; outside a user's hours the message is
stored as not sent unless they asked for those hours too."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.template.defaultfilters import pluralize
from django.utils import timezone

from accounts.models import Account
from accounts.schedules import is_open
from calls.models import AttemptOutcome, Call, CallAttempt, CallStatus, Leg
from core.sweeps import each
from handoffs.models import Handoff
from notify.crm import call_page_url
from notify.models import (
    AlertKind,
    AlertSubscription,
    Channel,
    MessageKind,
    NotifySettings,
)
from notify.services import message_queue
from scoring.models import Score
from texting.selectors import MANAGER_PERMISSIONS, texting_settings_of
from texting.services import text_staff_send
from users.models import User

MISSED_IN_A_ROW = 3
NOT_REACHED = frozenset({CallStatus.NOANSWER, CallStatus.BUSY, CallStatus.FAILED})
# An offer the agent let go: not answered, busy, or answered without pressing 1.
MISSED = frozenset(
    {
        AttemptOutcome.NOANSWER,
        AttemptOutcome.BUSY,
        AttemptOutcome.FAILED,
        AttemptOutcome.REFUSED,
    }
)


@dataclass(frozen=True)
class Told:
    user: User
    by_email: bool
    by_text: bool
    outside_hours: bool


def account_managers(account: Account) -> list[User]:
    """The active users who manage the account itself (not its organization)."""
    granted = Q(groups__permissions__codename=MANAGER_PERMISSIONS[0]) | Q(
        user_permissions__codename=MANAGER_PERMISSIONS[0]
    )
    return list(
        User.objects.filter(granted, accounts=account, is_active=True)
        .distinct()
        .order_by("id")
    )


def subscribers(account: Account, kind: str) -> list[Told]:
    """Who hears of ``kind`` on ``account``: the account's managers by e-mail unless
    they said otherwise, and anyone with a subscription of their own."""
    rows = {
        row.user_id: row
        for row in AlertSubscription.objects.filter(
            account=account, kind=kind, user__is_active=True
        ).select_related("user")
    }
    told = [
        Told(manager, by_email=True, by_text=False, outside_hours=False)
        for manager in account_managers(account)
        if manager.pk not in rows
    ]
    told += [
        Told(row.user, row.by_email, row.by_text, row.outside_hours)
        for row in rows.values()
        if row.by_email or row.by_text
    ]
    return told


def _on_hours(user: User, now: datetime) -> bool:
    """Within the user's own schedule; a user without one is always on."""
    if not user.schedule_active:
        return True
    return is_open(active=True, days=user.schedule_days.all(), tz=user.timezone, at=now)


def _name(call: Call) -> str:
    return f"{call.first_name} {call.last_name}".strip() or call.phone


def alert_send(
    *,
    account: Account,
    kind: str,
    event: str,
    subject: str,
    body: str,
    call: Call | None,
) -> int:
    """Tell each subscriber of ``kind`` of one event (named by ``event``, unique per
    event), once. Returns the messages stored."""
    now = timezone.now()
    link = call_page_url(call) if call else ""
    text = f"{body}\n\n{link}\n" if link else f"{body}\n"
    texting = texting_settings_of(account)
    stored = 0
    for told in subscribers(account, kind):
        held = (
            ""
            if told.outside_hours or _on_hours(told.user, now)
            else "Outside the user's hours."
        )
        if told.by_email and told.user.email:
            stored += (
                message_queue(
                    key=f"alert:{event}:{told.user.pk}:email",
                    kind=MessageKind.ALERT,
                    alert=kind,
                    to=[told.user.email],
                    subject=subject,
                    text=text,
                    account=account,
                    call=call,
                    user=told.user,
                    held=held,
                )
                is not None
            )
        if told.by_text and told.user.phone_number and texting and texting.enabled:
            message = message_queue(
                key=f"alert:{event}:{told.user.pk}:text",
                kind=MessageKind.ALERT,
                alert=kind,
                channel=Channel.TEXT,
                to=told.user.phone_number,
                subject=subject,
                text=f"{subject}. {link}".strip(),
                account=account,
                call=call,
                user=told.user,
                held=held,
            )
            if message is not None:
                stored += 1
                if not held:
                    text_staff_send(
                        account=account, call=call, user=told.user, body=message.text
                    )
    return stored


# --- the events


def alerts_for_call(*, call: Call) -> int:
    """A call reached its final status: a lead not reached, or no agent took it."""
    if call.status in NOT_REACHED:
        kind, what = AlertKind.NOT_REACHED, f"not reached ({call.status})"
    elif call.status == CallStatus.NOAGENT:
        kind, what = AlertKind.NO_AGENT, "no agent took the call (NOAGENT)"
    else:
        return 0
    return alert_send(
        account=call.account,
        kind=kind,
        event=f"{kind}:{call.pk}",
        subject=f"Lead {what}: {_name(call)}",
        body=(
            f"{_name(call)} ({call.phone}), a lead of {call.account.name}, was {what} "
            f"after {call.attempts} attempt(s)."
        ),
        call=call,
    )


def alerts_for_score(*, score: Score) -> int:
    """A call scored with alert tags: each tag tells once."""
    call = score.call
    stored = 0
    for tag in [t.strip() for t in score.alert.split(",") if t.strip()]:
        stored += alert_send(
            account=call.account,
            kind=AlertKind.ALERT_TAG,
            event=f"{AlertKind.ALERT_TAG}:{call.pk}:{tag.lower()}",
            subject=f"{tag}: {_name(call)}",
            body=(
                f"The call with {_name(call)} ({call.phone}) of {call.account.name} was "
                f'scored with the alert tag "{tag}" by {score.scorer_name}.'
            ),
            call=call,
        )
    return stored


def _waiting(now: datetime) -> int:
    """Leads queued for longer than their account's wait while the account is open."""
    stored = 0
    waits = {
        row.account_id: row.waiting_minutes
        for row in NotifySettings.objects.filter(waiting_minutes__gt=0)
    }
    shortest = min([5, *waits.values()])
    calls = (
        Call.objects.filter(
            status=CallStatus.QUEUED,
            received_at__lt=now - timedelta(minutes=shortest),
            received_at__gt=now - timedelta(days=1),
        )
        .select_related("account")
        .prefetch_related("account__schedule_days")
    )

    def tell(call: Call) -> None:
        nonlocal stored
        account = call.account
        minutes = waits.get(account.pk, 5)
        if call.received_at > now - timedelta(minutes=minutes):
            return
        if not is_open(
            active=account.schedule_active,
            days=account.schedule_days.all(),
            tz=account.timezone,
            at=now,
        ):
            return
        waited = int((now - call.received_at).total_seconds() // 60)
        stored += alert_send(
            account=account,
            kind=AlertKind.WAITING,
            event=f"{AlertKind.WAITING}:{call.pk}",
            subject=f"Lead waiting {waited} min for an agent: {_name(call)}",
            body=(
                f"{_name(call)} ({call.phone}) has waited {waited} "
                f"minute{pluralize(waited)} for an agent "
                f"of {account.name}, which is open."
            ),
            call=call,
        )

    # Each call alone (core.sweeps): one that fails never holds back another's alert.
    each(sweep="alerts.waiting", items=calls, handle=tell, key=lambda call: call.pk)
    return stored


def alerts_for_offer(*, attempt: CallAttempt) -> int:
    """An agent's offer ended: after the third missed in a row, their managers are told
    once for that run of misses (named by its first miss)."""
    if attempt.outcome not in MISSED or attempt.agent_id is None:
        return 0
    last = list(
        CallAttempt.objects.filter(leg=Leg.AGENT, agent_id=attempt.agent_id)
        .exclude(ended_at__isnull=True)
        # The run this offer ends, even when told later, after the agent's next offers.
        .filter(created_at__lte=attempt.created_at)
        .order_by("-created_at", "-id")
        .only("pk", "outcome")[:50]
    )
    run = []
    for offer in last:
        if offer.outcome not in MISSED:
            break
        run.append(offer)
    if len(run) < MISSED_IN_A_ROW:
        return 0
    agent = attempt.agent
    assert agent is not None
    call = attempt.call
    name = agent.get_full_name() or agent.username
    return alert_send(
        account=call.account,
        kind=AlertKind.MISSED_OFFERS,
        event=f"{AlertKind.MISSED_OFFERS}:{agent.pk}:{run[-1].pk}",
        subject=f"{name} missed {MISSED_IN_A_ROW} calls in a row",
        body=(
            f"{name} did not take the last {MISSED_IN_A_ROW} calls offered to them "
            f"(the latest: {_name(call)}, {call.phone})."
        ),
        call=call,
    )


def alerts_for_handoff(*, handoff: Handoff) -> int:
    """A handoff waited past its account's limit (escalated once, by handoffs' sweep):
    the managers are told once."""
    account = handoff.account
    call = handoff.call
    name = _name(call) if call else handoff.phone
    waited = int((timezone.now() - handoff.wait_from).total_seconds() // 60)
    what = handoff.get_kind_display()
    return alert_send(
        account=account,
        kind=AlertKind.HANDOFF,
        event=f"{AlertKind.HANDOFF}:{handoff.pk}",
        subject=f"Handoff waiting {waited} min: {name}",
        body=(
            f"{what}: {name} ({handoff.phone}), a lead of {account.name}, has waited "
            f"{waited} minute{pluralize(waited)} for a person."
        ),
        call=call,
    )


def alerts_sweep(*, now: datetime | None = None) -> dict[str, int]:
    """The alert no step of a call raises: leads waiting too long for an agent."""
    return {"waiting": _waiting(now or timezone.now())}
