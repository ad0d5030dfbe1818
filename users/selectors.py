"""Reads on behalf of a credential: users outside its reach are simply not found.

A credential reaches its organization, or only some of its accounts when it is narrowed
(``ApiCredential.accounts``). A narrowed credential sees the users assigned to at least
one of its accounts, and sees them through its accounts only: their ``accountIds`` and
``teams`` hold what it reaches, nothing of the organization's other accounts.
"""

from __future__ import annotations

from django.db.models import BigIntegerField, Exists, Max, OuterRef, Prefetch, QuerySet
from django.db.models.functions import Cast

from accounts.models import Account, ApiCredential, Organization, Team
from accounts.selectors import credential_reaches
from core.api import Forbidden, NotFound
from users.models import Membership, User

USER_NOT_FOUND = "User not found"
UNAUTHORIZED_ORGANIZATION = "Unauthorized for this organization"
CODE_WIDTH = 4


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


def user_get_visible(*, credential: ApiCredential, user_id: int) -> User:
    """A user the credential reaches, else 404 "User not found"."""
    return _first_user(credential, pk=user_id)


def user_find_by_email(*, credential: ApiCredential, email: str) -> User:
    """The (oldest) user the credential reaches with this email address, compared
    case-insensitively."""
    return _first_user(credential, email__iexact=email)


def user_find_by_phone(*, credential: ApiCredential, phone_number: str) -> User:
    """The (oldest) user the credential reaches with this E.164 phone number."""
    return _first_user(credential, phone_number=phone_number)


def _first_user(credential: ApiCredential, **lookup: object) -> User:
    user = users_visible(credential=credential).filter(**lookup).order_by("id").first()
    if user is None:
        raise NotFound(USER_NOT_FOUND)
    return user


def user_code_next(*, organization_id: int) -> str:
    """One more than the highest numeric code in the organization, zero-padded ("0001" for
    none). Organization-wide whatever a credential's reach: codes are unique there."""
    highest = Membership.objects.filter(
        organization_id=organization_id, code__isnull=False
    ).aggregate(highest=Max(Cast("code", BigIntegerField())))["highest"]
    return format_code((highest or 0) + 1)


def format_code(number: int) -> str:
    return str(number).zfill(CODE_WIDTH)
