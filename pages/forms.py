"""The pages' forms. The scoring workspace's: the account's ten categories (only the slots
in use), wow, and the scored members of part 2.3, prefilled from the lead. The score
service checks everything again; its errors come back inline, keyed by member. The reply
form of the call page's thread (the reply service checks everything again)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from django import forms
from django.http import QueryDict
from django.utils import timezone

from accounts.models import Account
from appointments.models import Kind
from calls.models import Call
from scoring.dates import DayField
from scoring.models import (
    CATEGORY_SLOTS,
    ChoiceKind,
    LeadType,
    Score,
    ScorecardCategory,
    ScorecardChoice,
)
from scoring.payloads import VEHICLE
from scoring.selectors import accounts_coachable_by
from scoring.services import TEXT_MEMBERS, score_values
from texting.services import MAX_BODY
from users.models import User

# Keys 1..9 then 0 toggle categories 1..10 (shown beside each).
CATEGORY_KEYS = [str(slot % 10) for slot in range(1, CATEGORY_SLOTS + 1)]
SHORT_TEXT = 255  # above this a member is a text area
LABELS = {
    "first_name": "First name",
    "last_name": "Last name",
    "alt_phone": "Phone",
    "email": "Email",
    "department": "Department",
    "call_end": "Call end",
    "alert": "Alerts",
    "lead_type": "Lead type",
    "notes": "Notes",
    "appointment_date": "Appointment date",
    "appointment_time": "Appointment time",
}


def _text(member: str) -> forms.CharField:
    limit = TEXT_MEMBERS[member]
    widget = forms.Textarea(attrs={"rows": 2}) if limit > SHORT_TEXT else None
    label = LABELS.get(member) or member.split("_")[-1].capitalize()
    return forms.CharField(
        required=False, max_length=limit, widget=widget, label=label, strip=True
    )


class ScoreForm(forms.Form):
    """Built for one call's scorecard (its ``categories`` and ``choices``, stored or the
    defaults not stored yet): its category names, guidance and lists. Given
    ``suggested`` (a call's suggestions, for a call not scored yet), the suggested values
    start the form and each field keeps its suggestion (``field.suggestion``) to show."""

    def __init__(
        self,
        *args: Any,
        categories: Iterable[ScorecardCategory],
        choices: Iterable[ScorecardChoice],
        category_names: list[str | None],
        category_points: list[int] | None = None,
        suggested: Mapping[str, Mapping[str, Any]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        guidance = {category.slot: category for category in categories}
        lists: dict[str, list[str]] = {kind: [] for kind in ChoiceKind.values}
        for choice in choices:
            lists[choice.kind].append(choice.name)
        self.categories: list[tuple[str, str, ScorecardCategory | None]] = []
        # Each category's weight, on its checkbox for the running total (static/js/
        # running-total.js), and the most points the call can earn.
        weights = list(category_points or []) + [0] * CATEGORY_SLOTS
        self.points_possible = 0
        for slot, name in enumerate(category_names, start=1):
            if not name:
                continue
            member = f"cat{slot}"
            self.fields[member] = forms.BooleanField(
                required=False,
                label=name,
                widget=forms.CheckboxInput(attrs={"data-points": weights[slot - 1]}),
            )
            self.points_possible += weights[slot - 1]
            self.categories.append(
                (member, CATEGORY_KEYS[slot - 1], guidance.get(slot))
            )
        self.fields["wow"] = forms.BooleanField(required=False, label="Wow")
        for member in ("first_name", "last_name", "alt_phone", "email"):
            self.fields[member] = _text(member)
        self.fields["lead_type"] = forms.ChoiceField(
            required=False,
            label="Lead type",
            choices=[("", "—"), *LeadType.choices],
        )
        self.fields["department"] = self._listed(
            lists[ChoiceKind.DEPARTMENT], "Department"
        )
        self.fields["call_end"] = self._listed(lists[ChoiceKind.CALL_END], "Call end")
        self.fields["alert"] = forms.MultipleChoiceField(
            required=False,
            label="Alerts",
            choices=[(name, name) for name in lists[ChoiceKind.ALERT]],
            widget=forms.CheckboxSelectMultiple,
        )
        self.fields["appointment_date"] = forms.CharField(
            required=False,
            label="Appointment date",
            widget=forms.DateInput(attrs={"type": "date"}),
        )
        self.fields["appointment_time"] = forms.CharField(
            required=False,
            label="Appointment time",
            widget=forms.TimeInput(attrs={"type": "time"}),
        )
        for which in ("called_on", "current"):
            for part in VEHICLE:
                self.fields[f"{which}_{part}"] = _text(f"{which}_{part}")
        self.fields["notes"] = _text("notes")
        self._suggest(suggested or {})

    def _suggest(self, suggested: Mapping[str, Mapping[str, Any]]) -> None:
        for member, suggestion in suggested.items():
            field = self.fields.get(member)
            if field is None:
                continue
            value = suggestion.get("value")
            if isinstance(field, forms.BooleanField):
                value = bool(value)
            elif isinstance(field, forms.ChoiceField):
                # An entry renamed or removed since the suggestion was made: not offered.
                if not field.valid_value(value):
                    continue
                if isinstance(field, forms.MultipleChoiceField):
                    value = [*self.initial.get(member, []), value]
            field.suggestion = suggestion  # type: ignore[attr-defined]
            self.initial[member] = value

    @staticmethod
    def _listed(names: list[str], label: str) -> forms.ChoiceField:
        return forms.ChoiceField(
            required=False,
            label=label,
            choices=[("", "—"), *((name, name) for name in names)],
        )

    def vehicle_fields(self, which: str) -> list[forms.BoundField]:
        return [self[f"{which}_{part}"] for part in VEHICLE]

    def values(self) -> dict[str, Any]:
        """The cleaned form as ``score_save`` takes it."""
        values = dict(self.cleaned_data)
        values["alert"] = ", ".join(values.get("alert") or [])
        return values


def score_initial(*, call: Call, score: Score | None) -> dict[str, Any]:
    """What the form starts with: the score as saved, or for a new score the lead's members."""
    if score is not None:
        initial = score_values(score)
        initial["alert"] = [
            tag.strip() for tag in score.alert.split(",") if tag.strip()
        ]
        return initial
    initial = {
        "first_name": call.first_name,
        "last_name": call.last_name,
        "alt_phone": call.phone,
        "email": call.email[: TEXT_MEMBERS["email"]],
        "department": call.department,
        "lead_type": call.lead_type if call.lead_type in LeadType.values else "",
    }
    for which in ("called_on", "current"):
        for part in VEHICLE:
            member = f"{which}_{part}"
            initial[member] = getattr(call, member)
    return initial


class ReplyForm(forms.Form):
    body = forms.CharField(
        label="Reply to the lead",
        max_length=MAX_BODY,
        strip=True,
        widget=forms.Textarea(attrs={"rows": 3}),
        error_messages={"required": "Write the text first."},
    )


DEFAULT_DAYS = 7  # the dashboard's range when none is asked for


class DashboardForm(forms.Form):
    """The dashboard's choices, from the URL: a date range and optionally one account."""

    date_from = DayField(required=False, label="From")
    date_to = DayField(required=False, label="To")
    account = forms.ModelChoiceField(
        queryset=Account.objects.none(), required=False, empty_label="Every account"
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["account"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = accounts_coachable_by(user).order_by("name")

    def choice(self) -> dict[str, Any]:
        """The range and account asked for (a choice that is not valid is left out); the
        last seven days by default."""
        data: dict[str, Any] = {}
        if self.is_bound:
            self.is_valid()  # cleaned_data keeps the fields that are valid
            data = self.cleaned_data
        last = data.get("date_to") or timezone.localdate()
        first = data.get("date_from") or last - timedelta(days=DEFAULT_DAYS - 1)
        if first > last:
            first, last = last, first
        return {"first": first, "last": last, "account": data.get("account")}

    def in_force(self, choice: dict[str, Any], *, user: User) -> DashboardForm:
        """The form to show: its date inputs carry the range ``choice`` applies (a default
        or swapped day included); a day refused stays as typed, with its error."""
        data = QueryDict(mutable=True)
        if self.is_bound:
            data.update(self.data)
        for name, day in (("date_from", choice["first"]), ("date_to", choice["last"])):
            if name not in self.errors:
                data[name] = day.isoformat()
        return DashboardForm(data, user=user)


# An appointment is set for a time from yesterday on (one made after the fact, say a
# walk-in recorded the next morning) up to a year ahead: an earlier or later one is a typo.
APPOINTMENT_PAST = timedelta(days=1)
APPOINTMENT_AHEAD = timedelta(days=366)


class AppointmentForm(forms.Form):
    """The call page's appointment: a day and a time as the dealer says them (the
    account's timezone), its kind and vehicle. ``starts_at`` is the aware moment."""

    date = forms.DateField(label="Date", widget=forms.DateInput(attrs={"type": "date"}))
    time = forms.TimeField(label="Time", widget=forms.TimeInput(attrs={"type": "time"}))
    kind = forms.ChoiceField(label="Kind", choices=Kind.choices)
    vehicle = forms.CharField(label="Vehicle", max_length=200, required=False)

    def __init__(self, *args: Any, zone: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.zone = ZoneInfo(zone)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        day, at = data.get("date"), data.get("time")
        if day is None or at is None:
            return data
        now = timezone.now()
        # Far days are refused before any sum with them (year 9999 overflows).
        if abs(day - now.date()) > APPOINTMENT_AHEAD * 2:
            raise forms.ValidationError("Enter a date within a year from today.")
        starts_at = datetime.combine(
            day, at.replace(second=0, microsecond=0), self.zone
        )
        # A time the clocks skip (02:30 on the night they go forward) is no time at all.
        local = starts_at.astimezone(UTC).astimezone(self.zone)
        if local.replace(tzinfo=None) != starts_at.replace(tzinfo=None):
            raise forms.ValidationError(
                f"{at:%H:%M} does not exist on {day:%Y-%m-%d} in {self.zone.key}: "
                "the clocks go forward then."
            )
        if starts_at < now - APPOINTMENT_PAST:
            raise forms.ValidationError(
                "That is more than a day ago: an appointment is set from yesterday on."
            )
        if starts_at > now + APPOINTMENT_AHEAD:
            raise forms.ValidationError("Enter a date within a year from today.")
        data["starts_at"] = starts_at
        return data


class AppointmentDayForm(forms.Form):
    """Today's appointments' day, from the URL (``?day=``)."""

    day = DayField(required=False, label="Day")
