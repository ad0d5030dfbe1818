"""Reads on behalf of a credential: users outside its reach are simply not found.

A credential reaches its organization, or only some of its accounts when it is narrowed
(``ApiCredential.accounts``). A narrowed credential sees the users assigned to at least
one of its accounts, and sees them through its accounts only: their ``accountIds`` and
``teams`` hold what it reaches, nothing of the organization's other accounts.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import time
from functools import cache
from typing import Any, NamedTuple

import orjson
from django.db import connection
from django.db.models import BigIntegerField, Exists, Max, OuterRef, Prefetch, QuerySet
from django.db.models.functions import Cast

from accounts.models import Account, ApiCredential, Organization, Team
from accounts.selectors import credential_narrowed, credential_reaches
from core.api import Forbidden, NotFound
from core.db import prepared_cursor
from users.models import Membership, User

USER_NOT_FOUND = "User not found"
UNAUTHORIZED_ORGANIZATION = "Unauthorized for this organization"
CODE_WIDTH = 4


class Day(NamedTuple):
    """One day of a user's schedule (``accounts.schedules.Day``)."""

    weekday: int
    active: bool
    start_time: time
    end_time: time


@dataclass(frozen=True)
class SeenUser:
    """A user as a credential sees them: the relations of its organization and reach only.
    ``teams`` are ``(id, name, account_id)`` by id; ``account_ids`` ascending."""

    user: User
    code: str | None
    organization_ids: list[int]
    account_ids: list[int]
    teams: list[tuple[int, str, int]]
    days: list[Any]


def organization_for_credential(
    *, credential: ApiCredential, organization_id: int
) -> Organization:
    """The organization named in a request, if the credential reaches it; else 403."""
    if organization_id != credential.organization_id:
        raise Forbidden(UNAUTHORIZED_ORGANIZATION)
    return credential.organization


def accounts_assignable(
    *, organization: Organization, credential: ApiCredential | None = None
) -> QuerySet[Account]:
    """Accounts of ``organization`` a caller may assign users (and their teams) to: those the
    credential reaches, or every one for support (no credential: the admin, seed_demo)."""
    accounts = Account.objects.filter(organization=organization)
    if credential is not None:
        accounts = accounts.filter(
            credential_reaches(credential, account_id_field="pk")
        )
    return accounts


def users_visible(*, credential: ApiCredential) -> QuerySet[User]:
    """Users the credential reaches, with everything the User API shows, seen through its reach:
    members of its organization and, when it is narrowed, assigned to one of its accounts."""
    organization_id = credential.organization_id
    narrowed = ApiCredential.accounts.through.objects.filter(
        apicredential_id=credential.pk
    )
    assigned_in_reach = User.accounts.through.objects.filter(
        user_id=OuterRef("pk"),
        account_id__in=narrowed.values("account_id"),
    )
    reached_accounts = Account.objects.filter(
        credential_reaches(credential, account_id_field="pk"),
        organization_id=organization_id,
    )
    return (
        User.objects.filter(memberships__organization_id=organization_id)
        .filter(~Exists(narrowed) | Exists(assigned_in_reach))
        .prefetch_related(
            Prefetch(
                "memberships",
                queryset=Membership.objects.filter(organization_id=organization_id),
            ),
            Prefetch("accounts", queryset=reached_accounts.only("id")),
            Prefetch(
                "teams",
                queryset=Team.objects.filter(
                    credential_reaches(credential),
                    account__organization_id=organization_id,
                ).only("id", "name", "account_id"),
            ),
            "schedule_days",
        )
    )


def user_get_visible(*, credential: ApiCredential, user_id: int) -> SeenUser:
    """A user the credential reaches, else 404 "User not found"."""
    return _first_user(credential, "pk", user_id)


def user_find_by_email(*, credential: ApiCredential, email: str) -> SeenUser:
    """The (oldest) user the credential reaches with this email address, compared
    case-insensitively."""
    return _first_user(credential, "email__iexact", email)


def user_find_by_phone(*, credential: ApiCredential, phone_number: str) -> SeenUser:
    """The (oldest) user the credential reaches with this E.164 phone number."""
    return _first_user(credential, "phone_number", phone_number)


def _first_user(credential: ApiCredential, lookup: str, value: object) -> SeenUser:
    if connection.vendor == "postgresql":
        seen = _first_user_in_one_query(credential, lookup, value)
    else:
        seen = _first_user_prefetched(credential, lookup, value)
    if seen is None:
        raise NotFound(USER_NOT_FOUND)
    return seen


