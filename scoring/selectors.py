"""Who may score, coach and read which calls; every scoring read goes through these.

Reach by permission (of ``scoring.Score``, held through a permission template, i.e. a
Django group, or given to the user directly; a group's name does not matter):
- staff reach every account;
- ``score_calls`` (the Scorer template): the accounts assigned to them, and every account of
  an organization they are a member of without being assigned any of its accounts (a
  scorer working for a whole dealer group);
- ``coach_organization_calls`` (Global Manager): every account of their organizations;
  ``coach_account_calls`` (Manager): their accounts;
- an agent reads only calls they took.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django.contrib.auth.models import Permission
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Count, Exists, Min, OuterRef, Q, QuerySet
from django.db.models.functions import TruncHour
from django.utils import timezone

from accounts.models import Account, Team
from calls.models import Call, CallAttempt, CallStatus
from scoring.models import (
    CATEGORY_SLOTS,
    CallSuggestions,
    ChoiceKind,
    LearntSuggester,
    Score,
    Scorecard,
    ScorecardCategory,
    ScorecardChoice,
    ScoreRevision,
    ScoringClaim,
)
from users.models import Membership, User

# The permissions (codenames of scoring.Score's) that grant the roles.
TAKE_CALLS = "take_calls"  # the users who take calls (the Agent template)
SCORE_CALLS = "score_calls"
COACH_ACCOUNT_CALLS = "coach_account_calls"
COACH_ORGANIZATION_CALLS = "coach_organization_calls"
ROLE_PERMISSIONS = (
    TAKE_CALLS,
    SCORE_CALLS,
    COACH_ACCOUNT_CALLS,
    COACH_ORGANIZATION_CALLS,
)


def _role_permissions(user: User) -> set[str]:
    """The role permissions ``user`` holds through their groups or directly: one query per
    user object, kept on it."""
    cached = getattr(user, "_role_permissions", None)
    if cached is None:
        cached = set(
            Permission.objects.filter(
                Q(group__user=user) | Q(user=user),
                content_type__app_label="scoring",
                codename__in=ROLE_PERMISSIONS,
            )
            .order_by()
            .values_list("codename", flat=True)
            .distinct()
        )
        user._role_permissions = cached  # type: ignore[attr-defined]
    return cached


def _with_permission(codename: str) -> Q:
    """Users holding ``codename`` through a group or directly."""
    scoring = Q(content_type__app_label="scoring", codename=codename)
    return Q(groups__permissions__in=Permission.objects.filter(scoring)) | Q(
        user_permissions__in=Permission.objects.filter(scoring)
    )


def accounts_scorable_by(user: User) -> QuerySet[Account]:
    """Accounts whose calls ``user`` may score."""
    if not user.is_active:
        return Account.objects.none()
    if user.is_staff:
        return Account.objects.all()
    if SCORE_CALLS not in _role_permissions(user):
        return Account.objects.none()
    assigned = user.accounts.all()
    whole_organizations = Membership.objects.filter(user=user).exclude(
        organization__accounts__in=assigned
    )
    return Account.objects.filter(
        Q(pk__in=assigned.values("pk"))
        | Q(organization_id__in=whole_organizations.values("organization_id"))
    )


def accounts_coachable_by(user: User) -> QuerySet[Account]:
    """Accounts whose calls ``user`` may coach (and browse as a manager)."""
    if not user.is_active:
        return Account.objects.none()
    if user.is_staff:
        return Account.objects.all()
    held = _role_permissions(user)
    reach = Q(pk__in=[])
    if COACH_ORGANIZATION_CALLS in held:
        reach |= Q(
            organization_id__in=Membership.objects.filter(user=user).values(
                "organization_id"
            )
        )
    if COACH_ACCOUNT_CALLS in held:
        reach |= Q(pk__in=user.accounts.values("pk"))
    return Account.objects.filter(reach)


def learnt_suggesters_of(*, user: User, account_id: int) -> QuerySet[LearntSuggester]:
    """What was learnt for one account's suggestions, if ``user`` may coach it (nothing
    otherwise), without the models' weights."""
    return LearntSuggester.objects.filter(
        account_id=account_id, account__in=accounts_coachable_by(user)
    ).defer("weights")


def calls_visible_to(user: User) -> QuerySet[Call]:
    """Calls ``user`` may read: those of accounts they score or coach, and their own calls."""
    if user.is_staff and user.is_active:
        return Call.objects.all()
    return Call.objects.filter(
        Q(account__in=accounts_scorable_by(user))
        | Q(account__in=accounts_coachable_by(user))
        | Q(agent=user)
    )


