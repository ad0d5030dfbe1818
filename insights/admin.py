from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.template.defaultfilters import pluralize

from core.admin import ReadOnlyAdminMixin
from insights.models import Transcription, TranscriptionStatus
from insights.services import transcription_again


@admin.register(Transcription)
class TranscriptionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = [
        "call",
        "status",
        "engine",
        "tries",
        "took",
        "audio_seconds",
        "reason",
        "created_at",
    ]
    list_filter = ["status", "engine"]
    list_select_related = ["call"]
    search_fields = ["call__id"]
    ordering = ["-created_at"]
    actions = ["transcribe_again"]

    @admin.display(description="took (s)", ordering="took_seconds")
    def took(self, obj: Transcription) -> str:
        return "—" if obj.took_seconds is None else f"{obj.took_seconds:.1f}"

    def has_transcribe_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(f"{self.opts.app_label}.change_transcription")

    @admin.action(
        description="Transcribe failed transcriptions again", permissions=["transcribe"]
    )
    def transcribe_again(
        self, request: HttpRequest, queryset: QuerySet[Transcription]
    ) -> None:
        again = 0
        for job in queryset.filter(status=TranscriptionStatus.FAILED).order_by("id"):
            transcription_again(call_id=job.call_id)
            self.log_change(request, job, "Transcribe again.")
            again += 1
        skipped = queryset.count() - again
        message = f"{again} transcription{pluralize(again)} queued again."
        if skipped:
            message += f" {skipped} not failed, left alone."
        self.message_user(
            request, message, messages.SUCCESS if not skipped else messages.WARNING
        )
