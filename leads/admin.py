"""Support's screens for lead intake: vendor registrations, parsing rules (with a tester that
runs a pasted ADF document through them and stores nothing), and the leads as received.

Leads are read-only here. The one thing support does to a lead, re-running it once the
configuration is fixed, goes through ``leads.services.leads_rerun``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import Prefetch, QuerySet
from django.http import HttpRequest, HttpResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from core.admin import ReadOnlyAdminMixin, WithinFilter, count_of, zoned
from leads.admin_tester import rule_tester_view
from leads.forms import (
    ParsingRuleForm,
    RuleConditionForm,
    VendorRegistrationForm,
)
from leads.models import (
    Lead,
    Operator,
    Outcome,
    ParsingRule,
    RuleCondition,
    VendorRegistration,
)
from leads.services import leads_rerun
from leads.trial import pretty_json


def pre(text: str, css_class: str = "") -> SafeString:
    """Text as sent, escaped, in a scrollable block."""
    return format_html(
        '<pre class="{}" style="white-space: pre-wrap; max-height: 40em; overflow: auto;">{}</pre>',
        css_class,
        text,
    )


def change_link(url_name: str, pk: int | None, text: str) -> str:
    if pk is None:
        return "—"
    return format_html('<a href="{}">{}</a>', reverse(url_name, args=[pk]), text)


# --- vendor registrations


@admin.register(VendorRegistration)
class VendorRegistrationAdmin(admin.ModelAdmin):
    form = VendorRegistrationForm
    list_display = ["account", "organization", "vendor_id", "vendor_name", "is_active"]
    list_display_links = ["account", "vendor_id"]
    list_filter = ["organization", "is_active", "account"]
    list_select_related = ["account", "organization"]
    search_fields = ["vendor_id", "vendor_name", "account__name", "organization__name"]
    search_help_text = "Vendor ID, vendor name, account or organization."
    fields = [
        "account",
        "organization",
        "vendor_id",
        "vendor_name",
        "is_active",
        "created_at",
    ]
    readonly_fields = ["organization", "created_at"]


# --- parsing rules

OPERATOR_WORDS: dict[str, str] = {
    Operator.EQUALS: "equals",
    Operator.CONTAINS: "contains",
    Operator.STARTS_WITH: "starts with",
    Operator.REGEX: "matches the regular expression",
    Operator.PRESENT: "is present",
    Operator.ABSENT: "is absent",
}


def condition_in_words(condition: RuleCondition) -> str:
    """A condition as support reads it: "provider/name equals DNP (case-insensitive)"."""
    words = OPERATOR_WORDS.get(condition.operator, condition.operator)
    if condition.operator in (Operator.PRESENT, Operator.ABSENT):
        return f"{condition.field} {words}"
    return f"{condition.field} {words} {condition.value} (case-insensitive)"


class RuleChangeList(ChangeList):
    """The rules' conditions, for every rule of the page, in one query."""

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: Any = None
    ) -> QuerySet[ParsingRule]:
        return (
            super()
            .get_queryset(request, exclude_parameters)
            .prefetch_related(
                Prefetch("conditions", queryset=RuleCondition.objects.order_by("id"))
            )
        )


class RuleConditionInline(admin.TabularInline):
    model = RuleCondition
    form = RuleConditionForm
    fields = ["field", "operator", "value"]
    extra = 1
    verbose_name_plural = (
        "conditions (all must hold; none: the rule matches every lead)"
    )


