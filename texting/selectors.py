"""Reads of texts: an account's settings, a lead's thread (and its timeline on the call
page), the account a lead's text reached, and whom it is forwarded to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.db.models import F, Max, Q, QuerySet
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from core.versioned import VersionedCache
from texting.models import (
    AUTOMATIC,
    Direction,
    OptOut,
    Purpose,
    Text,
    TextingSettings,
    TextStatus,
)
from users.models import User

# The window the account's limit on automatic texts per lead counts over.
LIMIT_WINDOW = timedelta(days=30)
# Who is told of a lead's text when the lead has no agent yet: the account's managers
# (the permissions the pages grant managers by; ``scoring.selectors``).
MANAGER_PERMISSIONS = ("coach_account_calls", "coach_organization_calls")


# Each account's texting settings, read for every call the pipeline queues or ends: kept in
# the shared cache, stale whenever settings are saved or deleted (texting.apps).
settings_cache = VersionedCache("texting-settings")


def texting_settings_of(account: Account) -> TextingSettings | None:
    """The account's texting settings: as read with it where it was selected with them,
    else from the shared cache (then kept on ``account`` too)."""
    relation = Account.texting_settings
    if not relation.is_cached(account):
        # A tuple, so an account without settings is cached as such.
        (config,), _ = settings_cache.get(
            f"account:{account.pk}",
            lambda: (TextingSettings.objects.filter(account_id=account.pk).first(),),
        )
        relation.related.set_cached_value(account, config)
    try:
        return account.texting_settings
    except TextingSettings.DoesNotExist:
        return None


def sender_of(account: Account, config: TextingSettings | None) -> str:
    """The number (or Messaging Service) the account texts from: its own sending number,
    else its caller ID."""
    return (config.sender if config else "") or account.caller_id


def opted_out(*, account_id: int, phone: str) -> bool:
    return OptOut.objects.filter(
        account_id=account_id, phone=phone, opted_in_at__isnull=True
    ).exists()


def opt_out_in_force(*, account_id: int, phone: str) -> OptOut | None:
    """The number's opt-out in force for the account: a confirmed one, or a possible one
    that pauses texting until a person decides."""
    return OptOut.objects.filter(
        account_id=account_id, phone=phone, opted_in_at__isnull=True
    ).first()


def automatic_texts_sent(*, account_id: int, phone: str) -> int:
    """Automatic texts to the number in the limit's window (those not sent do not count)."""
    return (
        Text.objects.filter(
            account_id=account_id,
            lead_phone=phone,
            purpose__in=AUTOMATIC,
            created_at__gte=timezone.now() - LIMIT_WINDOW,
        )
        .exclude(status="canceled")
        .count()
    )


def thread_of(call: Call) -> QuerySet[Text]:
    """Every text between the call's account and its lead, oldest first, forwards included."""
    return Text.objects.filter(account_id=call.account_id, lead_phone=call.phone)


def latest_call(*, account_id: int, phone: str) -> Call | None:
    return (
        Call.objects.filter(account_id=account_id, phone=phone)
        .select_related("account", "agent", "team")
        .order_by("-received_at", "-id")
        .first()
    )


def account_texted_at(*, number: str, lead_phone: str) -> Account | None:
    """The account a lead's text to ``number`` (a sending number or Messaging Service SID)
    is for: of the accounts texting from it, the one that last texted or called that lead.
    Two accounts, even of two organizations, may share a number only this way: a reply
    goes where the lead's last message came from, never anywhere else."""
    accounts = Account.objects.filter(
        Q(texting_settings__sender=number)
        | (
            (Q(texting_settings__isnull=True) | Q(texting_settings__sender=""))
            & Q(caller_id=number)
        )
    )
    return (
        accounts.filter(Q(texts__lead_phone=lead_phone) | Q(calls__phone=lead_phone))
        .annotate(
            last=Max("texts__created_at", filter=Q(texts__lead_phone=lead_phone)),
            last_call=Max("calls__received_at", filter=Q(calls__phone=lead_phone)),
        )
        .order_by(
            F("last").desc(nulls_last=True), F("last_call").desc(nulls_last=True), "id"
        )
        .first()
    )


