"""Support's screens for lead intake: vendor registrations, parsing rules (with a tester that
runs a pasted ADF document through them and stores nothing), and the leads as received.

Leads are read-only here. The one thing support does to a lead, re-running it once the
configuration is fixed, goes through ``leads.services.leads_rerun``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Prefetch, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe
from django_countries import countries

from accounts.models import Account, ApiCredential, Organization
from accounts.selectors import credential_account_ids
from core.admin import ReadOnlyAdminMixin, WithinFilter, count_of, zoned
from leads.adf import FIELDS, AdfError, ParsedLead, parse_adf
from leads.compose import compose_call_notes, compose_whisper
from leads.forms import (
    ParsingRuleForm,
    RuleConditionForm,
    RuleTesterForm,
    VendorRegistrationForm,
)
from leads.models import (
    Lead,
    Operator,
    Outcome,
    ParsingRule,
    RuleAction,
    RuleCondition,
    VendorRegistration,
)
from leads.rules import rules_evaluate
from leads.services import (
    DO_NOT_PROCESS,
    MAX_PROSPECTS,
    NO_PROSPECT_ID,
    NO_RULE,
    NO_VENDOR,
    RECEIVED,
    RECEIVED_NO_PHONE,
    adf_refusal,
    dedupe_key,
    lead_phone,
    leads_rerun,
    vendor_account,
)

TESTER_PAGE = "admin/leads/rule_tester.html"


def pre(text: str, css_class: str = "") -> SafeString:
    """Text as sent, escaped, in a scrollable block."""
    return format_html(
        '<pre class="{}" style="white-space: pre-wrap; max-height: 40em; overflow: auto;">{}</pre>',
        css_class,
        text,
    )


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


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
        """Run a pasted document through the current configuration; nothing is stored."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        form = RuleTesterForm(request.POST if request.method == "POST" else None)
        trial = None
        if form.is_bound and form.is_valid():
            trial = lead_trial(
                raw_xml=form.cleaned_data["xml"],
                organization=form.cleaned_data["organization"],
                credential=form.cleaned_data["credential"],
            )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Rule tester",
            "form": form,
            "trial": trial,
        }
        return TemplateResponse(request, TESTER_PAGE, context)


# --- the rule tester: what lead intake would do with a document, read-only


@dataclass(frozen=True)
class RuleRow:
    rule: ParsingRule
    state: str  # matched, no match, inactive, not reached
    why: str

    @property
    def conditions(self) -> list[str]:
        """The rule's conditions in words, e.g. "Request type (prospect/requesttype) equals 'service'"."""
        return [
            f"{FIELDS.get(c.field, c.field)} ({c.field}) {c.get_operator_display()}"
            + (f" {c.value!r}" if c.value else "")
            for c in self.rule.conditions.all()
        ]


@dataclass
class ProspectTrial:
    """One prospect of the document, as lead intake would see it."""

    number: int
    parsed: ParsedLead
    key_fields: list[tuple[str, str]]
    parsed_json: str
    account: Account | None = None
    account_why: str = ""
    rules: list[RuleRow] = field(default_factory=list)
    rule: ParsingRule | None = None
    duplicate_of: Lead | None = None
    whisper: str = ""
    call_notes: str = ""
    phone: str = ""
    phone_why: str = ""
    outcome: str = ""
    answer_status: int = 0
    answer_body: str = ""
    call: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Trial:
    error: str = ""
    answer_status: int = 0
    answer_body: str = ""
    prospects: list[ProspectTrial] = field(default_factory=list)


def lead_trial(
    *,
    raw_xml: str,
    organization: Organization | None,
    credential: ApiCredential | None,
) -> Trial:
    """What ``lead_receive`` would do with the document for this organization or credential,
    step by step and with the reasons, without storing anything or queueing a call."""
    try:
        prospects = parse_adf(raw_xml)
        if len(prospects) > MAX_PROSPECTS:
            raise AdfError(f"The document holds more than {MAX_PROSPECTS} prospects.")
    except AdfError as error:
        _, status, reason = adf_refusal(error)
        return Trial(
            error=str(error),
            answer_status=status,
            answer_body=pretty_json({"reason": reason}),
        )
    if organization is None:
        assert credential is not None
        organization = credential.organization
    return Trial(
        prospects=[
            _prospect_trial(number, parsed, organization, credential)
            for number, parsed in enumerate(prospects, start=1)
        ]
    )


def _prospect_trial(
    number: int,
    parsed: ParsedLead,
    organization: Organization,
    credential: ApiCredential | None,
) -> ProspectTrial:
    trial = ProspectTrial(
        number=number,
        parsed=parsed,
        key_fields=_key_fields(parsed),
        parsed_json=pretty_json(parsed.as_dict()),
        whisper=compose_whisper(parsed),
        call_notes=compose_call_notes(parsed),
    )
    trial.account, trial.account_why = _routed_account(parsed, organization, credential)
    if trial.account is not None:
        _evaluate_rules(trial, trial.account)
        if trial.rule is not None and parsed.prospect_id:
            trial.duplicate_of = Lead.objects.filter(
                dedupe_key=dedupe_key(trial.account, parsed)
            ).first()
        trial.phone = lead_phone(parsed, trial.account)
        if not parsed.customer.phone:
            trial.phone_why = "The lead has no phone number that can be called."
        elif not trial.phone:
            country = countries.name(str(trial.account.country))
            trial.phone_why = (
                f"{parsed.customer.phone!r} is not a valid number in {country}."
            )
    else:
        trial.phone_why = "Read in the account's country once an account is found."
    _outcome(trial)
    return trial


