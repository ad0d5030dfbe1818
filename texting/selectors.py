"""Reads of texts: an account's settings, a lead's thread (and its timeline on the call
page), the account a lead's text reached, the numbers shared across organizations, and
whom a text is forwarded to."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from django.db.models import F, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce, NullIf
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
    UnroutedText,
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


# The number an account texts from, in SQL (``sender_of``): its sending number, else its
# caller ID; empty when it has neither.
TEXTING_NUMBER = Coalesce(
    NullIf(F("texting_settings__sender"), Value("")), F("caller_id")
)


def texting_from(number: str) -> Q:
    """The accounts texting from ``number`` (a filter of ``Account``)."""
    return Q(texting_settings__sender=number) | (
        (Q(texting_settings__isnull=True) | Q(texting_settings__sender=""))
        & Q(caller_id=number)
    )


def accounts_sharing_number(account_id: int) -> QuerySet[Account]:
    """The account and every account of its organization texting from the number it
    texts from: a lead's opt-out sent to that number holds for each of them."""
    this = Account.objects.filter(pk=account_id).annotate(number=TEXTING_NUMBER)
    return Account.objects.annotate(number=TEXTING_NUMBER).filter(
        Q(pk=account_id)
        | (
            Q(organization_id=Subquery(this.values("organization_id")[:1]))
            & Q(number=Subquery(this.values("number")[:1]))
            & ~Q(number="")
        )
    )


def opted_out(*, account_id: int, phone: str) -> bool:
    """Whether ``phone`` opted out of the account's texts: of its own, or of another
    account of its organization texting from the same number (the lead said STOP to the
    number, whichever account's thread the STOP joined)."""
    return OptOut.objects.filter(
        account__in=accounts_sharing_number(account_id).values("pk"),
        phone=phone,
        opted_in_at__isnull=True,
    ).exists()


# --- numbers and organizations: a number an account calls or texts from belongs to one
# organization (the admin and ``accounts.services`` refuse a second one; these find the
# conflicts stored before that rule, which stop texting from the number until settled)


def number_organizations(number: str) -> set[int]:
    """The organizations with an account calling or texting from ``number``."""
    if not number:
        return set()
    return set(
        Account.objects.filter(Q(caller_id=number) | Q(texting_settings__sender=number))
        .values_list("organization_id", flat=True)
        .distinct()
    )


def number_shared(number: str) -> bool:
    """Whether accounts of more than one organization call or text from ``number``:
    nothing is texted from it and no lead's text to it joins a thread until it is settled."""
    return len(number_organizations(number)) > 1


def accounts_sending_from(*, number: str, **_signal: object) -> list[int]:
    """The accounts whose sending number is ``number``: texting's answer to
    ``accounts.signals.number_used`` (caller IDs are the accounts app's own)."""
    return list(
        TextingSettings.objects.filter(sender=number).values_list(
            "account_id", flat=True
        )
    )


@dataclass(frozen=True)
class NumberUse:
    account: Account
    uses: str  # "caller ID", "sending number" or both


@dataclass(frozen=True)
class NumberConflict:
    """A number accounts of several organizations call or text from."""

    number: str
    used_by: list[NumberUse] = field(default_factory=list)


def number_conflicts() -> list[NumberConflict]:
    """Every number that accounts of more than one organization call or text from, with
    those accounts (and their organizations) by organization and name (two queries)."""
    organizations: dict[str, set[int]] = defaultdict(set)
    uses: Iterable[tuple[str, int]] = (
        # No ORDER BY in a compound statement's parts (SQLite refuses one).
        Account.objects.exclude(caller_id="")
        .order_by()
        .values_list("caller_id", "organization_id")
        .union(
            TextingSettings.objects.exclude(sender="")
            .order_by()
            .values_list("sender", "account__organization_id")
        )
    )
    for number, organization_id in uses:
        organizations[number].add(organization_id)
    shared = sorted(n for n, ids in organizations.items() if len(ids) > 1)
    if not shared:
        return []
    accounts = (
        Account.objects.filter(
            Q(caller_id__in=shared) | Q(texting_settings__sender__in=shared)
        )
        .select_related("organization", "texting_settings")
        .distinct()
        .order_by("organization__name", "name", "pk")
    )
    conflicts = {number: NumberConflict(number) for number in shared}
    for account in accounts:
        config = getattr(account, "texting_settings", None)
        sender = config.sender if config else ""
        for number in {account.caller_id, sender} & conflicts.keys():
            roles = [
                role
                for role, used in (
                    ("caller ID", account.caller_id == number),
                    ("sending number", sender == number),
                )
                if used
            ]
            conflicts[number].used_by.append(NumberUse(account, " and ".join(roles)))
    return list(conflicts.values())


