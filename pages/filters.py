"""The call browser's filters (django-filter): every one a URL parameter, so a filtered
view can be bookmarked and shared. The choices offered are scoped to the user."""

from __future__ import annotations

import re
from typing import Any

import django_filters
from django import forms
from django.contrib.postgres.search import SearchQuery, SearchVectorField
from django.db import connection
from django.db.models import F, Func, Q, QuerySet
from django.forms.models import ModelChoiceField, ModelChoiceIterator

from accounts.models import Account, Team
from calls.models import Call, CallStatus
from scoring.dates import DayField
from scoring.models import CATEGORY_SLOTS, ChoiceKind
from scoring.selectors import (
    accounts_visible_to,
    call_sources,
    category_labels,
    received_on_local_days,
    score_list_names,
    teams_visible_to,
    users_filterable_by,
)
from users.models import User

YES_NO = [("yes", "Yes"), ("no", "No")]
ANY = "Any"


def _pairs(names: list[str]) -> list[tuple[str, str]]:
    return [(name, name) for name in names]


def _yes(value: str) -> bool:
    return value == "yes"


SAID_HELP = (
    'Every word must be said; "words in quotes" as a phrase, in that order; '
    "or between alternatives; -word leaves out the calls that say it."
)
# A search box's terms: "a phrase" (its closing quote optional), or a word; either may
# start with "-" (leave out).
SAID_TERM = re.compile(r'(-?)(?:"([^"]*)"?|([^\s"]+))')


def said_anywhere(text: str) -> Q:
    """What the said search asks of a transcription without PostgreSQL's full-text
    search (the embedded default: SQLite), with websearch_to_tsquery's meaning but no
    stemming: each word or "phrase" (case-insensitive, anywhere) must appear, "-" leaves
    a term out, and ``or`` joins alternatives (binding looser than the words around it)."""
    alternatives: list[list[Q]] = [[]]
    for negated, phrase, word in SAID_TERM.findall(text):
        if not negated and word.lower() == "or":
            alternatives.append([])
            continue
        said = " ".join((phrase or word).split())
        if said and said != "-":
            found = Q(transcription__icontains=said)
            alternatives[-1].append(~found if negated else found)
    anywhere = Q()
    for terms in filter(None, alternatives):
        anywhere |= Q(*terms)
    return anywhere


class EnglishVector(Func):
    """``to_tsvector('english', transcription)`` exactly as the GIN index of
    calls/migrations/0010 is built, so PostgreSQL searches through the index."""

    function = "to_tsvector"
    template = "%(function)s('english'::regconfig, %(expressions)s)"
    output_field = SearchVectorField()


class DayFilter(django_filters.DateFilter):
    """A day of the range: only days the service accepts (scoring/dates.py)."""

    field_class = DayField


class TeamChoiceIterator(ModelChoiceIterator):
    """The teams in one query; each named with its account once they span several
    accounts (two accounts' "Sales" are otherwise the same word twice)."""

    def __iter__(self) -> Any:
        if self.field.empty_label is not None:
            yield ("", self.field.empty_label)
        teams = list(self.queryset)
        several = len({team.account_id for team in teams}) > 1
        for team in teams:
            value, label = self.choice(team)
            yield (value, f"{label} ({team.account.name})" if several else label)


class TeamChoiceField(ModelChoiceField):
    iterator = TeamChoiceIterator


class TeamFilter(django_filters.ModelChoiceFilter):
    field_class = TeamChoiceField


