"""Support edits scorecards; scores are read-only here (scorers and coaches write them in
their pages), each shown with its revisions, also on the call's page."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import Exists, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from core.admin import ReadOnlyAdminMixin, zoned, zoned_field
from scoring.models import (
    CATEGORY_SLOTS,
    LearntSuggester,
    RollupCoverage,
    Score,
    Scorecard,
    ScorecardCategory,
    ScorecardChoice,
    ScoreRevision,
)
from scoring.rollup_build import rollup_forget


class CategoryInline(admin.TabularInline):
    model = ScorecardCategory
    fields = ["slot", "name", "guidance", "points", "phrases", "side", "within_seconds"]
    readonly_fields = ["slot"]
    extra = 0
    max_num = CATEGORY_SLOTS
    can_delete = False
    verbose_name_plural = "categories (leave a name blank for an unused slot)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class ChoiceInline(admin.TabularInline):
    model = ScorecardChoice
    fields = [
        "kind",
        "name",
        "position",
        "needs_appointment",
        "phrases",
        "side",
        "within_seconds",
    ]
    extra = 2
    verbose_name_plural = "call-end reasons, alert tags and departments"


@admin.register(Scorecard)
class ScorecardAdmin(admin.ModelAdmin):
    """Every account has one (the default, from its creation); support renames and reweighs."""

    list_display = ["account", "organization", "categories_used", "updated_at"]
    list_select_related = ["account__organization"]
    list_filter = ["account__organization"]
    search_fields = ["account__name"]
    readonly_fields = ["account", "note"]
    fields = ["account", "note"]
    inlines = [CategoryInline, ChoiceInline]

    @admin.display(description="")
    def note(self, obj: Scorecard) -> str:
        return (
            "Calls already scored keep the names and points they were scored under; "
            "changes here apply to calls scored from now on."
        )

    @admin.display(ordering="account__organization__name")
    def organization(self, obj: Scorecard) -> Any:
        return obj.account.organization

    @admin.display(description="categories used")
    def categories_used(self, obj: Scorecard) -> int:
        return sum(1 for category in obj.categories.all() if category.name)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Scorecard]:
        return super().get_queryset(request).prefetch_related("categories")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


def categories_html(score: Score) -> str:
    """Each used category by the name it was scored under, with its points, applied or not."""
    rows = [
        (
            "✔" if applied else "-",
            name,
            points,
        )
        for name, points, applied in zip(
            score.category_names, score.category_points, score.applied, strict=False
        )
        if name
    ]
    return format_html(
        "<ul style='margin:0;padding-left:1em'>{}</ul><p>wow: {}; points: {}</p>",
        format_html_join("", "<li>{} {} ({} pt)</li>", rows),
        "yes" if score.wow else "no",
        score.points,
    )


def changes_text(score: Score, changes: dict[str, list[Any]]) -> str:
    return (
        "; ".join(
            f"{score.member_label(member)}: {old!r} → {new!r}"
            for member, (old, new) in changes.items()
        )
        or "(no change)"
    )


def revisions_html(score: Score) -> str:
    items = [
        (
            zoned(revision.changed_at, score.call.account.timezone),
            revision.get_kind_display(),
            revision.changed_by_name or "someone",
            changes_text(score, revision.changes),
        )
        for revision in score.revisions.all()
    ]
    return format_html(
        "<ol style='margin:0;padding-left:1.2em'>{}</ol>",
        format_html_join("", "<li>{} · {} by {}: {}</li>", items),
    )


# A score's times read in its call's account's timezone, as the call's own do.
DEALERS = "call.account.timezone"


class ScoreInline(ReadOnlyAdminMixin, admin.StackedInline):
    """The call page shows its score, coaching and every revision."""

    model = Score
    fk_name = "call"
    can_delete = False
    # No blank form: the call admin is view-only, and Django builds the inline's forms
    # before it zeroes a view-only page's extra, so an unscored call showed an empty
    # "Score #1" with "points: 0".
    extra = 0
    fields = readonly_fields = (
        "scorer_name",
        "scored",
        "categories",
        "call_end",
        "alert",
        "department",
        "lead_type",
        "appointment_date",
        "appointment_time",
        "notes",
        "coached_by",
        "coach_notes",
        "coaching_read",
        "revisions",
    )
    scored = zoned_field("scored_at", zone=DEALERS)
    coaching_read = zoned_field("coaching_read_at", zone=DEALERS)

    @admin.display(description="categories")
    def categories(self, obj: Score) -> str:
        return categories_html(obj)

    @admin.display(description="revisions")
    def revisions(self, obj: Score) -> str:
        return revisions_html(obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Score]:
        return (
            super()
            .get_queryset(request)
            .select_related("call__account")
            .prefetch_related("revisions")
        )


class RevisionInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = ScoreRevision
    fields = readonly_fields = ("when", "kind", "changed_by_name", "changed")
    extra = 0
    when = zoned_field(
        "changed_at", zone="score.call.account.timezone", description="changed at"
    )

    @admin.display(description="changes")
    def changed(self, obj: ScoreRevision) -> str:
        return changes_text(obj.score, obj.changes)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ScoreRevision]:
        return super().get_queryset(request).select_related("score__call__account")


@admin.register(Score)
class ScoreAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["call", "account", "scorer_name", "scored", "wow", "coached_by"]
    list_select_related = ["call__account"]
    list_filter = ["call__account", "wow"]
    search_fields = ["call__id", "scorer_name", "coached_by"]
    date_hierarchy = "scored_at"
    fields = readonly_fields = (
        "call",
        "scorer_name",
        "scored",
        "categories",
        "first_name",
        "last_name",
        "alt_phone",
        "email",
        "department",
        "notes",
        "appointment_date",
        "appointment_time",
        "call_end",
        "alert",
        "lead_type",
        "current_make",
        "current_model",
        "current_year",
        "current_registration",
        "current_summary",
        "called_on_make",
        "called_on_model",
        "called_on_year",
        "called_on_registration",
        "called_on_summary",
        "coached_by",
        "coach_notes",
        "coached",
        "coaching_read",
    )
    inlines = [RevisionInline]
    scored = zoned_field("scored_at", zone=DEALERS)
    coached = zoned_field("coached_at", zone=DEALERS)
    coaching_read = zoned_field("coaching_read_at", zone=DEALERS)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Score]:
        return super().get_queryset(request).select_related("call__account")

    @admin.display(ordering="call__account__name")
    def account(self, obj: Score) -> Any:
        return obj.call.account

    @admin.display(description="categories")
    def categories(self, obj: Score) -> str:
        return categories_html(obj)


class ScoredFilter(admin.SimpleListFilter):
    title = "scored"
    parameter_name = "scored"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Scored"), ("no", "Not scored")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        scored = Exists(Score.objects.filter(call=OuterRef("pk")))
        if self.value() == "yes":
            return queryset.filter(scored)
        if self.value() == "no":
            return queryset.exclude(scored)
        return queryset


@admin.register(RollupCoverage)
class RollupCoverageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Support sees how far each account's dashboard rollup goes (days after it, and an
    account missing here, are read from the calls: right, only slower) and can have one
    built again from the calls."""

    list_display = ["account", "organization", "timezone", "through", "updated_at"]
    list_select_related = ["account__organization"]
    list_filter = ["account__organization"]
    search_fields = ["account__name"]
    ordering = ["account__name"]
    actions = ["build_again"]

    @admin.display(ordering="account__organization__name")
    def organization(self, obj: RollupCoverage) -> Any:
        return obj.account.organization

    @admin.action(description="Build again from the calls", permissions=["view"])
    def build_again(
        self, request: HttpRequest, queryset: QuerySet[RollupCoverage]
    ) -> None:
        for coverage in queryset.select_related("account"):
            rollup_forget(account=coverage.account)
            self.log_change(request, coverage, "Dropped, to be built again.")
        self.message_user(
            request,
            "Dropped; the rollup sweep builds them again within minutes, and the "
            "dashboard reads their calls meanwhile.",
            messages.SUCCESS,
        )


@admin.register(LearntSuggester)
class LearntSuggesterAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    """Support reads what each account's suggestions learnt and which source is in force
    (the managers' Suggestions page shows the same per account); learning is the nightly
    task's and ``manage.py learn_suggestions``'s, never an edit here."""

    list_display = [
        "account",
        "member",
        "name",
        "source",
        "rule_f1",
        "learnt_f1",
        "examples",
        "accounts",
        "held_out",
        "trained_at",
    ]
    list_select_related = ["account"]
    list_filter = ["source", "account__organization"]
    search_fields = ["account__name", "name"]
    exclude = ["weights"]
    ordering = ["account__name", "member"]
