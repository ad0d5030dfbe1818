"""What the service understood of a call: the state of its transcription."""

from __future__ import annotations

from django.db import models

from calls.models import Call


class TranscriptionStatus(models.TextChoices):
    PENDING = "pending", "Waiting to be transcribed"
    DONE = "done", "Transcribed"
    FAILED = "failed", "Could not be transcribed"
    SKIPPED = "skipped", "Not transcribed (no engine)"
    # Nothing was said on the lead's side (silent, too short, no audio): the reason says
    # which, and the summary says there was no conversation.
    NO_CONVERSATION = "no_conversation", "No conversation"


class Transcription(models.Model):
    """One call's speech-to-text: pending until the engine has read the recording, then
    done (the text is on the call: ``Call.transcription``, ``transcript_turns``, ``summary``)
    or failed with the reason, never retried beyond ``TRANSCRIPTION_MAX_TRIES``; a recording
    with no speech on the lead's side is "no conversation", with the reason."""

    call = models.OneToOneField(
        Call, on_delete=models.CASCADE, related_name="transcription_job"
    )
    status = models.CharField(
        max_length=16,
        choices=TranscriptionStatus,
        default=TranscriptionStatus.PENDING,
    )
    engine = models.CharField(max_length=32, blank=True)
    model = models.CharField(max_length=255, blank=True)
    tries = models.PositiveSmallIntegerField(default=0)
    reason = models.TextField(blank=True, help_text="Why it could not be transcribed.")
    audio_seconds = models.FloatField(null=True, blank=True)
    took_seconds = models.FloatField(
        null=True, blank=True, help_text="Seconds the engine took (both channels)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    dispatched_at = models.DateTimeField(null=True, blank=True)
    claimed_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker took it to run."
    )
    claimed_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="The claim's lease: shortly after the run's hard time limit. A claim "
        "still held after this belongs to a run that ended with no outcome.",
    )
    summary_evidence = models.JSONField(
        default=list,
        blank=True,
        help_text="The summary's sentences, each with the transcript lines (from 0) it "
        'was written from: [{"sentence": ..., "lines": [3, 7]}].',
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="pending"),
                name="insights_pending_idx",
            )
        ]

    def __str__(self) -> str:
        return f"Transcription of call {self.call_id} ({self.status})"