class CallFilter(django_filters.FilterSet):
    """Filters of the call browser and of its CSV export, for one signed-in user."""

    date_from = DayFilter(label="From", method="_later")
    date_to = DayFilter(label="To", method="_later")
    account = django_filters.ModelChoiceFilter(
        queryset=Account.objects.none(), empty_label=ANY
    )
    agent = django_filters.ModelChoiceFilter(
        queryset=User.objects.none(), empty_label=ANY
    )
    team = TeamFilter(queryset=Team.objects.none(), empty_label=ANY)
    status = django_filters.ChoiceFilter(choices=CallStatus.choices, empty_label=ANY)
    source = django_filters.ChoiceFilter(choices=[], empty_label=ANY)
    scored = django_filters.ChoiceFilter(
        choices=YES_NO, method="_scored", label="Scored", empty_label=ANY
    )
    category = django_filters.ChoiceFilter(
        choices=[],
        method="_later",
        label="Category",
        empty_label=ANY,
    )
    # Empty unless chosen, so links and exports carry no "applied=" nobody asked for; a
    # category alone still means applied (see filter_queryset).
    applied = django_filters.ChoiceFilter(
        choices=YES_NO, method="_later", label="Category applied", empty_label=ANY
    )
    wow = django_filters.ChoiceFilter(
        choices=YES_NO, method="_wow", label="Wow", empty_label=ANY
    )
    call_end = django_filters.ChoiceFilter(
        field_name="score__call_end", choices=[], label="Call end", empty_label=ANY
    )
    alert = django_filters.ChoiceFilter(
        choices=[], method="_alert", label="Alert", empty_label=ANY
    )
    appointment = django_filters.ChoiceFilter(
        choices=YES_NO, method="_appointment", label="Appointment set", empty_label=ANY
    )
    q = django_filters.CharFilter(method="_search", label="Lead name, phone or email")
    said = django_filters.CharFilter(
        method="_said",
        label="Said on the call",
        widget=forms.TextInput(
            attrs={"placeholder": 'e.g. "test drive"', "title": SAID_HELP}
        ),
    )
    suggested = django_filters.ChoiceFilter(
        choices=[("unconfirmed", "Suggested but not confirmed")],
        method="_suggested",
        label="Suggestions",
        empty_label=ANY,
    )
    sort = django_filters.OrderingFilter(
        fields=(
            ("received_at", "received"),
            ("account__name", "account"),
            ("agent__last_name", "agent"),
            ("status", "status"),
            ("source", "source"),
            ("response_time", "response"),
            ("duration", "duration"),
            ("last_name", "lead"),
        ),
        label="Sort",
    )

    class Meta:
        model = Call
        fields: list[str] = []

    def __init__(self, data: Any = None, *, user: User, **kwargs: Any) -> None:
        super().__init__(data, **kwargs)
        self.user = user
        self.accounts = accounts_visible_to(user)
        filters = self.filters
        filters["account"].queryset = self.accounts.order_by("name")
        filters["agent"].queryset = users_filterable_by(user)
        filters["team"].queryset = teams_visible_to(user).order_by(
            "account__name", "account_id", "name"
        )
        # Choices from what the user's calls and scorecards hold, read only when the form
        # is drawn or the filter is given (callable choices are lazy).
        filters["source"].extra["choices"] = lambda: _pairs(call_sources(user=user))
        filters["category"].extra["choices"] = lambda: category_labels(
            accounts=self.accounts
        )
        for name, kind in (
            ("call_end", ChoiceKind.CALL_END),
            ("alert", ChoiceKind.ALERT),
        ):
            filters[name].extra["choices"] = lambda kind=kind: _pairs(
                self._score_lists()[kind]
            )

    def _score_lists(self) -> dict[str, list[str]]:
        if not hasattr(self, "_lists"):
            self._lists = score_list_names(accounts=self.accounts, calls=self.queryset)
        return self._lists

    def _later(self, queryset: QuerySet[Call], name: str, value: Any) -> QuerySet[Call]:
        # Applied together in filter_queryset: they depend on one another.
        return queryset

    def _scored(
        self, queryset: QuerySet[Call], name: str, value: str
    ) -> QuerySet[Call]:
        return queryset.filter(score__isnull=not _yes(value))

    def _alert(self, queryset: QuerySet[Call], name: str, value: str) -> QuerySet[Call]:
        # One tag among the score's tags, separated by commas.
        return queryset.filter(
            score__alert__iregex=rf"(^|,)\s*{re.escape(value)}\s*(,|$)"
        )

    def _wow(self, queryset: QuerySet[Call], name: str, value: str) -> QuerySet[Call]:
        return queryset.filter(score__wow=_yes(value))

    def _appointment(
        self, queryset: QuerySet[Call], name: str, value: str
    ) -> QuerySet[Call]:
        # Like wow and the categories, "no" means scored without one, not "not scored".
        return queryset.filter(
            score__isnull=False, score__appointment_date__isnull=not _yes(value)
        )

    def _search(
        self, queryset: QuerySet[Call], name: str, value: str
    ) -> QuerySet[Call]:
        text = value.strip()
        if not text:
            return queryset
        found = Q()
        for word in text.split():
            digits = "".join(ch for ch in word if ch.isdigit())
            either = (
                Q(first_name__icontains=word)
                | Q(last_name__icontains=word)
                | Q(email__icontains=word)
            )
            if len(digits) >= 3:  # "303-555" finds +13035550123
                either |= Q(phone__contains=digits)
            found &= either
        return queryset.filter(found)

    def _said(self, queryset: QuerySet[Call], name: str, value: str) -> QuerySet[Call]:
        text = value.strip()
        if not text:
            return queryset
        if connection.vendor == "postgresql":
            # As a search box reads it (websearch_to_tsquery): every word, stemmed
            # ("trading" finds "trade"); "a phrase" in quotes, its words in order; or; -word.
            return queryset.alias(said_vector=EnglishVector(F("transcription"))).filter(
                said_vector=SearchQuery(text, config="english", search_type="websearch")
            )
        return queryset.filter(said_anywhere(text))

    def _suggested(
        self, queryset: QuerySet[Call], name: str, value: str
    ) -> QuerySet[Call]:
        # Suggestions wait for a person: a call with suggestions and no score yet.
        return queryset.filter(suggestions__isnull=False, score__isnull=True)

    def filter_queryset(self, queryset: QuerySet[Call]) -> QuerySet[Call]:
        queryset = super().filter_queryset(queryset)
        data = self.form.cleaned_data
        slot = data.get("category")
        if slot and 1 <= int(slot) <= CATEGORY_SLOTS:
            queryset = queryset.filter(
                **{f"score__cat{slot}": data.get("applied") != "no"}
            )
        account = data.get("account")
        return received_on_local_days(
            queryset,
            accounts=self.accounts.filter(pk=account.pk) if account else self.accounts,
            first=data.get("date_from"),
            last=data.get("date_to"),
        )