def team_to_tell(*, account: Account, call: Call | None) -> list[User]:
    """Who hears of a lead's text: the agent of the lead's latest call taken by an agent
    still active with a phone, else the account's managers with a phone (a lead's text is
    never dropped because their agent left)."""
    last = (
        Call.objects.filter(account=account, phone=call.phone, agent__is_active=True)
        .exclude(agent__phone_number="")
        .select_related("agent")
        .order_by("-received_at", "-id")
        .first()
        if call
        else None
    )
    if last is not None and last.agent is not None:
        return [last.agent]
    granted = Q(groups__permissions__codename__in=MANAGER_PERMISSIONS) | Q(
        user_permissions__codename__in=MANAGER_PERMISSIONS
    )
    in_reach = Q(accounts=account) | Q(
        memberships__organization_id=account.organization_id,
        groups__permissions__codename="coach_organization_calls",
    )
    return list(
        User.objects.filter(granted, in_reach, is_active=True)
        .exclude(phone_number="")
        .distinct()
        .order_by("id")
    )


# --- the thread as the call page shows it: texts and calls in one timeline, oldest
# first, in the account's timezone


# The statuses whose error says why the lead did not get the text.
NOT_DELIVERED = frozenset(
    {TextStatus.FAILED, TextStatus.UNDELIVERED, TextStatus.CANCELED}
)


@dataclass(frozen=True)
class Entry:
    """One line of the timeline: a text (``text`` set) or a call (``call`` set)."""

    at: datetime  # in the account's timezone
    text: Text | None = None
    call: Call | None = None
    who: str = ""
    current: bool = False  # the call whose page this is

    @property
    def kind(self) -> str:
        return "text" if self.text is not None else "call"

    @property
    def incoming(self) -> bool:
        return self.text is not None and self.text.direction == Direction.IN

    @property
    def error(self) -> str:
        if self.text is None or self.text.status not in NOT_DELIVERED:
            return ""
        return self.text.error or "No reason was given."


def _name(user: User | None, fallback: str) -> str:
    return (user.get_full_name() or user.username) if user else fallback


def _who(text: Text, dealer: str) -> str:
    if text.direction == Direction.IN:
        return "Lead"
    if text.purpose == Purpose.FORWARD:
        return f"Forwarded to {_name(text.recipient, 'the team')}"
    if text.purpose == Purpose.ALERT:
        return f"Alert to {_name(text.recipient, 'a manager')}"
    if text.sent_by_id is not None:
        return f"Sent by {_name(text.sent_by, 'a former user')}"
    return dealer


def thread_timeline(call: Call) -> list[Entry]:
    """The texts between the call's account and its lead and every call of the account to
    the lead's number, oldest first (two queries, whatever the thread's length)."""
    account = call.account
    zone = ZoneInfo(account.timezone)
    texts = (
        thread_of(call)
        .select_related("sent_by", "recipient")
        .order_by("created_at", "id")
    )
    calls = (
        Call.objects.filter(account_id=call.account_id, phone=call.phone)
        .select_related("agent")
        .order_by("received_at", "id")
    )
    entries = [
        Entry(
            at=text.created_at.astimezone(zone), text=text, who=_who(text, account.name)
        )
        for text in texts
    ] + [
        Entry(
            at=other.received_at.astimezone(zone),
            call=other,
            current=other.pk == call.pk,
        )
        for other in calls
    ]
    # A call and a text at the same moment: the call first (a text follows its call).
    return sorted(entries, key=lambda entry: (entry.at, entry.kind == "text"))


def thread_opted_out_at(call: Call) -> datetime | None:
    """When the call's lead opted out of the account's texts, if the opt-out is in force
    (in the account's timezone)."""
    at = (
        OptOut.objects.filter(
            account_id=call.account_id,
            phone=call.phone,
            opted_in_at__isnull=True,
            confirmed=True,
        )
        .values_list("opted_out_at", flat=True)
        .first()
    )
    return at.astimezone(ZoneInfo(call.account.timezone)) if at else None


def thread_possible_opt_out(call: Call) -> OptOut | None:
    """The call's lead's reply that may be an opt-out, while it awaits a person (texting to
    the number is paused)."""
    return OptOut.objects.filter(
        account_id=call.account_id,
        phone=call.phone,
        opted_in_at__isnull=True,
        confirmed=False,
    ).first()
