"""Admin forms for accounts and credentials: choices support staff can read, checks they can act on."""

from __future__ import annotations

from typing import Any

from django import forms

from accounts.models import Account, ApiCredential, Team
from accounts.schedules import timezone_names


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


def _accounts_outside(organization_id: int | None, accounts: Any) -> list[str]:
    return [
        account.name
        for account in accounts or []
        if account.organization_id != organization_id
    ]


class ApiCredentialAddForm(forms.ModelForm):
    """Issue a credential: the admin only collects the choices, ``api_credential_issue`` does the rest."""

    api_user = forms.CharField(
        label="API user",
        max_length=64,
        required=False,
        help_text="The integrator's apiuser. Leave blank to generate one from the organization's name.",
    )
    accounts = AccountChoiceField(
        queryset=Account.objects.select_related("organization"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="Leave empty for every account of the organization.",
    )

    class Meta:
        model = ApiCredential
        fields = ["organization", "name", "api_user", "accounts"]

    def clean_api_user(self) -> str:
        api_user = self.cleaned_data["api_user"].strip()
        if api_user and ApiCredential.objects.filter(api_user=api_user).exists():
            raise forms.ValidationError("This API user is already taken.")
        return api_user

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization = cleaned.get("organization")
        if organization is not None:
            outside = _accounts_outside(organization.pk, cleaned.get("accounts"))
            if outside:
                self.add_error(
                    "accounts", f"Not accounts of {organization}: {', '.join(outside)}."
                )
        return cleaned


class ApiCredentialChangeForm(forms.ModelForm):
    """Rename a credential or change its accounts; its keys change only through the key actions."""

    accounts = AccountChoiceField(
        queryset=Account.objects.select_related("organization"),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 8}),
        help_text="Leave empty for every account of the organization.",
    )

    class Meta:
        model = ApiCredential
        fields = ["name", "accounts"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and "accounts" in self.fields:
            field = self.fields["accounts"]
            assert isinstance(field, forms.ModelMultipleChoiceField)
            field.queryset = Account.objects.select_related("organization").filter(
                organization_id=self.instance.organization_id
            )


class ScheduleDayForm(forms.ModelForm):
    """One day of a weekly schedule (account or user), with the end-after-start rule in words."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        start, end = cleaned.get("start_time"), cleaned.get("end_time")
        if start is not None and end is not None and end <= start:
            # An error on the field also skips the model's own check, which would say the same tersely.
            self.add_error(
                "end_time",
                "The day must end after it starts; an end of 23:59 means until midnight.",
            )
        return cleaned
