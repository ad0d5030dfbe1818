"""Admin forms for accounts and credentials: choices support staff can read, checks they can act on."""

from __future__ import annotations

from datetime import time
from typing import Any

from django import forms

from accounts.models import Account, ApiCredential, Organization, Team
from accounts.schedules import WEEKDAYS, timezone_names
from accounts.services import (
    ForeignAccountError,
    NumberTakenError,
    account_numbers_check,
    api_credential_accounts_check,
)
from core.phones import to_e164

# The hours a new schedule day is offered with, for accounts and users alike.
DEFAULT_DAY_START = time(9)
DEFAULT_DAY_END = time(17)


def timezone_choice_field(**kwargs: Any) -> forms.ChoiceField:
    """A select of every IANA timezone (Area/City) instead of free text."""
    return forms.ChoiceField(
        choices=[(name, name) for name in sorted(timezone_names())], **kwargs
    )


class AccountChoiceField(forms.ModelMultipleChoiceField):
    """Accounts labelled with their organization: dealer names repeat across organizations."""

    def label_from_instance(self, obj: Account) -> str:  # type: ignore[override]
        return f"{obj.organization.name} / {obj.name}"


class TeamChoiceField(forms.ModelMultipleChoiceField):
    """Teams labelled with their account: every account has its own "Sales"."""

    def label_from_instance(self, obj: Team) -> str:  # type: ignore[override]
        return f"{obj.account.name} / {obj.name}"


class CredentialAccountsField(AccountChoiceField):
    """The accounts a credential is narrowed to. Validated against every account, so an account
    of another organization reaches ``clean()`` and gets the service's own refusal."""

    def __init__(self) -> None:
        super().__init__(
            queryset=Account.objects.select_related("organization"),
            required=False,
            widget=forms.SelectMultiple(attrs={"size": 8}),
            help_text="Leave empty for every account of the organization.",
        )

    def offer(self, organization_id: int | None) -> None:
        """List only ``organization_id``'s accounts; with none chosen yet, every account
        grouped under its organization's name."""
        accounts = Account.objects.select_related("organization").order_by(
            "organization__name", "name"
        )
        if organization_id is not None:
            self.choices = [
                (a.pk, a.name) for a in accounts.filter(organization_id=organization_id)
            ]
            return
        groups: dict[str, list[tuple[int, str]]] = {}
        for account in accounts:
            groups.setdefault(account.organization.name, []).append(
                (account.pk, account.name)
            )
        self.choices = list(groups.items())


def _organization_id(value: Any) -> int | None:
    if isinstance(value, Organization):
        return value.pk
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


class CredentialAccountsForm(forms.ModelForm):
    """Narrowing a credential: offers its organization's accounts and refuses any other."""

    accounts = CredentialAccountsField()

    def organization(self) -> Organization | None:
        raise NotImplementedError

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = self.organization()
        if organization is not None and "accounts" in cleaned:
            try:
                api_credential_accounts_check(
                    organization=organization, accounts=list(cleaned["accounts"])
                )
            except ForeignAccountError as error:
                self.add_error(
                    "accounts",
                    f"{error} Not accounts of {organization}: {', '.join(error.names)}.",
                )
        if organization is not None and "accounts" in self.fields:
            # Shown again with errors: from now on only the organization's own accounts.
            field = self.fields["accounts"]
            assert isinstance(field, CredentialAccountsField)
            field.offer(organization.pk)
        return cleaned


