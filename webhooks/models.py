"""Outbound webhooks: the endpoints support registers per organization, every event the
service reports (the outbox, written in the transaction of the change it reports), and one
delivery of an event to each endpoint that subscribes to it."""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from accounts.models import Account, Organization


class EventType(models.TextChoices):
    LEAD_RECEIVED = "lead_received", "Lead received (accepted)"
    LEAD_REFUSED = "lead_refused", "Lead refused"
    AGENT_PRESSES_ONE = "agent_presses_one", "Agent pressed 1"
    CALL_COMPLETED = "call_completed", "Call completed"
    CALL_SCORED = "call_scored", "Call scored"
    CALL_COACHED = "call_coached", "Call coached"
    TRANSCRIPTION_READY = "transcription_ready", "Transcription ready"
    TEXT_SENT = "text_sent", "Text sent"
    TEXT_RECEIVED = "text_received", "Text received"
    LEAD_OPTED_OUT = "lead_opted_out", "Lead opted out of texts"
    APPOINTMENT_SET = "appointment_set", "Appointment set"
    APPOINTMENT_CONFIRMED = "appointment_confirmed", "Appointment confirmed"
    APPOINTMENT_KEPT = "appointment_kept", "Appointment kept"
    APPOINTMENT_NO_SHOW = "appointment_no_show", "Appointment no-show"
    APPOINTMENT_CANCELLED = "appointment_cancelled", "Appointment cancelled"
    CONSENT_GIVEN = "consent_given", "Consent given"
    CONSENT_REVOKED = "consent_revoked", "Consent revoked"
    # Sent to one endpoint only, when support presses "send test event".
    TEST_EVENT = "test_event", "Test event"


SUBSCRIBABLE = [choice for choice in EventType if choice != EventType.TEST_EVENT]


class WebhookEndpoint(models.Model):
    """Where an organization's events go. The signing secret is kept encrypted (the service
    must be able to sign with it) and shown once, when made or rotated."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="webhook_endpoints"
    )
    url = models.URLField(
        "URL", max_length=2000, help_text="HTTPS; private addresses are refused."
    )
    description = models.CharField(max_length=200, blank=True)
    accounts = models.ManyToManyField(
        Account,
        blank=True,
        related_name="webhook_endpoints",
        help_text="Leave empty for every account of the organization (and events of no "
        "account, such as a lead refused before its account was known).",
    )
    event_types = models.JSONField(
        default=list,
        blank=True,
        help_text="Leave empty for every event type.",
    )
    is_active = models.BooleanField("active", default=True)
    secret_encrypted = models.TextField(editable=False)
    secret_prefix = models.CharField(max_length=16, editable=False)
    previous_secret_encrypted = models.TextField(blank=True, editable=False)
    previous_secret_expires_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="Deliveries are signed with the previous secret too until then.",
    )
    failing_since = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="First failed attempt since the last success.",
    )
    disabled_at = models.DateTimeField(null=True, blank=True, editable=False)
    disabled_reason = models.CharField(max_length=200, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["organization__name", "url"]
        verbose_name = "webhook endpoint"

    def __str__(self) -> str:
        return self.description or self.url


class WebhookEvent(models.Model):
    """One event as it was sent: ``body`` holds the exact JSON every endpoint receives."""

    public_id = models.CharField(max_length=40, unique=True, editable=False)
    type = models.CharField(max_length=32, choices=EventType)
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="webhook_events"
    )
    account = models.ForeignKey(
        Account,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="webhook_events",
    )
    # Events of one subject ("call:12") reach an endpoint in the order they happened.
    subject = models.CharField(max_length=64, blank=True)
    body = models.TextField()
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-id"]
        verbose_name = "webhook event"

    def __str__(self) -> str:
        return f"{self.type} {self.public_id}"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SUCCEEDED = "succeeded", "Delivered"
    FAILED = "failed", "Failed (gave up)"


class WebhookDelivery(models.Model):
    """An event on its way to one endpoint: retried with backoff until it succeeds or its
    retry window ends."""

    event = models.ForeignKey(
        WebhookEvent, on_delete=models.CASCADE, related_name="deliveries"
    )
    endpoint = models.ForeignKey(
        WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries"
    )
    status = models.CharField(
        max_length=16, choices=DeliveryStatus, default=DeliveryStatus.PENDING
    )
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    retry_until = models.DateTimeField(help_text="Given up as failed after this.")
    # A worker sending it holds it until then; a second task for it meanwhile does nothing.
    leased_until = models.DateTimeField(null=True, blank=True, editable=False)
    # When it was last handed to a worker (core.handover): the sweep hands it over again
    # only when that hand-over may have been lost.
    dispatched_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_attempt_at = models.DateTimeField(null=True, blank=True)
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_ms = models.PositiveIntegerField(
        "response time (ms)", null=True, blank=True
    )
    response_excerpt = models.TextField(blank=True)
    error = models.CharField(max_length=200, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        verbose_name_plural = "webhook deliveries"
        constraints = [
            models.UniqueConstraint(
                fields=["event", "endpoint"], name="webhook_delivery_once"
            )
        ]
        indexes = [
            models.Index(
                fields=["next_attempt_at"],
                name="webhook_delivery_due",
                condition=Q(status="pending"),
            )
        ]

    def __str__(self) -> str:
        return f"Delivery {self.pk} ({self.status})"
