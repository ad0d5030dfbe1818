"""Support's forms for agents: what an agent needs, checked as the User API checks it.

The forms only collect and check; the admin hands the result to ``users.services``
(``user_create`` / ``user_update``), which also makes the memberships and user codes.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.forms import UserChangeForm as BaseUserChangeForm
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password

from accounts.forms import AccountChoiceField, TeamChoiceField
from accounts.models import Account, Team
from core.phones import to_e164
from users.models import User
from users.services import AGENT_FIELDS, DEFAULT_TEMPLATE, TAKEN_USERNAME

SCHEDULE_COPY = "account"
SCHEDULE_NONE = "none"


def template_choices() -> list[tuple[str, str]]:
    """The permission templates (the groups; the User API's ``permissionTemplate``)."""
    return [
        (name, name)
        for name in Group.objects.order_by("name").values_list("name", flat=True)
    ]


def accounts_field(*, required: bool) -> AccountChoiceField:
    return AccountChoiceField(
        queryset=Account.objects.select_related("organization").order_by(
            "organization__name", "name"
        ),
        required=required,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text="Accounts of another organization make the agent a member of it, with a user "
        "code. The first account listed sets the country phone numbers are read in.",
    )


def teams_field(*, help_text: str) -> TeamChoiceField:
    return TeamChoiceField(
        queryset=Team.objects.select_related("account__organization").order_by(
            "account__organization__name", "account__name", "name"
        ),
        required=False,
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text=help_text,
    )


def phone_field() -> forms.CharField:
    return forms.CharField(
        label="Phone number",
        max_length=32,
        required=False,
        help_text="The phone that rings. E.164 (+13035550100) or a national number of the first "
        "account's country ((303) 555-0100); stored in E.164.",
    )


class AgentFormMixin(forms.Form):
    """Checks shared by the add and change forms: phone numbers as the APIs read them, teams of
    the chosen accounts."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        accounts = list(cleaned.get("accounts") or [])
        if "teams" in cleaned and "accounts" in cleaned:
            account_ids = {account.pk for account in accounts}
            outside = [
                f"{team.account.name} / {team.name}"
                for team in cleaned["teams"]
                if team.account_id not in account_ids
            ]
            if outside:
                self.add_error(
                    "teams",
                    f"Teams must belong to the chosen accounts; not so: {', '.join(outside)}.",
                )
        raw = (cleaned.get("phone_number") or "").strip()
        stored = getattr(getattr(self, "instance", None), "pk", None)
        if stored and "phone_number" not in self.changed_data:
            # Unchanged: the stored E.164 number, whatever account comes first now.
            return cleaned
        if raw and "phone_number" not in self.errors:
            region = accounts[0].country_code if accounts else None
            number = to_e164(raw, region)
            if number is None:
                where = (
                    f"a national number of {accounts[0].country_name}"
                    if accounts
                    else "a national number once an account is chosen"
                )
                self.add_error(
                    "phone_number",
                    f"“{raw}” is not a phone number. Enter it in E.164 (+13035550100) or as {where}.",
                )
            else:
                cleaned["phone_number"] = number
        elif "phone_number" in cleaned:
            cleaned["phone_number"] = ""
        return cleaned


class AgentAddForm(AgentFormMixin, forms.ModelForm):
    """A new agent, with what ``user_create`` needs: the defaults are the User API's."""

    email = forms.EmailField(label="Email address", max_length=255)
    phone_number = phone_field()
    accounts = accounts_field(required=True)
    teams = teams_field(help_text="Leave empty for every team of the chosen accounts.")
    permission_template = forms.ChoiceField(
        choices=template_choices,
        initial=DEFAULT_TEMPLATE,
        help_text="What the agent may do: the User API's permissionTemplate (a group).",
    )
    schedule = forms.ChoiceField(
        label="Weekly schedule",
        choices=[
            (
                SCHEDULE_COPY,
                "A copy of the first account's schedule (change it on the next page)",
            ),
            (SCHEDULE_NONE, "None of their own: the account's schedule applies"),
        ],
        initial=SCHEDULE_COPY,
        widget=forms.RadioSelect,
    )
    username = forms.CharField(
        max_length=75,
        required=False,
        help_text="Leave blank to use the email address. Compared case-sensitively.",
    )
    password1 = forms.CharField(
        label="Password",
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
        help_text="Optional: only for an agent who signs in to hear their calls. At least one "
        "digit, one lowercase and one uppercase letter, and one special character.",
    )
    password2 = forms.CharField(
        label="Password again",
        required=False,
        strip=False,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )

    class Meta:
        model = User
        fields = [
            "first_name",
            "last_name",
            "email",
            "phone_number",
            "accounts",
            "teams",
            "permission_template",
            "schedule",
            "username",
            "password1",
            "password2",
        ]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name in ("first_name", "last_name"):
            if name in self.fields:
                self.fields[name].required = True

    def _post_clean(self) -> None:
        # The user is built by user_create, not from this form: no model validation here.
        return

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        username = cleaned.get("username") or cleaned.get("email")
        if username and User.objects.filter(username=username).exists():
            self.add_error(
                "username",
                TAKEN_USERNAME
                if cleaned.get("username")
                else f"{TAKEN_USERNAME} It is this email address: enter another username.",
            )
        first, second = cleaned.get("password1"), cleaned.get("password2")
        if first or second:
            if first != second:
                self.add_error("password2", "The two passwords differ.")
            else:
                try:
                    validate_password(first or "")
                except forms.ValidationError as error:
                    self.add_error("password1", error)
        return cleaned

    def service_data(self) -> dict[str, Any]:
        """``user_create``'s members, without accounts and teams (the admin splits those by
        organization)."""
        cleaned = self.cleaned_data
        data: dict[str, Any] = {
            "first_name": cleaned["first_name"],
            "last_name": cleaned["last_name"],
            "email": cleaned["email"],
            "permission_template": cleaned["permission_template"],
        }
        if cleaned.get("username"):
            data["username"] = cleaned["username"]
        if cleaned.get("phone_number"):
            data["phone_number"] = cleaned["phone_number"]
        if cleaned.get("password1"):
            data["password"] = cleaned["password1"]
        if cleaned["schedule"] == SCHEDULE_NONE:
            data["schedule"] = None
        return data


class AgentChangeForm(AgentFormMixin, BaseUserChangeForm):
    """An agent's page. Superusers also get Django's own fields (username, staff, superuser,
    groups, permissions); a changed group list and a changed template would contradict."""

    phone_number = phone_field()
    accounts = accounts_field(required=False)
    teams = teams_field(help_text="Teams of the chosen accounts.")
    permission_template = forms.ChoiceField(
        choices=template_choices,
        required=False,
        help_text="What the agent may do: the User API's permissionTemplate (a group).",
    )

    class Meta(BaseUserChangeForm.Meta):
        model = User
        fields = "__all__"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if "is_active" in self.fields:
            self.fields[
                "is_active"
            ].help_text = "Untick to stop calls to the agent and their sign-in, rather than deleting them."
        field = self.fields["permission_template"]
        assert isinstance(field, forms.ChoiceField)
        names = {name for name, _ in template_choices()}
        current = (
            [g.name for g in self.instance.groups.all()] if self.instance.pk else []
        )
        field.initial = next((name for name in current if name in names), "")
        if not field.initial:
            field.choices = [("", "—"), *template_choices()]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        if (
            "groups" in self.fields
            and "groups" in self.changed_data
            and "permission_template" in self.changed_data
        ):
            self.add_error(
                "permission_template",
                "You changed both the permission template and the groups: change one of them.",
            )
        return cleaned

    def service_data(self) -> dict[str, Any]:
        """``user_update``'s plain members as chosen on the page (accounts and teams apart)."""
        cleaned = self.cleaned_data
        data = {name: cleaned[name] for name in AGENT_FIELDS if name in cleaned}
        if "username" in self.fields and "username" in self.changed_data:
            data["username"] = cleaned["username"]
        if "permission_template" in self.changed_data and cleaned.get(
            "permission_template"
        ):
            data["permission_template"] = cleaned["permission_template"]
        return data