class ApiCredentialAddForm(CredentialAccountsForm):
    """Issue a credential: the admin only collects the choices, ``api_credential_issue`` does the rest.

    The account picker lists the chosen organization's accounts (``?organization=<id>`` on the
    add page, or the organization posted); before one is chosen, every account under its
    organization's name. An account of another organization is refused on the form."""

    api_user = forms.CharField(
        label="API user",
        max_length=64,
        required=False,
        help_text="The integrator's apiuser. Leave blank to generate one from the organization's name.",
    )

    class Meta:
        model = ApiCredential
        fields = ["organization", "name", "api_user", "accounts"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "accounts" in self.fields:
            chosen = (
                self.data.get("organization")
                if self.is_bound
                else self.initial.get("organization")
            )
            field = self.fields["accounts"]
            assert isinstance(field, CredentialAccountsField)
            field.offer(_organization_id(chosen))
            if _organization_id(chosen) is None:
                field.help_text = (
                    "Leave empty for every account of the organization. To narrow the credential, "
                    "pick accounts of the organization chosen above only."
                )

    def organization(self) -> Organization | None:
        return self.cleaned_data.get("organization")

    def clean_api_user(self) -> str:
        api_user = self.cleaned_data["api_user"].strip()
        if api_user and ApiCredential.objects.filter(api_user=api_user).exists():
            raise forms.ValidationError("This API user is already taken.")
        return api_user


class ApiCredentialChangeForm(CredentialAccountsForm):
    """Rename a credential or change its accounts (through ``api_credential_update``); its
    keys change only through the key actions."""

    class Meta:
        model = ApiCredential
        fields = ["name", "accounts"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and "accounts" in self.fields:
            field = self.fields["accounts"]
            assert isinstance(field, CredentialAccountsField)
            field.offer(self.instance.organization_id)

    def organization(self) -> Organization | None:
        return self.instance.organization if self.instance.pk else None


class AccountForm(forms.ModelForm):
    """An account, with its caller ID read as the APIs read phone numbers: E.164, or national
    in the account's country."""

    caller_id = forms.CharField(
        label="Caller ID number",
        max_length=32,
        required=False,
        help_text="Shown to leads. E.164 (+13035550100) or a national number of the account's "
        "country ((303) 555-0100); stored in E.164.",
    )

    class Meta:
        model = Account
        fields = [
            "organization",
            "name",
            "is_active",
            "is_test",
            "address",
            "city",
            "postal_code",
            "country",
            "timezone",
            "caller_id",
            "schedule_active",
        ]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        raw = (cleaned.get("caller_id") or "").strip()
        if not raw or "caller_id" not in self.changed_data:
            # An unchanged number is the stored E.164 one: no reason to refuse the page over it.
            return cleaned
        country = cleaned.get("country") or (
            self.instance.country_code if self.instance.pk else None
        )
        number = to_e164(raw, str(country) if country else None)
        if number is None:
            self.add_error(
                "caller_id",
                f"“{raw}” is not a phone number. Enter it in E.164 (+13035550100) or as a "
                f"national number of the account's country{f' ({country})' if country else ''}.",
            )
        else:
            cleaned["caller_id"] = number
            organization = cleaned.get("organization") or (
                self.instance.organization if self.instance.pk else None
            )
            if organization is not None:
                number_taken_check(self, "caller_id", organization.pk, number)
        return cleaned


def holders_named(error: NumberTakenError) -> str:
    """The refusal with the accounts holding the number, by organization: support staff
    (the admin's only users) need them to settle it; no tenant ever sees this."""
    names = ", ".join(f"{a.organization.name} / {a.name}" for a in error.holders)
    return f"{error.messages[0]} Used by: {names}."


def number_taken_check(
    form: forms.BaseForm, field: str, organization_id: int, number: str
) -> None:
    """Put the refusal of a number another organization uses on ``field`` of ``form``."""
    try:
        account_numbers_check(organization_id=organization_id, numbers=[number])
    except NumberTakenError as error:
        form.add_error(field, holders_named(error))


BLANK_TIMES = "Enter a start and an end time, or untick the day."
HALF_BLANK_TIMES = "Enter a start and an end time, or clear both to leave the day out."
BLANK_TIMES_STORED = "Enter a start and an end time, or tick Delete to remove the day."


def schedule_day_initial(missing: list[int]) -> list[dict[str, Any]]:
    """The rows offered for the weekdays ``missing`` from a schedule, at the default hours.
    A schedule with no day yet is offered as a whole week, ticked: saved as shown, it is
    stored as shown. On a schedule that has days, a missing day is a day off, so its row is
    offered unticked and stores nothing unless support ticks it or changes its hours."""
    ticked = len(missing) == len(WEEKDAYS)
    return [
        {
            "weekday": day,
            "active": ticked,
            "start_time": DEFAULT_DAY_START,
            "end_time": DEFAULT_DAY_END,
        }
        for day in missing
    ]


class ScheduleDayForm(forms.ModelForm):
    """One day of a weekly schedule (account or user). A row on screen is never dropped in
    silence: a ticked day is stored or refused with a message on its row."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("start_time", "end_time"):
            if name in self.fields:
                # Blank times get one message for the row, in clean(), not two "required"s.
                self.fields[name].required = False
                # The schedule's own local time: a plain HH:MM box, not the admin's clock
                # widget, whose "You are N hours ahead of server time" would be wrong here.
                self.fields[name].widget = forms.TimeInput(
                    format="%H:%M", attrs={"size": 6, "placeholder": "HH:MM"}
                )

    def _raw(self, name: str) -> Any:
        return self[name].data if name in self.fields else None

    def has_changed(self) -> bool:
        """Whether a new row is saved (an unchanged new row is skipped by the formset). A ticked
        day always is, prefilled hours and all; an unticked day with no times never is."""
        if self.instance.pk is not None:
            return super().has_changed()
        if self._raw("active"):
            return True
        if not self._raw("start_time") and not self._raw("end_time"):
            return False
        return super().has_changed()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        start, end = cleaned.get("start_time"), cleaned.get("end_time")
        times_ok = not {"start_time", "end_time"} & set(self.errors)
        if times_ok and (start is None or end is None):
            # Keep a stored day's times on the instance: the page still shows it by name.
            for name in ("start_time", "end_time"):
                if cleaned.get(name) is None:
                    cleaned.pop(name, None)
            if self.instance.pk is not None:
                raise forms.ValidationError(BLANK_TIMES_STORED)
            raise forms.ValidationError(
                BLANK_TIMES if cleaned.get("active") else HALF_BLANK_TIMES
            )
        if start is not None and end is not None and end <= start:
            # An error on the field also skips the model's own check, which would say the same tersely.
            self.add_error(
                "end_time",
                "The day must end after it starts; an end of 23:59 means until midnight.",
            )
        return cleaned