def call_get_visible(*, user: User, call_id: int) -> Call | None:
    """One call ``user`` may read, or None: a foreign call is simply not found. Its
    account and agent come with it (every page of one call shows both)."""
    return (
        calls_visible_to(user)
        .select_related("account", "agent")
        .filter(pk=call_id)
        .first()
    )


def scoring_queue(*, scorer: User) -> QuerySet[Call]:
    """Answered, unscored calls with a recording that ``scorer`` may score and nobody else
    holds, oldest first."""
    held_by_other = ScoringClaim.objects.filter(
        call=OuterRef("pk"), expires_at__gt=timezone.now()
    ).exclude(scorer=scorer)
    return (
        Call.objects.filter(
            status=CallStatus.ANSWER,
            account__in=accounts_scorable_by(scorer),
        )
        .exclude(recording_url="")
        .exclude(Exists(Score.objects.filter(call=OuterRef("pk"))))
        .exclude(Exists(held_by_other))
        .order_by("received_at", "id")
    )


def scoring_queue_by_account(*, scorer: User) -> list[dict[str, Any]]:
    """How many calls of ``scoring_queue`` wait per account, and since when the oldest has
    (``oldest``: its received_at), oldest first: one grouped query."""
    return [
        dict(row)
        for row in scoring_queue(scorer=scorer)
        .order_by()
        .values("account_id", "account__name")
        .annotate(waiting=Count("id"), oldest=Min("received_at"))
        .order_by("oldest", "account__name")
    ]


def calls_of_account(*, account: Account, **filters: Any) -> QuerySet[Call]:
    """Calls of one account (the scored-data key's reach), narrowed by ``filters``."""
    return Call.objects.filter(account=account, **filters)


def scorecard_of(*, account: Account) -> Scorecard | None:
    """The account's scorecard with its categories and lists, if it has one."""
    return (
        Scorecard.objects.prefetch_related("categories", "choices")
        .filter(account=account)
        .first()
    )


def scores_by(*, scorer: User, since: object) -> QuerySet[Score]:
    """Scores ``scorer`` saved since a moment, newest first."""
    return Score.objects.filter(scorer=scorer, scored_at__gte=since).select_related(
        "call__account"
    )


# --- the pages (pages/views.py): what a signed-in user reaches


@dataclass(frozen=True)
class Roles:
    """Which pages a signed-in user sees; what each page shows is still scoped per call."""

    scorer: bool
    manager: bool
    staff: bool
    # Takes calls (``take_calls``) without scoring or coaching: lands on their own page.
    agent: bool = False


def roles_of(user: User) -> Roles:
    """The user's roles from their permissions (staff hold every role)."""
    if not (user.is_authenticated and user.is_active):
        return Roles(scorer=False, manager=False, staff=False)
    held = _role_permissions(user)
    staff = user.is_staff
    scorer = staff or SCORE_CALLS in held
    manager = staff or bool({COACH_ACCOUNT_CALLS, COACH_ORGANIZATION_CALLS} & held)
    return Roles(
        scorer=scorer,
        manager=manager,
        staff=staff,
        agent=TAKE_CALLS in held and not (scorer or manager),
    )


def accounts_visible_to(user: User) -> QuerySet[Account]:
    """Accounts whose calls ``user`` may read at all: scored, coached, or their own."""
    if user.is_staff and user.is_active:
        return Account.objects.all()
    return Account.objects.filter(
        Q(pk__in=accounts_scorable_by(user).values("pk"))
        | Q(pk__in=accounts_coachable_by(user).values("pk"))
        | Q(pk__in=Call.objects.filter(agent=user).values("account_id"))
    )


def users_filterable_by(user: User) -> QuerySet[User]:
    """The agents the call browser offers ``user`` as a filter: the users of the accounts
    they score or manage who take calls (``take_calls``, the Agent template); an agent
    only themselves."""
    roles = roles_of(user)
    if not (roles.scorer or roles.manager):
        return User.objects.filter(pk=user.pk)
    return (
        User.objects.filter(_with_permission(TAKE_CALLS))
        .filter(accounts__in=accounts_visible_to(user))
        .distinct()
        .order_by("last_name", "first_name")
    )


