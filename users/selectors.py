"""Reads on behalf of a credential: users outside its organization are simply not found."""

from __future__ import annotations

from django.db.models import BigIntegerField, Max, Prefetch, QuerySet
from django.db.models.functions import Cast

from accounts.models import Account, ApiCredential, Organization, Team
from config.api import Forbidden, NotFound
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


def users_in(*, organization_id: int) -> QuerySet[User]:
    """Users of one organization, with everything the User API shows, seen from that organization."""
    return User.objects.filter(
        memberships__organization_id=organization_id
    ).prefetch_related(
        Prefetch(
            "memberships",
            queryset=Membership.objects.filter(organization_id=organization_id),
        ),
        Prefetch(
            "accounts",
            queryset=Account.objects.filter(organization_id=organization_id).only("id"),
        ),
        Prefetch(
            "teams",
            queryset=Team.objects.filter(account__organization_id=organization_id).only(
                "id", "name", "account_id"
            ),
        ),
        "schedule_days",
    )


def user_get_visible(*, credential: ApiCredential, user_id: int) -> User:
    """A user of the credential's organization, else 404 "User not found"."""
    return _first_user(credential.organization_id, pk=user_id)


def user_find_by_email(*, organization: Organization, email: str) -> User:
    """The organization's (oldest) user with this email address, compared case-insensitively."""
    return _first_user(organization.pk, email__iexact=email)


def user_find_by_phone(*, organization: Organization, phone_number: str) -> User:
    """The organization's (oldest) user with this E.164 phone number."""
    return _first_user(organization.pk, phone_number=phone_number)


def _first_user(organization_id: int, **lookup: object) -> User:
    user = (
        users_in(organization_id=organization_id)
        .filter(**lookup)
        .order_by("id")
        .first()
    )
    if user is None:
        raise NotFound(USER_NOT_FOUND)
    return user


def user_code_next(*, organization_id: int) -> str:
    """One more than the highest numeric code in the organization, zero-padded ("0001" for none)."""
    highest = Membership.objects.filter(
        organization_id=organization_id, code__isnull=False
    ).aggregate(highest=Max(Cast("code", BigIntegerField())))["highest"]
    return format_code((highest or 0) + 1)


def format_code(number: int) -> str:
    return str(number).zfill(CODE_WIDTH)
