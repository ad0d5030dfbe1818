"""Admin forms for vendor registrations, parsing rules and the rule tester: choices support
staff can read, and checks that say what to fix."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from accounts.models import Account, ApiCredential, Organization, Team
from leads.adf import FIELDS
from leads.models import Operator, ParsingRule, RuleCondition, VendorRegistration

# Operators that test only whether the field has a value.
VALUELESS = frozenset({Operator.PRESENT, Operator.ABSENT})


class AccountChoiceField(forms.ModelChoiceField):
    """Accounts labelled with their organization: dealer names repeat across organizations."""

    def label_from_instance(self, obj: Account) -> str:  # type: ignore[override]
        return f"{obj.organization.name} / {obj.name}"


class TeamChoiceField(forms.ModelChoiceField):
    """Teams labelled with their account: every account has its own "Sales"."""

    def label_from_instance(self, obj: Team) -> str:  # type: ignore[override]
        return f"{obj.account.name} / {obj.name}"


class CredentialChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: ApiCredential) -> str:  # type: ignore[override]
        holder = f" ({obj.name})" if obj.name else ""
        return f"{obj.organization.name} / {obj.api_user}{holder}"


def account_field(**kwargs: Any) -> AccountChoiceField:
    return AccountChoiceField(
        queryset=Account.objects.select_related("organization"), **kwargs
    )


class VendorRegistrationForm(forms.ModelForm):
    """A registration's organization is copied from its account (it is what the database's
    per-organization uniqueness is enforced on), and a clash is named, not a database error."""

    account = account_field()

    class Meta:
        model = VendorRegistration
        fields = ["account", "vendor_id", "vendor_name", "is_active"]
        help_texts = {
            "vendor_id": "The lead's vendor/id. Unique within the organization.",
            "vendor_name": "The lead's vendor/vendorname, used when a lead has no vendor id. "
            "Unique within the organization (case-insensitive).",
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        account = cleaned.get("account")
        vendor_id = cleaned.get("vendor_id") or ""
        vendor_name = cleaned.get("vendor_name") or ""
        if (
            not vendor_id
            and not vendor_name
            and not self.has_error("vendor_id")
            and not self.has_error("vendor_name")
        ):
            # On the field, so the model's terser check of the same rule is skipped.
            self.add_error("vendor_id", "Give a vendor ID, a vendor name, or both.")
        if account is None:
            return cleaned
        self.instance.organization = account.organization
        others = VendorRegistration.objects.filter(
            organization_id=account.organization_id
        ).select_related("account")
        if self.instance.pk:
            others = others.exclude(pk=self.instance.pk)
        if vendor_id and (clash := others.filter(vendor_id=vendor_id).first()):
            self.add_error(
                "vendor_id",
                f"Vendor ID {vendor_id!r} is already registered in {account.organization.name} "
                f"(for {clash.account.name}). A vendor ID routes to one account per organization.",
            )
        if vendor_name and (
            clash := others.filter(vendor_name__iexact=vendor_name).first()
        ):
            self.add_error(
                "vendor_name",
                f"Vendor name {clash.vendor_name!r} is already registered in "
                f"{account.organization.name} (for {clash.account.name}). A vendor name routes to "
                "one account per organization.",
            )
        return cleaned


class ParsingRuleForm(forms.ModelForm):
    """A rule's team must be one of the rule's account's teams."""

    account = account_field()
    team = TeamChoiceField(
        queryset=Team.objects.select_related("account").order_by(
            "account__name", "name"
        ),
        required=False,
        help_text="The agents the call is offered to. Empty: every agent of the account.",
    )

    class Meta:
        model = ParsingRule
        fields = [
            "account",
            "name",
            "priority",
            "is_active",
            "action",
            "source_label",
            "department",
            "lead_type",
            "team",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk and "team" in self.fields:
            field = self.fields["team"]
            assert isinstance(field, forms.ModelChoiceField)
            field.queryset = field.queryset.filter(account_id=self.instance.account_id)  # type: ignore[union-attr]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        account, team = cleaned.get("account"), cleaned.get("team")
        if account is not None and team is not None and team.account_id != account.pk:
            self.add_error(
                "team",
                f"{team.name} is a team of {team.account.name}; choose one of {account.name}'s teams.",
            )
        return cleaned


class RuleConditionForm(forms.ModelForm):
    """One condition: a regex must compile, present/absent take no value, the rest need one.

    A new row with neither a field nor a value is blank: it is ignored (not validated, not
    saved), whatever its operator says, so the blank row the page offers never stands in
    the way of a rule without conditions."""

    field = forms.ChoiceField(
        # Blank first: a browser posts an untouched select's first option.
        choices=[
            ("", "---------"),
            *((path, f"{label} ({path})") for path, label in FIELDS.items()),
        ],
        label="ADF field",
    )

    class Meta:
        model = RuleCondition
        fields = ["field", "operator", "value"]
        help_texts = {
            "value": "Compared case-insensitively. Not used by present and absent. "
            "A regex matches anywhere in the field (anchor it with ^ and $).",
        }

    def has_changed(self) -> bool:
        if self.is_bound and self.instance.pk is None and self._is_blank():
            return False
        return super().has_changed()

    def _is_blank(self) -> bool:
        return not any(
            str(self.data.get(self.add_prefix(name)) or "").strip()
            for name in ("field", "value")
        )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        operator = cleaned.get("operator")
        value = (cleaned.get("value") or "").strip()
        if operator in VALUELESS:
            # Present/absent test the field alone; a stray value would only mislead.
            cleaned["value"] = ""
        elif operator and not value:
            self.add_error(
                "value",
                f"“{operator}” needs a value to compare with (use “absent” to match an empty field).",
            )
        elif operator == Operator.REGEX:
            try:
                re.compile(value, re.IGNORECASE)
            except re.error as error:
                self.add_error("value", f"Not a valid regular expression: {error}.")
        return cleaned


class RuleTesterForm(forms.Form):
    """What the rule tester runs: a pasted document, as an organization's (or a credential's) lead."""

    xml = forms.CharField(
        label="ADF document",
        widget=forms.Textarea(
            attrs={
                "rows": 18,
                "cols": 100,
                "spellcheck": "false",
                "class": "vLargeTextField",
            }
        ),
        strip=False,
    )
    organization = forms.ModelChoiceField(
        queryset=Organization.objects.all(),
        required=False,
        help_text="Route as a credential reaching every account of this organization would.",
    )
    credential = CredentialChoiceField(
        queryset=ApiCredential.objects.select_related("organization"),
        required=False,
        label="or credential",
        help_text="Route as this credential would (it may be narrowed to some accounts).",
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        organization, credential = (
            cleaned.get("organization"),
            cleaned.get("credential"),
        )
        if (
            organization is None
            and credential is None
            and not self.has_error("credential")
        ):
            raise forms.ValidationError("Choose an organization or a credential.")
        if (
            organization is not None
            and credential is not None
            and credential.organization_id != organization.pk
        ):
            self.add_error(
                "credential",
                f"{credential.api_user} belongs to {credential.organization.name}, not {organization.name}.",
            )
        return cleaned
