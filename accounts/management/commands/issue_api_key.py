"""Issue, rotate or revoke API credentials and scored-data keys from the command line.

A key is printed once, to standard output, and never stored: keep it now.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Account, ApiCredential, Organization
from accounts.selectors import organization_by_ref
from accounts.services import (
    api_credential_issue,
    api_credential_revoke,
    api_key_rotate,
    scored_data_key_issue,
)

SHOWN_ONCE = (
    "Store the key now: it is shown only once and cannot be recovered, only replaced."
)


class Command(BaseCommand):
    help = (
        "Issue an API credential for an organization and print its apiuser and key once; "
        "or --rotate / --revoke a credential; or issue an account's --scored-data-account key."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--organization",
            help="Issue a credential for this organization (id or exact name).",
        )
        parser.add_argument(
            "--name", default="", help="Who holds the credential, e.g. the CRM's name."
        )
        parser.add_argument(
            "--api-user", default="", help="The apiuser to issue (default: generated)."
        )
        parser.add_argument(
            "--account",
            type=int,
            action="append",
            dest="accounts",
            metavar="ACCOUNT_ID",
            help="Narrow the credential to this account of the organization; repeat for several.",
        )
        mode = parser.add_mutually_exclusive_group()
        mode.add_argument(
            "--rotate",
            metavar="API_USER",
            help="Issue a new key; the old one works for the grace period.",
        )
        mode.add_argument(
            "--revoke", metavar="API_USER", help="Stop every key of the credential now."
        )
        mode.add_argument(
            "--scored-data-account",
            type=int,
            metavar="ACCOUNT_ID",
            help="Issue the account's scored-data key; an earlier one works for the grace period.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["rotate"]:
            self.rotate(options["rotate"])
        elif options["revoke"]:
            self.revoke(options["revoke"])
        elif options["scored_data_account"] is not None:
            self.issue_scored_data_key(options["scored_data_account"])
        elif options["organization"]:
            self.issue(
                options["organization"],
                options["name"],
                options["api_user"].strip(),
                options["accounts"] or [],
            )
        else:
            raise CommandError(
                "Say what to do: --organization, --rotate, --revoke or --scored-data-account."
            )

    def issue(
        self, organization_ref: str, name: str, api_user: str, account_ids: list[int]
    ) -> None:
        organization = _organization(organization_ref)
        if api_user and ApiCredential.objects.filter(api_user=api_user).exists():
            raise CommandError(f"The apiuser {api_user!r} is already taken.")
        if len(api_user) > ApiCredential._meta.get_field("api_user").max_length:  # type: ignore[operator]
            raise CommandError("The apiuser may not be longer than 64 characters.")
        accounts = [_account(account_id) for account_id in account_ids]
        for account in accounts:
            if account.organization_id != organization.pk:
                raise CommandError(
                    f"Account {account.pk} ({account.name}) is not in organization {organization.name!r}."
                )
        credential, key = api_credential_issue(
            organization=organization, name=name, api_user=api_user, accounts=accounts
        )
        scope = ", ".join(account.name for account in accounts) or "all accounts"
        self.stdout.write(
            f"Organization: {organization.name} (id {organization.pk}), {scope}"
        )
        self.stdout.write(f"apiuser: {credential.api_user}")
        self.stdout.write(f"apikey: {key}")
        self.stderr.write(SHOWN_ONCE)

    def rotate(self, api_user: str) -> None:
        credential = _credential(api_user)
        key = api_key_rotate(credential=credential)
        self.stdout.write(f"apiuser: {credential.api_user}")
        self.stdout.write(f"apikey: {key}")
        self.stderr.write(
            f"{SHOWN_ONCE} The previous key keeps working for {_grace()}, then stops."
        )

    def revoke(self, api_user: str) -> None:
        credential = _credential(api_user)
        count = api_credential_revoke(credential=credential)
        self.stdout.write(
            f"Revoked {count} key(s) of apiuser {credential.api_user}: they stop working now."
        )

    def issue_scored_data_key(self, account_id: int) -> None:
        account = _account(account_id)
        key = scored_data_key_issue(account=account)
        self.stdout.write(
            f"Account: {account.name} (id {account.pk}), organization {account.organization.name}"
        )
        self.stdout.write(f"scored-data key: {key}")
        self.stderr.write(
            f"{SHOWN_ONCE} An earlier key keeps working for {_grace()}, then stops."
        )


def _grace() -> str:
    return f"{settings.API_KEY_ROTATION_GRACE.total_seconds() / 3600:g} hours"


def _organization(ref: str) -> Organization:
    organization = organization_by_ref(ref)
    if organization is None:
        raise CommandError(f"No organization with id or name {ref.strip()!r}.")
    return organization


def _credential(api_user: str) -> ApiCredential:
    credential = ApiCredential.objects.filter(api_user=api_user.strip()).first()
    if credential is None:
        raise CommandError(f"No API credential with apiuser {api_user!r}.")
    return credential


def _account(account_id: int) -> Account:
    account = (
        Account.objects.select_related("organization").filter(pk=account_id).first()
    )
    if account is None:
        raise CommandError(f"No account with id {account_id}.")
    return account
