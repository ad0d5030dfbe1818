"""Every write to users: create, update, delete. The API, the admin and seed_demo call these.

Input is the User API's validated data with model names (``first_name``, ``account_ids``...).
References to accounts, teams, templates, usernames and codes are checked here, against
the database, and reported in the interface's validation shape.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.auth.models import Group, Permission
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet

from accounts.models import Account, ApiCredential, Organization, Team
from accounts.signals import duty_changed
from core.api import ValidationFailed
from users.models import Membership, User, UserScheduleDay
from users.pictures import PictureError, fetch_picture
from users.selectors import accounts_assignable, format_code, user_code_next

DEFAULT_TEMPLATE = "Agent"
PICTURE_DIR = "profile-pictures/"
TAKEN_USERNAME = "The username has already been taken."
# Part 8's limit: the API's input checks a username sent, ``_check`` also the email
# address it defaults to (the column itself holds 150).
USERNAME_MAX_LENGTH = 75
LONG_USERNAME = (
    f"The username may not be greater than {USERNAME_MAX_LENGTH} characters."
)
TAKEN_CODE = "The code has already been taken."
# A user's plain members, copied as given (the API's and the admin's, by model name).
AGENT_FIELDS = (
    "first_name",
    "last_name",
    "email",
    "phone_number",
    "company_role",
    "bio",
    "timezone",
    "country",
    "twelve_hour_time_format",
)


def user_create(
    *,
    organization: Organization,
    data: dict[str, Any],
    credential: ApiCredential | None = None,
) -> User:
    """Create a user in ``organization`` with the documented defaults; codes never collide.
    A ``credential`` (the User API's caller) assigns only accounts (and teams) it reaches."""
    data = {"username": data["email"], "permission_template": DEFAULT_TEMPLATE, **data}
    assignable = accounts_assignable(organization=organization, credential=credential)
    accounts = _check(assignable=assignable, user=None, data=data)
    first = accounts[0]
    data.setdefault("timezone", first.timezone)
    data.setdefault("country", first.country_name)
    with (
        _stored_picture(data) as picture_name,
        _unique_violations(),
        transaction.atomic(),
    ):
        code = user_code_allocate(
            organization_id=organization.pk, wanted=data.get("code")
        )
        user = User(username=data["username"], profile_picture=picture_name)
        _assign(user, data)
        if data.get("password"):
            user.set_password(data["password"])
        else:
            user.set_unusable_password()
        user.save()
        Membership.objects.create(user=user, organization=organization, code=code)
        user.accounts.set(accounts)
        user.teams.set(
            data["team_ids"] if "team_ids" in data else _all_team_ids(accounts)
        )
        if "schedule" in data:
            _replace_schedule(user, data["schedule"])
        else:
            _copy_account_schedule(user, first)
        user.groups.set([Group.objects.get(name=data["permission_template"])])
        duty_changed.send(sender=User, agent_ids=[user.pk])
    return user


def user_update(
    *,
    user: User,
    organization: Organization,
    data: dict[str, Any],
    credential: ApiCredential | None = None,
) -> User:
    """Change only the supplied members; ``account_ids``, ``team_ids`` and ``schedule`` replace
    what the caller reaches: a ``credential`` narrowed to some accounts leaves the user's
    other accounts and their teams as they are."""
    assignable = accounts_assignable(organization=organization, credential=credential)
    accounts = _check(assignable=assignable, user=user, data=data)
    old_picture = user.profile_picture.name if "profile_picture" in data else ""
    with (
        _stored_picture(data) as picture_name,
        _unique_violations(),
        transaction.atomic(),
    ):
        joining = not Membership.objects.filter(
            user=user, organization=organization
        ).exists()
        if joining and accounts:
            # Accounts of an organization make the user its member, with a code (the admin
            # assigns accounts of any organization; the API only its own, where it is one).
            Membership.objects.create(
                user=user,
                organization=organization,
                code=user_code_allocate(
                    organization_id=organization.pk, wanted=data.get("code")
                ),
            )
        elif "code" in data:
            membership = Membership.objects.get(user=user, organization=organization)
            membership.code = user_code_allocate(
                organization_id=organization.pk,
                wanted=data["code"],
                keep=membership.code,
            )
            membership.save(update_fields=["code"])
        if "username" in data:
            user.username = data["username"]
        _assign(user, data)
        if data.get("password"):
            user.set_password(data["password"])
        if "profile_picture" in data:
            user.profile_picture.name = picture_name
        user.save()
        # Only the accounts and teams the caller reaches are replaced (this organization's,
        # or a narrowed credential's); other organizations' and other accounts' stay.
        if "account_ids" in data:
            user.accounts.set([*user.accounts.exclude(pk__in=assignable), *accounts])
            if "team_ids" not in data:
                user.teams.set(
                    user.teams.filter(
                        Q(account__in=accounts) | ~Q(account__in=assignable)
                    )
                )
        if "team_ids" in data:
            user.teams.set(
                [*user.teams.exclude(account__in=assignable), *data["team_ids"]]
            )
        if "schedule" in data:
            _replace_schedule(user, data["schedule"])
        if "permission_template" in data:
            user.groups.set([Group.objects.get(name=data["permission_template"])])
        if old_picture:
            transaction.on_commit(lambda: _discard_picture(old_picture))
        duty_changed.send(sender=User, agent_ids=[user.pk])
    return user


@transaction.atomic
def user_update_unaffiliated(*, user: User, data: dict[str, Any]) -> User:
    """Store a user of no organization (support staff) as the admin's form changed them:
    with no organization there are no accounts, teams or codes to scope or check."""
    user.save()
    if "permission_template" in data:
        user.groups.set([Group.objects.get(name=data["permission_template"])])
    return user


@transaction.atomic
def user_access_set(
    *,
    user: User,
    groups: Iterable[Group] | None = None,
    permissions: Iterable[Permission] | None = None,
) -> None:
    """Replace a user's groups and (support staff's) own permissions, where given."""
    if groups is not None:
        user.groups.set(groups)
    if permissions is not None:
        user.user_permissions.set(permissions)


@transaction.atomic
def user_memberships_update(
    *,
    save: Iterable[Membership] = (),
    delete: Iterable[Membership] = (),
) -> None:
    """Add or change a user's organization memberships and remove others; a membership
    without a code takes its organization's next one."""
    for membership in delete:
        membership.delete()
    for membership in save:
        if membership.code is None:
            membership.code = user_code_allocate(
                organization_id=membership.organization_id
            )
        membership.save()


@transaction.atomic
def user_delete(*, user: User) -> None:
    """Delete the user, its schedule and memberships for good, then its stored picture."""
    picture = user.profile_picture.name
    user.delete()
    if picture:
        transaction.on_commit(lambda: _discard_picture(picture))


def _check(
    *, assignable: QuerySet[Account], user: User | None, data: dict[str, Any]
) -> list[Account]:
    """Check the references in ``data`` against the database and the ``assignable`` accounts;
    all problems are reported at once. Returns the user's accounts among the assignable ones
    once the change is made."""
    errors: dict[str, list[str]] = {}
    accounts: list[Account] = (
        list(user.accounts.filter(pk__in=assignable)) if user else []
    )
    if "account_ids" in data:
        found = {a.pk: a for a in assignable.filter(pk__in=data["account_ids"])}
        for index, account_id in enumerate(data["account_ids"]):
            if account_id not in found:
                errors[f"accountIds.{index}"] = [
                    f"The selected account ids.{index} is invalid."
                ]
        accounts = list(
            {found[i].pk: found[i] for i in data["account_ids"] if i in found}.values()
        )
    if "team_ids" in data:
        valid_teams = set(
            Team.objects.filter(
                account__in=accounts, pk__in=data["team_ids"]
            ).values_list("pk", flat=True)
        )
        for index, team_id in enumerate(data["team_ids"]):
            if team_id not in valid_teams:
                errors[f"teams.{index}"] = [f"The selected teams.{index} is invalid."]
    if "username" in data and len(data["username"]) > USERNAME_MAX_LENGTH:
        # A username defaults to the email address, which may be longer (255).
        errors["username"] = [LONG_USERNAME]
    elif "username" in data and _username_taken(data["username"], user):
        errors["username"] = [TAKEN_USERNAME]
    if (
        "permission_template" in data
        and not Group.objects.filter(name=data["permission_template"]).exists()
    ):
        errors["permissionTemplate"] = ["The selected permission template is invalid."]
    if errors:
        raise ValidationFailed(errors)
    return accounts


@contextmanager
def _stored_picture(data: dict[str, Any]) -> Iterator[str]:
    """Download and store ``profile_picture`` before the transaction (slow I/O holds no locks);
    yields the stored name ("" for none) and deletes the file again if the write fails."""
    url = data.get("profile_picture")
    if not url:
        yield ""
        return
    try:
        picture = fetch_picture(url)
    except PictureError as error:
        raise ValidationFailed.one("profilePicture", str(error)) from error
    name = default_storage.save(
        f"{PICTURE_DIR}{uuid.uuid4().hex}.{picture.extension}",
        ContentFile(picture.content),
    )
    try:
        yield name
    except BaseException:
        _discard_picture(name)
        raise


@contextmanager
def _unique_violations() -> Iterator[None]:
    """A unique constraint lost to a concurrent request gets the same answer as the checks above."""
    try:
        yield
    except IntegrityError as error:
        if "user_code_unique_in_org" in str(error):
            raise ValidationFailed.one("code", TAKEN_CODE) from error
        if "username" in str(error):
            raise ValidationFailed.one("username", TAKEN_USERNAME) from error
        raise


def _username_taken(username: str, user: User | None) -> bool:
    others = User.objects.filter(username=username)
    return (others.exclude(pk=user.pk) if user else others).exists()


def user_code_allocate(
    *, organization_id: int, wanted: str | None = None, keep: str | None = None
) -> str:
    """The user code to store: ``wanted`` if free, else ``keep``, else the next one. Locks the
    organization row, so concurrent allocations (API, admin) queue up and never collide.
    Call it inside the transaction that saves the code."""
    Organization.objects.select_for_update().filter(pk=organization_id).first()
    if wanted is None:
        return (
            keep
            if keep is not None
            else user_code_next(organization_id=organization_id)
        )
    code = format_code(int(wanted))
    if (
        code != keep
        and Membership.objects.filter(
            organization_id=organization_id, code=code
        ).exists()
    ):
        raise ValidationFailed.one("code", TAKEN_CODE)
    return code


def _assign(user: User, data: dict[str, Any]) -> None:
    for field in AGENT_FIELDS:
        if field in data:
            # null clears a text member; the API shows an empty one as null
            setattr(user, field, "" if data[field] is None else data[field])


def _discard_picture(name: str) -> None:
    if name:
        default_storage.delete(name)


def _all_team_ids(accounts: Iterable[Account]) -> list[int]:
    return list(
        Team.objects.filter(account__in=list(accounts)).values_list("pk", flat=True)
    )


def _replace_schedule(user: User, schedule: dict[str, Any] | None) -> None:
    UserScheduleDay.objects.filter(user=user).delete()
    user.schedule_active = None if schedule is None else schedule["active"]
    user.save(update_fields=["schedule_active"])
    if schedule is not None:
        UserScheduleDay.objects.bulk_create(
            UserScheduleDay(user=user, weekday=i, **day)
            for i, day in enumerate(schedule["days"])
        )


def _copy_account_schedule(user: User, account: Account) -> None:
    days = list(account.schedule_days.all())
    if not days:
        return
    user.schedule_active = account.schedule_active
    user.save(update_fields=["schedule_active"])
    UserScheduleDay.objects.bulk_create(
        UserScheduleDay(
            user=user,
            weekday=d.weekday,
            active=d.active,
            start_time=d.start_time,
            end_time=d.end_time,
        )
        for d in days
    )