def opt_out_in_force(
    *, account_id: int, phone: str, confirmed: bool | None = None
) -> OptOut | None:
    """The number's opt-out in force for the account (``opted_out``'s, with the same
    accounts sharing its number): a confirmed one first, else a possible one that pauses
    texting until a person decides (``confirmed`` narrows to one kind)."""
    in_force = OptOut.objects.filter(
        account__in=accounts_sharing_number(account_id).values("pk"),
        phone=phone,
        opted_in_at__isnull=True,
    )
    if confirmed is not None:
        in_force = in_force.filter(confirmed=confirmed)
    return in_force.order_by("-confirmed", "opted_out_at").first()


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
    is for: of the accounts texting from it (all of one organization), the one that last
    texted with the lead, else the one whose latest call with the lead is newest, else the
    first created. None when no account texts from it, or when accounts of more than one
    organization use it (``number_shared``): a reply never reaches another tenant."""
    if number_shared(number):
        return None
    last_text = (
        Text.objects.filter(account=OuterRef("pk"), lead_phone=lead_phone)
        .order_by("-created_at")
        .values("created_at")[:1]
    )
    last_call = (
        Call.objects.filter(account=OuterRef("pk"), phone=lead_phone)
        .order_by("-received_at")
        .values("received_at")[:1]
    )
    return (
        Account.objects.filter(texting_from(number))
        .annotate(last=Subquery(last_text), last_call=Subquery(last_call))
        .order_by(
            F("last").desc(nulls_last=True), F("last_call").desc(nulls_last=True), "id"
        )
        .first()
    )


@dataclass(frozen=True)
class Route:
    """Where a lead's text goes: ``account``'s thread, or (``shared`` set: the number
    accounts of several organizations use) support's list of texts not routed."""

    account: Account | None = None
    shared: str = ""


def text_route(*, numbers: list[str], lead_phone: str) -> Route:
    """The thread a lead's text to the first of ``numbers`` (a Messaging Service SID, then
    the number) that any account texts from belongs to; a shared number stops there."""
    for number in numbers:
        if number_shared(number):
            return Route(shared=number)
        account = account_texted_at(number=number, lead_phone=lead_phone)
        if account is not None:
            return Route(account=account)
    return Route()


def unrouted_texts_count() -> int:
    """Leads' texts kept for support because their number was shared (``UnroutedText``)."""
    return UnroutedText.objects.count()


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


@dataclass(frozen=True)
class ThreadOptOut:
    """The opt-out in force for a call's lead, as the thread shows it: ``opted_out_at``
    (in the account's timezone) for a confirmed one, ``possible`` for a reply awaiting a
    person (texting paused)."""

    opted_out_at: datetime | None = None
    possible: OptOut | None = None


def thread_opt_out(call: Call) -> ThreadOptOut:
    """The call's lead's opt-out in force, of either kind, in one query."""
    in_force = opt_out_in_force(account_id=call.account_id, phone=call.phone)
    if in_force is None:
        return ThreadOptOut()
    if not in_force.confirmed:
        return ThreadOptOut(possible=in_force)
    zone = ZoneInfo(call.account.timezone)
    return ThreadOptOut(opted_out_at=in_force.opted_out_at.astimezone(zone))
