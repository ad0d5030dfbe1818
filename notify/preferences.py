"""A manager's own alert subscriptions: what they are told of, per account they manage,
and how (the page ``/alerts/``). The same rows support edits on the account's page."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from django.db import transaction

from accounts.models import Account
from notify.models import AlertKind, AlertSubscription
from scoring.selectors import accounts_coachable_by
from users.models import User

CHANNELS = ("by_email", "by_text", "outside_hours")


@dataclass(frozen=True)
class Choice:
    account: Account
    kind: str
    label: str
    by_email: bool
    by_text: bool
    outside_hours: bool

    def field(self, channel: str) -> str:
        return f"{self.account.pk}-{self.kind}-{channel}"


def preferences_of(user: User) -> list[Choice]:
    """Each alert of each account the user manages, as they hear of it now: their own
    row, else the default (the account's managers by e-mail; others not at all)."""
    accounts = list(accounts_coachable_by(user).order_by("name", "id"))
    rows = {
        (row.account_id, row.kind): row
        for row in AlertSubscription.objects.filter(user=user, account__in=accounts)
    }
    own = set(
        user.accounts.filter(pk__in=[a.pk for a in accounts]).values_list(
            "pk", flat=True
        )
    )
    choices = []
    for account in accounts:
        for kind, label in AlertKind.choices:
            row = rows.get((account.pk, kind))
            choices.append(
                Choice(
                    account,
                    kind,
                    label,
                    row.by_email if row else account.pk in own,
                    row.by_text if row else False,
                    row.outside_hours if row else False,
                )
            )
    return choices


@transaction.atomic
def preferences_save(*, user: User, checked: Collection[str]) -> int:
    """Store the user's choices for every alert of every account they manage
    (``checked``: the field names ticked); other accounts' names are ignored. Returns
    the rows written."""
    rows = [
        AlertSubscription(
            user=user,
            account=choice.account,
            kind=choice.kind,
            **{channel: choice.field(channel) in checked for channel in CHANNELS},
        )
        for choice in preferences_of(user)
    ]
    # One upsert on the one-subscription constraint for all of them: a global manager of
    # fifty accounts saves in as many queries as a manager of one.
    AlertSubscription.objects.bulk_create(
        rows,
        update_conflicts=True,
        unique_fields=["user", "account", "kind"],
        update_fields=list(CHANNELS),
    )
    return len(rows)