def category_labels(*, accounts: QuerySet[Account]) -> list[tuple[str, str]]:
    """The category slots as the call browser offers them, named by the scorecards of
    ``accounts``: "1. Greeted the customer" when they agree; the names joined when they
    differ; "Category 1" when none names the slot."""
    named: dict[int, list[str]] = {}
    for slot, name in (
        ScorecardCategory.objects.filter(scorecard__account__in=accounts)
        .exclude(name="")
        .values_list("slot", "name")
        .order_by("slot", "name")
        .distinct()
    ):
        named.setdefault(slot, []).append(name)
    labels = []
    for slot in range(1, CATEGORY_SLOTS + 1):
        names = named.get(slot)
        if not names:
            labels.append((str(slot), f"Category {slot}"))
        elif len(names) <= 2:
            labels.append((str(slot), f"{slot}. {' / '.join(names)}"))
        else:
            labels.append((str(slot), f"{slot}. {names[0]} / … ({len(names)} names)"))
    return labels


# Each account's sources, walked through the (account, source) index: a probe per account
# and source where a DISTINCT reads every call in reach (100,000 calls: 66 ms, this well
# under 1 ms). Every non-empty text sorts after '', so "> ''" leaves out only the empty one.
_SOURCES_WALK = """
WITH RECURSIVE walk(account_id, source) AS (
    SELECT a.id, (
        SELECT c.source FROM calls_call c
        WHERE c.account_id = a.id AND c.source > '' ORDER BY c.source LIMIT 1
    ) FROM ({}) AS a(id)
  UNION ALL
    SELECT w.account_id, (
        SELECT c.source FROM calls_call c
        WHERE c.account_id = w.account_id AND c.source > w.source ORDER BY c.source LIMIT 1
    ) FROM walk w WHERE w.source IS NOT NULL
)
SELECT DISTINCT source FROM walk WHERE source IS NOT NULL
"""


def call_sources(*, user: User) -> list[str]:
    """The lead sources found among the calls ``user`` may read (``calls_visible_to``),
    alphabetical: one query."""
    visible = calls_visible_to(user).exclude(source="").order_by()
    if connection.vendor != "postgresql":
        return sorted(visible.values_list("source", flat=True).distinct())
    # The calls of the accounts in reach, walked; and the user's own calls elsewhere.
    if user.is_staff and user.is_active:
        accounts, own = Account.objects.all(), Call.objects.none()
    else:
        accounts = Account.objects.filter(
            Q(pk__in=accounts_scorable_by(user).values("pk"))
            | Q(pk__in=accounts_coachable_by(user).values("pk"))
        )
        own = Call.objects.filter(agent=user)
    parts: list[tuple[str, tuple[Any, ...]]] = []
    for template, query in (
        (_SOURCES_WALK, accounts.order_by().values("pk").query),
        ("{}", own.exclude(source="").order_by().values("source").query),
    ):
        try:
            sql, params = query.sql_with_params()
        except EmptyResultSet:  # nothing in reach that way
            continue
        parts.append((template.format(sql), tuple(params)))
    if not parts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            " UNION ".join(f"({sql})" for sql, _ in parts),
            [param for _, params in parts for param in params],
        )
        return sorted({source for (source,) in cursor.fetchall()})


def score_list_names(
    *, accounts: QuerySet[Account], calls: QuerySet[Call]
) -> dict[str, list[str]]:
    """The call-end reasons and alert tags the scorecards of ``accounts`` list, with those
    found on the scores of ``calls`` (entries since renamed or removed), alphabetical: two
    queries for both lists."""
    names: dict[str, set[str]] = {ChoiceKind.CALL_END: set(), ChoiceKind.ALERT: set()}
    for kind, name in (
        ScorecardChoice.objects.filter(scorecard__account__in=accounts, kind__in=names)
        .values_list("kind", "name")
        .order_by()
    ):
        names[kind].add(name)
    for call_end, alert in (
        Score.objects.filter(call__in=calls.order_by().values("pk"))
        .exclude(call_end="", alert="")
        .order_by()
        .values_list("call_end", "alert")
        .distinct()
    ):
        if call_end:
            names[ChoiceKind.CALL_END].add(call_end)
        # Alert tags are stored separated by commas.
        names[ChoiceKind.ALERT].update(t.strip() for t in alert.split(",") if t.strip())
    return {kind: sorted(found, key=str.casefold) for kind, found in names.items()}


def teams_visible_to(user: User) -> QuerySet[Team]:
    """Teams of the accounts whose calls ``user`` may read."""
    return Team.objects.filter(account__in=accounts_visible_to(user)).select_related(
        "account"
    )


def score_of(*, call: Call) -> Score | None:
    """The score of a call already found visible, or None."""
    return Score.objects.filter(call=call).first()


def suggestions_of(*, call: Call) -> dict[str, Any]:
    """What the transcript of a call already found visible suggests, by member ({} if
    nothing)."""
    members = (
        CallSuggestions.objects.filter(call=call)
        .values_list("members", flat=True)
        .first()
    )
    return dict(members or {})