def _key_fields(parsed: ParsedLead) -> list[tuple[str, str]]:
    customer, buy, trade = parsed.customer, parsed.buy_vehicle, parsed.trade_in_vehicle

    def vehicle(v: Any) -> str:
        return (
            " ".join(p for p in (v.status.title(), v.year, v.make, v.model) if p)
            if v
            else ""
        )

    rows = [
        ("Prospect ID", parsed.prospect_id),
        ("Prospect ID source", parsed.prospect_source),
        ("Request type", parsed.request_type),
        ("Vendor ID", parsed.vendor.id),
        ("Vendor name", parsed.vendor.name),
        ("Provider name", parsed.provider.name),
        ("Customer", customer.full_name),
        ("Email", customer.email),
        (
            "Phone (as sent)",
            f"{customer.phone} ({customer.phone_type})"
            if customer.phone_type
            else customer.phone,
        ),
        ("Vehicle", vehicle(buy)),
        ("Trade-in", vehicle(trade)),
    ]
    return [(label, value or "—") for label, value in rows]


def _routed_account(
    parsed: ParsedLead, organization: Organization, credential: ApiCredential | None
) -> tuple[Account | None, str]:
    """The account intake routes the lead to (``vendor_account`` when a credential is given),
    and why, or why none."""
    vendor = parsed.vendor
    if vendor.id:
        match, named = Q(vendor_id=vendor.id), f"Vendor ID {vendor.id!r}"
    elif vendor.name:
        match, named = (
            Q(vendor_name__iexact=vendor.name),
            f"Vendor name {vendor.name!r}",
        )
    else:
        return None, "The lead has neither a vendor ID nor a vendor name."
    registrations = list(
        VendorRegistration.objects.filter(
            match, organization=organization
        ).select_related("account")
    )
    if not registrations:
        why = f"{named} is not registered in {organization.name}."
        if vendor.id and vendor.name:
            why += (
                " A lead with a vendor ID is matched on its ID only, never on its name."
            )
        return None, why
    usable = [r for r in registrations if r.is_active and r.account.is_active]
    if not usable:
        registration = registrations[0]
        if not registration.is_active:
            return (
                None,
                f"{named} is registered for {registration.account.name}, but the registration is inactive.",
            )
        return (
            None,
            f"{named} is registered for {registration.account.name}, but that account is inactive.",
        )
    account = usable[0].account
    if credential is not None:
        if account.pk not in credential_account_ids(credential=credential):
            return (
                None,
                f"{named} is registered for {account.name}, which credential {credential.api_user} does not reach.",
            )
        # The service decides; the explanation above only says why.
        found = vendor_account(credential=credential, parsed=parsed)
        if found is None:
            return None, NO_VENDOR
        account = found
    test = (
        " It is a test account: no real phone call is placed."
        if account.is_test
        else ""
    )
    return account, f"{named} is registered for {account.name}.{test}"


def _evaluate_rules(trial: ProspectTrial, account: Account) -> None:
    """Every rule of the account in priority order; inactive ones say so and never match."""
    rules = list(
        ParsingRule.objects.filter(account=account)
        .select_related("team")
        .prefetch_related(
            Prefetch("conditions", queryset=RuleCondition.objects.order_by("id"))
        )
        .order_by("priority", "id")
    )
    trial.rule, verdicts = rules_evaluate(rules, trial.parsed)
    rows = []
    for verdict in verdicts:
        state = (
            "matched"
            if verdict.matched
            else "inactive"
            if verdict.why == "inactive"
            else "no match"
        )
        rows.append(RuleRow(verdict.rule, state, verdict.why))
    reached = {row.rule.pk for row in rows}
    rows += [
        RuleRow(rule, "not reached", "an earlier rule matched")
        for rule in rules
        if rule.pk not in reached
    ]
    trial.rules = rows


def _outcome(trial: ProspectTrial) -> None:
    """The outcome and answer, in the order ``lead_process`` decides them."""
    parsed, rule, account = trial.parsed, trial.rule, trial.account
    body: dict[str, Any]
    if not parsed.prospect_id:
        outcome, status, body = Outcome.NO_PROSPECT_ID, 422, {"reason": NO_PROSPECT_ID}
    elif account is None:
        outcome, status, body = Outcome.NO_VENDOR, 422, {"reason": NO_VENDOR}
    elif rule is None:
        outcome, status, body = Outcome.NO_RULE, 422, {"reason": NO_RULE}
    elif (first := trial.duplicate_of) is not None:
        outcome, status = Outcome.DUPLICATE, first.response_status or 200
        body = {**(first.response_body or {}), "duplicate": True}
    elif rule.action == RuleAction.DO_NOT_PROCESS:
        outcome, status, body = Outcome.DO_NOT_PROCESS, 200, {"reason": DO_NOT_PROCESS}
    elif not trial.phone:
        outcome, status = Outcome.NO_PHONE, 200
        body = {
            "result": "Success",
            "leadId": "(new lead id)",
            "message": RECEIVED_NO_PHONE,
        }
    else:
        outcome, status = Outcome.ACCEPTED, 200
        body = {"result": "Success", "leadId": "(new lead id)", "message": RECEIVED}
        source = rule.source_label or parsed.provider.name or parsed.vendor.name
        trial.call = [
            ("Phone", trial.phone),
            ("Team", rule.team.name if rule.team else "every agent of the account"),
            ("Source", source),
            ("Prospect ID (altid)", parsed.prospect_id),
            ("Test call", "yes: no real phone call" if account.is_test else "no"),
        ]
    trial.outcome = Outcome(outcome).label
    trial.answer_status, trial.answer_body = status, pretty_json(body)


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
            f"Re-ran {len(leads)} lead{pluralize(len(leads))}: {summary}. "
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
