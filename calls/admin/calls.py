"""Calls in the admin: the list with its filters, each call's timeline of attempts and
its recording, and the actions support takes on them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.defaultfilters import pluralize
from django.template.response import TemplateResponse
from django.urls import NoReverseMatch, reverse
from django.utils import timezone
from django.utils.html import format_html

from accounts.models import Account
from calls.models import (
    Call,
    CallAttempt,
    Recording,
    RecordingStatus,
)
from calls.recordings import attempt_for_token
from calls.selectors import dialing_silent, queued_overdue, stuck
from calls.services import call_cancel, call_recording_reissue
from core.admin import ReadOnlyAdminMixin, WithinFilter, zoned, zoneinfo_or_current
from core.validation import digits_only
from users.models import User

# --- calls


class AgentFilter(admin.SimpleListFilter):
    """The agents of the account chosen in the account filter. Listing every user of every
    account would not scale, so the filter appears once an account is chosen."""

    title = "agent"
    parameter_name = "agent"
    account_parameter = "account__id__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        account_id = request.GET.get(self.account_parameter, "")
        if not digits_only(account_id):
            return []
        agents = User.objects.filter(accounts=int(account_id)).order_by(
            "first_name", "last_name", "id"
        )
        return [(str(user.pk), str(user)) for user in agents]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        if value and digits_only(value):
            return queryset.filter(agent_id=int(value))
        return queryset


class StuckFilter(admin.SimpleListFilter):
    """Calls nothing is driving (``calls.selectors``): queued past their due time, or dialing
    with no event for a while. The overview on the admin index links here."""

    title = "stuck"
    parameter_name = "stuck"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [
            ("any", "Stuck (either)"),
            ("queued", "Queued, overdue"),
            ("dialing", "Dialing, silent"),
        ]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        condition = {
            "any": stuck,
            "queued": queued_overdue,
            "dialing": dialing_silent,
        }.get(self.value() or "")
        if condition is None:
            return queryset
        return queryset.filter(condition(now=timezone.now()))


class EndedWithinFilter(WithinFilter):
    title = "ended"
    parameter_name = "ended"
    field = "ended_at"


def _moment(attempt: CallAttempt, at: datetime | None) -> str:
    """A moment of a leg to the second in the account's timezone (its time of day, the date
    too when it is not the day the lead arrived), with the seconds since the lead arrived."""
    if at is None:
        return "—"
    received = attempt.call.received_at
    after = (at - received).total_seconds()
    zone = zoneinfo_or_current(attempt.call.account.timezone)
    local = at.astimezone(zone)
    shown = f"{local:%H:%M:%S}"
    if local.date() != received.astimezone(zone).date():
        shown = f"{local:%Y-%m-%d} {shown}"
    return f"{shown} (+{after:.0f} s)"


class CallAttemptInline(ReadOnlyAdminMixin, admin.TabularInline):
    """The call's timeline: every leg dialed, agents and lead, in the order they were made.
    Moments are shown to the second in the account's timezone (the call's "Received" above
    names it), with the seconds since the lead arrived; it fits a 1,280 px screen."""

    model = CallAttempt
    fields = readonly_fields = (
        "created",
        "leg",
        "round",
        "agent",
        "number_and_id",
        "dial_requested",
        "ringing",
        "answered",
        "ended",
        "outcome",
        "key_pressed",
        "duration",
    )
    ordering = ("created_at", "id")
    extra = 0
    can_delete = False
    verbose_name = "attempt"
    verbose_name_plural = (
        "attempts (every leg dialed, in order; times in the account's timezone)"
    )

    def get_queryset(self, request: HttpRequest) -> QuerySet[CallAttempt]:
        return super().get_queryset(request).select_related("agent", "call__account")

    @admin.display(description="number / provider id")
    def number_and_id(self, obj: CallAttempt) -> str:
        # A Twilio call SID is 34 characters: it breaks anywhere rather than widen the table.
        return format_html(
            '{}<br><small style="word-break: break-all">{}</small>',
            obj.number,
            obj.provider_id or "—",
        )

    @admin.display(description="created")
    def created(self, obj: CallAttempt) -> str:
        return _moment(obj, obj.created_at)

    @admin.display(description="dial requested")
    def dial_requested(self, obj: CallAttempt) -> str:
        return _moment(obj, obj.dial_requested_at)

    @admin.display(description="ringing")
    def ringing(self, obj: CallAttempt) -> str:
        return _moment(obj, obj.ringing_at)

    @admin.display(description="answered")
    def answered(self, obj: CallAttempt) -> str:
        return _moment(obj, obj.answered_at)

    @admin.display(description="ended")
    def ended(self, obj: CallAttempt) -> str:
        return _moment(obj, obj.ended_at)


class RecordingInline(ReadOnlyAdminMixin, admin.StackedInline):
    """The call's stored recording (``calls.media``), read-only: whether it is stored, what
    it holds, why not, and a link that plays it."""

    model = Recording
    fields = readonly_fields = (
        "status",
        "seconds",
        "channels",
        "sample_rate",
        "tries",
        "reason",
        "listen",
    )
    extra = 0
    can_delete = False
    verbose_name = verbose_name_plural = "recording"

    @admin.display(description="audio")
    def listen(self, obj: Recording) -> str:
        if obj.status != RecordingStatus.STORED or not obj.audio:
            return "—"
        # The service's own signed link plays the stored file; a Twilio call's link is
        # Twilio's (behind its credentials), so the storage's URL is shown instead.
        link = obj.call.recording_url
        token = link.removesuffix(".wav").rsplit("/", 1)[-1]
        if not (link.endswith(".wav") and attempt_for_token(token)):
            link = obj.audio.url
        return format_html('<a href="{}">{}</a>', link, obj.audio.name)


class CallAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "received",
        "id",
        "account",
        "status",
        "origin",
        "agent_shown",
        "attempts",
        "duration",
        "response_time",
        "lead_name",
        "phone",
        "is_test",
    ]
    list_display_links = ["received", "id"]
    list_filter = [
        "account",
        "status",
        StuckFilter,
        EndedWithinFilter,
        "origin",
        AgentFilter,
        "is_test",
    ]
    list_select_related = ["account", "agent"]
    date_hierarchy = "received_at"
    search_fields = ["phone", "first_name", "last_name", "email", "altid"]
    search_help_text = "Lead's phone (E.164, e.g. +13035550123), first or last name, email, or prospect ID (altid)."
    show_full_result_count = False
    actions = ["cancel_calls", "reissue_recording_links"]
    inlines = [CallAttemptInline, RecordingInline]
    fieldsets = [
        (
            None,
            {
                "fields": [
                    "account",
                    "origin",
                    "status",
                    "is_test",
                    "received",
                    "ended",
                    "lead_link",
                ]
            },
        ),
        (
            "Outcome",
            {
                "fields": [
                    "agent",
                    "attempts",
                    "duration",
                    "end_estimated",
                    "response_time",
                    "recording_player",
                    "rounds",
                    "unanswered_rounds",
                    "next_attempt",
                    "requested_agent",
                    "vendor_agent_id",
                    "agent_number",
                ]
            },
        ),
        (
            "Lead",
            {
                "fields": [
                    "first_name",
                    "last_name",
                    "email",
                    "phone",
                    "altid",
                    "source",
                    "lead_type",
                    "department",
                    "team",
                ]
            },
        ),
        ("For the agent", {"fields": ["whisper", "call_notes"]}),
        (
            "Vehicles",
            {
                "fields": [
                    "called_on_year",
                    "called_on_make",
                    "called_on_model",
                    "called_on_registration",
                    "called_on_summary",
                    "current_year",
                    "current_make",
                    "current_model",
                    "current_registration",
                    "current_summary",
                ],
                "classes": ["collapse"],
            },
        ),
        (
            "Notes",
            {
                "fields": [
                    "update_notes",
                    "inbound_tracking_number",
                    "summary",
                    "transcription",
                    "transcript_language",
                    "redactions",
                    "created",
                ],
                "classes": ["collapse"],
            },
        ),
    ]
    readonly_fields = [
        "recording_player",
        "lead_link",
        "received",
        "ended",
        "next_attempt",
        "transcript_language",
        "redactions",
        "created",
    ]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Call]:
        return super().get_queryset(request).select_related("account", "agent")

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        # The date hierarchy groups calls by day in the active timezone, the viewer's: a
        # list of one account's calls is grouped by the dealer's days, as its times read.
        zone = self._listed_account_zone(request)
        if zone is None:
            return super().changelist_view(request, extra_context)
        with timezone.override(zone):
            response = super().changelist_view(request, extra_context)
            if isinstance(response, TemplateResponse):
                response.render()
        return response

    def _listed_account_zone(self, request: HttpRequest) -> Any:
        account_id = request.GET.get(AgentFilter.account_parameter, "")
        if not digits_only(account_id):
            return None
        zone = (
            Account.objects.filter(pk=int(account_id))
            .values_list("timezone", flat=True)
            .first()
        )
        return zoneinfo_or_current(zone) if zone else None

    def has_cancel_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.change_call")

    @admin.action(description="Cancel queued calls", permissions=["cancel"])
    def cancel_calls(self, request: HttpRequest, queryset: QuerySet[Call]) -> None:
        cancelled = kept = 0
        for call in queryset.order_by("id"):
            if call_cancel(call=call):
                cancelled += 1
                self.log_change(request, call, "Cancelled.")
            else:
                kept += 1
        parts = []
        if cancelled:
            parts.append(f"Cancelled {cancelled} call{pluralize(cancelled)}.")
        if kept:
            parts.append(
                f"{kept} call{pluralize(kept)} could not be cancelled: "
                "already connected to an agent, or ended."
            )
        self.message_user(
            request,
            " ".join(parts),
            messages.SUCCESS if cancelled and not kept else messages.WARNING,
        )

    @admin.action(
        description="Revoke recording links (issue new ones)", permissions=["cancel"]
    )
    def reissue_recording_links(
        self, request: HttpRequest, queryset: QuerySet[Call]
    ) -> None:
        reissued = 0
        for call in queryset.exclude(recording_url="").order_by("id"):
            if call_recording_reissue(call=call):
                reissued += 1
                self.log_change(
                    request, call, "Recording link revoked; new link issued."
                )
        self.message_user(
            request,
            f"Issued new recording links for {reissued} call{pluralize(reissued)}; "
            "the old links no longer play.",
            messages.SUCCESS,
        )

    # Call times read in the account's timezone, labelled with it (where the dealer is):
    # one list may mix zones, which the column's name says.
    @admin.display(description="received (dealer's time)", ordering="received_at")
    def received(self, obj: Call) -> str:
        return zoned(obj.received_at, obj.account.timezone)

    @admin.display(description="ended", ordering="ended_at")
    def ended(self, obj: Call) -> str:
        return zoned(obj.ended_at, obj.account.timezone)

    @admin.display(description="not dialed before")
    def next_attempt(self, obj: Call) -> str:
        return zoned(obj.next_attempt_at, obj.account.timezone)

    @admin.display(description="created")
    def created(self, obj: Call) -> str:
        return zoned(obj.created_at, obj.account.timezone)

    @admin.display(description="agent", ordering="agent__last_name")
    def agent_shown(self, obj: Call) -> str:
        # As the scored record shows it: an agent who is not a user by their vendor id or number.
        return obj.agent_shown or "—"

    @admin.display(description="lead", ordering="last_name")
    def lead_name(self, obj: Call) -> str:
        return f"{obj.first_name} {obj.last_name}".strip() or "—"

    # Not named ``recording``: that is the call's stored Recording (the admin would look
    # the model's relation up before this method).
    @admin.display(description="recording")
    def recording_player(self, obj: Call) -> str:
        url = obj.recording_url
        # Only web addresses are ever played or linked; anything else is shown as text.
        if not url.startswith(("https://", "http://")):
            return url or "—"
        return format_html(
            '<audio controls preload="none" src="{}"></audio><br><a href="{}" rel="noreferrer">{}</a>',
            url,
            url,
            url,
        )

    @admin.display(description="lead received")
    def lead_link(self, obj: Call) -> str:
        # The lead points at its call (leads depend on calls, not the reverse).
        lead = getattr(obj, "lead", None)
        if lead is None:
            return "—"
        try:
            url = reverse("admin:leads_lead_change", args=[lead.pk])
        except NoReverseMatch:
            return f"Lead {lead.pk}"
        return format_html('<a href="{}">Lead {}</a>', url, lead.pk)