@admin.register(ParsingRule)
class ParsingRuleAdmin(admin.ModelAdmin):
    form = ParsingRuleForm
    list_display = [
        "account",
        "name",
        "priority",
        "is_active",
        "action",
        "source_label",
        "team",
        "conditions_in_words",
    ]
    list_display_links = ["name"]
    list_editable = ["priority"]
    list_filter = ["account__organization", "account", "action", "is_active"]
    list_select_related = ["account", "team"]
    search_fields = ["name", "account__name", "source_label"]
    ordering = ["account__name", "account_id", "priority", "id"]
    inlines = [RuleConditionInline]
    fieldsets = [
        (
            None,
            {
                "fields": ["account", "name", "priority", "is_active", "action"],
                "description": "An account's active rules run in priority order (lower first); the first "
                "rule whose conditions all hold decides what becomes of the lead.",
            },
        ),
        (
            "The call",
            {
                "fields": ["team", "source_label", "department", "lead_type"],
                "description": "Used when the rule processes the lead.",
            },
        ),
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[ParsingRule]:
        return (
            super()
            .get_queryset(request)
            .annotate(n_conditions=count_of(RuleCondition, "rule"))
        )

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return RuleChangeList

    def get_urls(self) -> list[URLPattern]:  # type: ignore[override]
        return [
            path(
                "tester/",
                self.admin_site.admin_view(self.tester_view),
                name="leads_parsingrule_tester",
            ),
            *super().get_urls(),
        ]

    @admin.display(description="conditions (all must hold)", ordering="n_conditions")
    def conditions_in_words(self, obj: ParsingRule) -> str:
        conditions = [condition_in_words(c) for c in obj.conditions.all()]
        if not conditions:
            return "all leads"
        return format_html_join(
            mark_safe("<br>and "), "{}", ((words,) for words in conditions)
        )

    def tester_view(self, request: HttpRequest) -> HttpResponse:
        return rule_tester_view(self, request)


# --- leads


class LeadChangeList(ChangeList):
    """Lists leave the big columns behind: a raw document may be a megabyte."""

    def get_queryset(
        self, request: HttpRequest, exclude_parameters: Any = None
    ) -> QuerySet[Lead]:
        return (
            super()
            .get_queryset(request, exclude_parameters)
            .defer(
                "raw_xml", "parsed", "response_body", "whisper", "call_notes", "reason"
            )
        )


class ReceivedWithinFilter(WithinFilter):
    title = "received"
    parameter_name = "received"
    field = "received_at"


@admin.register(Lead)
class LeadAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "received",
        "id",
        "account",
        "outcome",
        "prospect_id",
        "vendor",
        "matched_rule",
        "call_link",
        "is_test",
        "processing",
    ]
    list_display_links = ["received", "id"]
    list_filter = [
        ReceivedWithinFilter,
        "account",
        "outcome",
        "is_test",
        "organization",
    ]
    list_select_related = ["account", "matched_rule", "call"]
    date_hierarchy = "received_at"
    # The raw document is deliberately not searched: too big to scan.
    search_fields = ["prospect_id", "vendor_id", "vendor_name"]
    search_help_text = "Prospect ID, vendor ID or vendor name."
    show_full_result_count = False
    actions = ["rerun"]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "received",
                    "organization",
                    "credential",
                    "account",
                    "outcome",
                    "reason",
                    "is_test",
                    "processed",
                    "processing",
                ]
            },
        ),
        (
            "Routing",
            {
                "fields": [
                    "prospect_id",
                    "prospect_source",
                    "prospect_index",
                    "vendor_id",
                    "vendor_name",
                    "matched_rule",
                    "duplicate_of_link",
                    "document_link",
                    "call_link",
                ]
            },
        ),
        ("For the agent", {"fields": ["whisper_text", "call_notes_text"]}),
        ("Answer", {"fields": ["response_status", "response_body_json"]}),
        ("Parsed lead", {"fields": ["parsed_json"]}),
        ("Raw XML, as received", {"fields": ["raw_xml_text"]}),
    ]
    readonly_fields = [
        "received",
        "processed",
        "processing",
        "duplicate_of_link",
        "document_link",
        "call_link",
        "whisper_text",
        "call_notes_text",
        "response_body_json",
        "parsed_json",
        "raw_xml_text",
    ]

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return LeadChangeList

    def get_queryset(self, request: HttpRequest) -> QuerySet[Lead]:
        return (
            super()
            .get_queryset(request)
            .select_related(
                "account", "organization", "credential", "matched_rule", "call"
            )
        )

    def has_rerun_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.change_lead")

    @admin.action(
        description="Re-run through the current configuration",
        permissions=["rerun"],
    )
    def rerun(self, request: HttpRequest, queryset: QuerySet[Lead]) -> None:
        leads = list(
            Lead.objects.filter(pk__in=queryset.values("pk"))
            .select_related("credential")
            .order_by("received_at", "id")
        )
        counts = leads_rerun(leads=leads)
        for lead in leads:
            self.log_change(request, lead, f"Re-ran: {Outcome(lead.outcome).label}.")
        summary = ", ".join(
            f"{count} {Outcome(outcome).label.lower()}"
            for outcome, count in sorted(counts.items(), key=lambda item: -item[1])
        )
        self.message_user(
            request,
            f"Re-ran {len(leads)} lead{'s' if len(leads) != 1 else ''}: {summary}. "
            "A lead processed before keeps its outcome; no lead is called twice.",
            messages.SUCCESS,
        )

    @admin.display(description="vendor", ordering="vendor_id")
    def vendor(self, obj: Lead) -> str:
        return (
            " / ".join(part for part in (obj.vendor_id, obj.vendor_name) if part) or "—"
        )

    # Lead times read in the account's timezone, labelled with it; a lead routed to no
    # account in the signed-in user's.
    @admin.display(description="received", ordering="received_at")
    def received(self, obj: Lead) -> str:
        return zoned(obj.received_at, obj.account.timezone if obj.account else None)

    @admin.display(description="processed", ordering="processed_at")
    def processed(self, obj: Lead) -> str:
        return zoned(obj.processed_at, obj.account.timezone if obj.account else None)

    @admin.display(description="processing ms", ordering="processing_ms")
    def processing(self, obj: Lead) -> str:
        return f"{obj.processing_ms:.1f}" if obj.processing_ms is not None else "—"

    @admin.display(description="call", ordering="call_id")
    def call_link(self, obj: Lead) -> str:
        if obj.call is None:
            return "—"
        return change_link(
            "admin:calls_call_change",
            obj.call.pk,
            f"Call {obj.call.pk} ({obj.call.status})",
        )

    @admin.display(description="duplicate of")
    def duplicate_of_link(self, obj: Lead) -> str:
        return change_link(
            "admin:leads_lead_change",
            obj.duplicate_of_id,
            f"Lead {obj.duplicate_of_id}",
        )

    @admin.display(description="first lead of its document")
    def document_link(self, obj: Lead) -> str:
        # The other prospects of a document with several point at its first lead.
        return change_link(
            "admin:leads_lead_change", obj.document_id, f"Lead {obj.document_id}"
        )

    @admin.display(description="whisper")
    def whisper_text(self, obj: Lead) -> str:
        return pre(obj.whisper) if obj.whisper else "—"

    @admin.display(description="call notes")
    def call_notes_text(self, obj: Lead) -> str:
        return pre(obj.call_notes) if obj.call_notes else "—"

    @admin.display(description="response body")
    def response_body_json(self, obj: Lead) -> str:
        return (
            pre(pretty_json(obj.response_body))
            if obj.response_body is not None
            else "—"
        )

    @admin.display(description="parsed lead")
    def parsed_json(self, obj: Lead) -> str:
        return (
            pre(pretty_json(obj.parsed)) if obj.parsed is not None else "— (not parsed)"
        )

    @admin.display(description="raw XML")
    def raw_xml_text(self, obj: Lead) -> str:
        return pre(obj.raw_xml, "raw-xml")
