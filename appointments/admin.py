"""Appointments in the admin: every appointment with its life (each change, who, when),
its start in the dealer's timezone, and support's marks (kept, no-show, cancelled) made
through the services, as the pages make them; the call's appointments on its page."""

from __future__ import annotations

from typing import cast

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from appointments.models import Actor, Appointment, AppointmentChange, Status
from appointments.services import NotAllowed, appointment_change
from core.admin import ReadOnlyAdminMixin, zoned_field
from users.models import User


class AppointmentChangeInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = AppointmentChange
    extra = 0
    fields = readonly_fields = (
        "status_from",
        "status_to",
        "by",
        "by_user",
        "at",
        "note",
    )
    can_delete = False


class AppointmentInline(ReadOnlyAdminMixin, admin.TabularInline):
    """On the call's page: the appointments made on it."""

    model = Appointment
    fk_name = "call"
    extra = 0
    starts = zoned_field("starts_at", zone="account.timezone", description="starts")
    fields = readonly_fields = ("starts", "kind", "vehicle", "status", "set_by")
    show_change_link = True
    can_delete = False


@admin.register(Appointment)
class AppointmentAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "id",
        "starts",
        "lead_name",
        "phone",
        "account",
        "kind",
        "status",
        "set_by",
    ]
    list_filter = ["status", "kind", "set_by", "account__organization", "account"]
    list_select_related = ["account"]
    search_fields = ["phone", "first_name", "last_name", "=call__id"]
    date_hierarchy = "starts_at"
    starts = zoned_field("starts_at", zone="account.timezone", description="starts")
    fields = readonly_fields = (
        "account",
        "call",
        "lead_name",
        "phone",
        "starts",
        "kind",
        "vehicle",
        "status",
        "set_by",
        "set_by_user",
        "evidence",
        "replaces",
        "created_at",
    )
    inlines = [AppointmentChangeInline]
    actions = ["mark_kept", "mark_no_show", "mark_cancelled"]

    def _mark(
        self, request: HttpRequest, queryset: QuerySet[Appointment], to: str
    ) -> None:
        done, refused = 0, []
        for appointment in queryset:
            try:
                appointment_change(
                    appointment=appointment,
                    to=to,
                    by=Actor.STAFF,
                    by_user=cast(User, request.user),
                )
                done += 1
            except NotAllowed as refusal:
                refused.append(f"{appointment.pk}: {refusal}")
        if done:
            self.message_user(request, f"{done} marked {Status(to).label.lower()}.")
        if refused:
            self.message_user(request, " ".join(refused), level=messages.WARNING)

    @admin.action(description="Mark kept (the lead came)")
    def mark_kept(self, request: HttpRequest, queryset: QuerySet[Appointment]) -> None:
        self._mark(request, queryset, Status.KEPT)

    @admin.action(description="Mark no-show")
    def mark_no_show(
        self, request: HttpRequest, queryset: QuerySet[Appointment]
    ) -> None:
        self._mark(request, queryset, Status.NO_SHOW)

    @admin.action(description="Cancel")
    def mark_cancelled(
        self, request: HttpRequest, queryset: QuerySet[Appointment]
    ) -> None:
        self._mark(request, queryset, Status.CANCELLED)