def call_get_scorable(*, user: User, call_id: int) -> Call | None:
    """One call ``user`` may score, with its account and score, or None (not found)."""
    return (
        Call.objects.filter(account__in=accounts_scorable_by(user), pk=call_id)
        .select_related("account", "agent", "score", "team")
        .first()
    )


def call_may_be_scored_by(*, user: User, call: Call) -> bool:
    """Whether ``user`` may score the call (``call_get_scorable``'s rule, without loading it)."""
    return accounts_scorable_by(user).filter(pk=call.account_id).exists()


def call_may_be_coached_by(*, user: User, call: Call) -> bool:
    """Whether ``user`` coaches the call's account (the call page shows the coaching form).
    One query per user object and account, kept on it: the call page asks three times
    (the coaching form, the text thread, who was told)."""
    known: dict[int, bool] = user.__dict__.setdefault("_coaches_account", {})
    if call.account_id not in known:
        known[call.account_id] = (
            accounts_coachable_by(user).filter(pk=call.account_id).exists()
        )
    return known[call.account_id]


def call_may_be_texted_by(*, user: User, call: Call) -> bool:
    """Whether ``user`` may reply to the call's lead from the call page: staff, a manager
    who coaches the account, or the agent of any of the lead's calls to the account (a
    scorer only reads the thread)."""
    if not user.is_active:
        return False
    if user.is_staff or call.agent_id == user.pk:
        return True
    return Call.objects.filter(
        account_id=call.account_id, phone=call.phone, agent=user
    ).exists() or call_may_be_coached_by(user=user, call=call)


def call_attempts(*, call: Call) -> QuerySet[CallAttempt]:
    """The legs dialed for a call (agents offered it, the lead dialed), in order."""
    return call.attempts_log.select_related("agent").order_by("created_at", "id")


def score_revisions(*, call: Call) -> QuerySet[ScoreRevision]:
    """Every change to a call's score and coaching, oldest first."""
    return (
        ScoreRevision.objects.filter(score__call=call)
        .select_related("score")
        .order_by("changed_at", "id")
    )


def day_start(day: date, zone: ZoneInfo) -> datetime:
    """Midnight starting ``day`` in ``zone``: where local days begin and end."""
    return datetime.combine(day, time.min, tzinfo=zone)


def received_on_local_days(
    calls: QuerySet[Call],
    *,
    accounts: QuerySet[Account],
    first: date | None,
    last: date | None,
) -> QuerySet[Call]:
    """``calls`` received from day ``first`` to day ``last`` (inclusive; either may be open)
    as each call's account counts days, in its own timezone."""
    if first is None and last is None:
        return calls
    return calls.filter(local_days(accounts=accounts, first=first, last=last))


def local_days(
    *,
    accounts: QuerySet[Account] | Iterable[tuple[int, str]],
    first: date | None,
    last: date | None,
    prefix: str = "",
) -> Q:
    """The condition of ``received_on_local_days`` (on ``prefix`` + the call's fields, for
    rows that point at a call): the accounts' ids and one pair of bounds per timezone, so
    it stays a range on the account/received_at index, on any database. ``accounts`` may
    be the (id, timezone) pairs already read, to spare a query per condition."""
    pairs = (
        accounts.values_list("pk", "timezone")
        if isinstance(accounts, QuerySet)
        else accounts
    )
    by_zone: dict[str, list[int]] = {}
    for pk, zone in pairs:
        by_zone.setdefault(zone, []).append(pk)
    reach = Q(pk__in=[])
    for zone, ids in sorted(by_zone.items()):
        tz = ZoneInfo(zone)
        bounds = Q(**{f"{prefix}account_id__in": ids})
        if first is not None:
            start = day_start(first, tz)
            bounds &= Q(**{f"{prefix}received_at__gte": start})
        if last is not None:
            after = day_start(last + timedelta(days=1), tz)
            bounds &= Q(**{f"{prefix}received_at__lt": after})
        reach |= bounds
    return reach


def scores_per_hour(*, scorer: User, since: datetime) -> list[tuple[datetime, int]]:
    """How many calls ``scorer`` scored in each hour since ``since``, in the active timezone."""
    hours = (
        Score.objects.filter(scorer=scorer, scored_at__gte=since)
        .annotate(hour=TruncHour("scored_at"))
        .values("hour")
        .annotate(count=Count("id"))
        .order_by("hour")
    )
    return [(row["hour"], row["count"]) for row in hours]