def _first_user_prefetched(
    credential: ApiCredential, lookup: str, value: object
) -> SeenUser | None:
    """The portable path (the embedded SQLite): ``users_visible`` and its prefetches."""
    user = (
        users_visible(credential=credential)
        .filter(**{lookup: value})
        .order_by("id")
        .first()
    )
    if user is None:
        return None
    memberships = list(user.memberships.all())
    return SeenUser(
        user=user,
        code=memberships[0].code if memberships else None,
        organization_ids=[m.organization_id for m in memberships],
        account_ids=sorted(a.pk for a in user.accounts.all()),
        teams=[
            (t.pk, t.name, t.account_id)
            for t in sorted(user.teams.all(), key=lambda t: t.pk)
        ],
        days=list(user.schedule_days.all()),
    )


# PostgreSQL: the user, the reach check and every relation the User API shows in one
# query written once (no queryset compiled per request), the relations as JSON arrays.
# %(narrowed)s is the credential's accounts, or NULL for its whole organization.
_IN_REACH = (
    "(%(narrowed)s::bigint[] IS NULL OR {account} = ANY(%(narrowed)s::bigint[]))"
)
_USER_SQL = """
SELECT {columns},
  (SELECT json_agg(json_build_array(m.organization_id, m.code) ORDER BY m.code)::text
     FROM users_membership m
    WHERE m.user_id = u.id AND m.organization_id = %(organization)s),
  (SELECT json_agg(a.id ORDER BY a.id)::text
     FROM users_user_accounts ua JOIN accounts_account a ON a.id = ua.account_id
    WHERE ua.user_id = u.id AND a.organization_id = %(organization)s
      AND {account_in_reach}),
  (SELECT json_agg(json_build_array(t.id, t.name, t.account_id) ORDER BY t.id)::text
     FROM users_user_teams ut JOIN accounts_team t ON t.id = ut.team_id
     JOIN accounts_account a ON a.id = t.account_id
    WHERE ut.user_id = u.id AND a.organization_id = %(organization)s
      AND {team_in_reach}),
  (SELECT json_agg(json_build_array(d.weekday, d.active, to_char(d.start_time, 'HH24:MI'),
                                    to_char(d.end_time, 'HH24:MI')))::text
     FROM users_userscheduleday d WHERE d.user_id = u.id)
FROM users_user u
WHERE {lookup}
  AND EXISTS (SELECT 1 FROM users_membership m
               WHERE m.user_id = u.id AND m.organization_id = %(organization)s)
  AND (%(narrowed)s::bigint[] IS NULL OR EXISTS (
         SELECT 1 FROM users_user_accounts ua
          WHERE ua.user_id = u.id AND ua.account_id = ANY(%(narrowed)s::bigint[])))
ORDER BY u.id
LIMIT 1
"""
# The lookups the User API finds users by, as the ORM writes them for PostgreSQL.
_LOOKUPS = {
    "pk": "u.id = %(value)s",
    "email__iexact": "UPPER(u.email::text) = UPPER(%(value)s)",
    "phone_number": "u.phone_number = %(value)s",
}


@cache
def _user_sql(lookup: str) -> tuple[str, list[str]]:
    fields = [field.attname for field in User._meta.concrete_fields]
    columns = [field.column for field in User._meta.concrete_fields]
    sql = _USER_SQL.format(
        columns=", ".join(f'u."{column}"' for column in columns),
        account_in_reach=_IN_REACH.format(account="a.id"),
        team_in_reach=_IN_REACH.format(account="t.account_id"),
        lookup=_LOOKUPS[lookup],
    )
    return sql, fields


def _first_user_in_one_query(
    credential: ApiCredential, lookup: str, value: object
) -> SeenUser | None:
    sql, fields = _user_sql(lookup)
    narrowed = credential_narrowed(credential)
    params: dict[str, Any] = {
        "organization": credential.organization_id,
        "narrowed": list(narrowed) if narrowed is not None else None,
        "value": value,
    }
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    count = len(fields)
    memberships, accounts, teams, days = (
        orjson.loads(text) if text else [] for text in row[count:]
    )
    return SeenUser(
        user=User.from_db(connection.alias, fields, row[:count]),
        code=memberships[0][1] if memberships else None,
        organization_ids=[organization for organization, _ in memberships],
        account_ids=accounts,
        teams=[(team, name, account) for team, name, account in teams],
        days=[
            Day(weekday, active, time.fromisoformat(start), time.fromisoformat(end))
            for weekday, active, start, end in days
        ],
    )


def user_code_next(*, organization_id: int) -> str:
    """One more than the highest numeric code in the organization, zero-padded ("0001" for
    none). Organization-wide whatever a credential's reach: codes are unique there."""
    highest = Membership.objects.filter(
        organization_id=organization_id, code__isnull=False
    ).aggregate(highest=Max(Cast("code", BigIntegerField())))["highest"]
    return format_code((highest or 0) + 1)


def format_code(number: int) -> str:
    return str(number).zfill(CODE_WIDTH)
