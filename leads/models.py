"""Leads as received, the vendor registrations that route them, and the parsing rules that
decide what becomes of them."""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from accounts.models import Account, ApiCredential, Organization, Team
from calls.models import Call, LeadType
from leads.adf import FIELDS


class VendorRegistration(models.Model):
    """A vendor id and/or name registered for an account: enables lead intake for it."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="vendor_registrations"
    )
    # Copied from the account so uniqueness can be enforced per organization in the database.
    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, editable=False, related_name="+"
    )
    vendor_id = models.CharField("vendor ID", max_length=100, blank=True, db_index=True)
    vendor_name = models.CharField(max_length=200, blank=True)
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["account_id", "vendor_id"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(vendor_id="") | ~Q(vendor_name=""),
                name="vendor_id_or_name",
            ),
            models.UniqueConstraint(
                "organization",
                "vendor_id",
                condition=~Q(vendor_id=""),
                name="vendor_id_unique_in_org",
            ),
            models.UniqueConstraint(
                "organization",
                Lower("vendor_name"),
                condition=~Q(vendor_name=""),
                name="vendor_name_unique_in_org",
            ),
        ]

    def __str__(self) -> str:
        return " / ".join(part for part in (self.vendor_id, self.vendor_name) if part)


class RuleAction(models.TextChoices):
    PROCESS = "process", "Process"
    DO_NOT_PROCESS = "do_not_process", "Do not process"


# A rule's lead type; blank takes it from the lead's vehicle status.
RULE_LEAD_TYPES = [("", "(from the lead)"), *LeadType.choices]


class ParsingRule(models.Model):
    """Per account, first active match by priority wins; a rule without conditions matches all."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="parsing_rules"
    )
    name = models.CharField(max_length=100)
    priority = models.PositiveIntegerField(default=100, help_text="Lower runs first.")
    is_active = models.BooleanField(default=True)
    action = models.CharField(
        max_length=16, choices=RuleAction, default=RuleAction.PROCESS
    )
    source_label = models.CharField(
        max_length=45, blank=True, help_text="The call's source; empty: the lead's."
    )
    department = models.CharField(max_length=45, blank=True)
    lead_type = models.CharField(max_length=8, choices=RULE_LEAD_TYPES, blank=True)
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    class Meta:
        ordering = ["account_id", "priority", "id"]

    def __str__(self) -> str:
        return self.name


class Operator(models.TextChoices):
    EQUALS = "equals"
    CONTAINS = "contains"
    STARTS_WITH = "starts_with", "starts with"
    REGEX = "regex"
    PRESENT = "present"
    ABSENT = "absent"


class RuleCondition(models.Model):
    """One test of an ADF field; all conditions of a rule must hold. Case-insensitive."""

    rule = models.ForeignKey(
        ParsingRule, on_delete=models.CASCADE, related_name="conditions"
    )
    field = models.CharField(max_length=64, choices=sorted(FIELDS.items()))
    operator = models.CharField(
        max_length=16, choices=Operator, default=Operator.EQUALS
    )
    value = models.CharField(max_length=255, blank=True)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.field} {self.operator} {self.value}".strip()


class Outcome(models.TextChoices):
    RECEIVED = "received", "Received (not processed yet)"
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    NO_VENDOR = "no_vendor", "No vendor"
    NO_RULE = "no_rule", "No rule"
    DO_NOT_PROCESS = "do_not_process", "Do not process"
    NO_PHONE = "no_phone", "No phone"
    NO_PROSPECT_ID = "no_prospect_id", "No prospect id"
    MALFORMED = "malformed"
    NOT_ADF = "not_adf", "Not ADF"


class Lead(models.Model):
    """A lead exactly as received, stored before anything else happens to it."""

    organization = models.ForeignKey(
        Organization, on_delete=models.CASCADE, related_name="leads"
    )
    credential = models.ForeignKey(
        ApiCredential, null=True, on_delete=models.SET_NULL, related_name="leads"
    )
    raw_xml = models.TextField()
    # The position of this lead's prospect in its document (several prospects, several leads).
    prospect_index = models.PositiveSmallIntegerField(default=0)
    document = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="siblings",
        help_text="The document's first lead, for its other prospects.",
    )
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    processed_at = models.DateTimeField(null=True, blank=True)
    processing_ms = models.FloatField(null=True, blank=True)
    outcome = models.CharField(
        max_length=16, choices=Outcome, default=Outcome.RECEIVED, db_index=True
    )
    reason = models.TextField(blank=True)
    parsed = models.JSONField(null=True, blank=True)
    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.SET_NULL, related_name="leads"
    )
    matched_rule = models.ForeignKey(
        ParsingRule, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    vendor_id = models.CharField(max_length=100, blank=True)
    vendor_name = models.CharField(max_length=200, blank=True)
    prospect_id = models.CharField(max_length=255, blank=True)
    prospect_source = models.CharField(max_length=255, blank=True)
    whisper = models.TextField(blank=True)
    call_notes = models.TextField(blank=True)
    is_test = models.BooleanField(default=False)
    # Set once a lead is processed: a second lead with the same key is a duplicate.
    dedupe_key = models.CharField(
        max_length=600, null=True, blank=True, unique=True, editable=False
    )
    duplicate_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    call = models.OneToOneField(
        Call, null=True, blank=True, on_delete=models.SET_NULL, related_name="lead"
    )
    response_status = models.PositiveSmallIntegerField(null=True, blank=True)
    response_body = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"Lead {self.pk} ({self.outcome})"
