"""Calls: one per lead (or click-to-call request) to connect with an agent.

A call carries the lead members the scored call record (part 2.3) shows, copied when the
call is queued, so the pipeline never needs to know where a call came from.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from accounts.models import Account, Team


class CallStatus(models.TextChoices):
    QUEUED = "QUEUED", "Queued"
    DIALING = "DIALING", "Dialing"
    ANSWER = "ANSWER", "Answered"
    NOANSWER = "NOANSWER", "No answer"
    BUSY = "BUSY", "Busy"
    FAILED = "FAILED", "Failed"
    CANCEL = "CANCEL", "Cancelled"
    NOAGENT = "NOAGENT", "No agent"


class LeadType(models.TextChoices):
    """What a lead is after (a call's ``lead_type``): a new vehicle or a used one. Parsing
    rules set it, scorers correct it."""

    NEW = "New"
    USED = "Used"


class CallOrigin(models.TextChoices):
    LEAD = "lead", "Lead intake"
    CLICK_TO_CALL = "clicktocall", "Click to call"
    TEXT_REPLY = "text", "Text reply"  # the lead texted back asking for a call
    CADENCE = "cadence", "Follow-up step"  # a step of the account's follow-up cadence


class Call(models.Model):
    account = models.ForeignKey(Account, on_delete=models.PROTECT, related_name="calls")
    origin = models.CharField(
        max_length=16, choices=CallOrigin, default=CallOrigin.LEAD
    )
    status = models.CharField(
        max_length=16,
        choices=CallStatus,
        default=CallStatus.QUEUED,
        db_index=True,
    )
    is_test = models.BooleanField(
        default=False, help_text="A test account's call: no real phone call is placed."
    )
    is_demo = models.BooleanField(
        default=False,
        help_text="Made up by manage.py seed_demo, which writes only to calls so marked.",
    )
    received_at = models.DateTimeField(
        help_text="When the lead or request arrived; responseTime counts from here."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The lead, as the scored record shows it.
    altid = models.CharField(
        max_length=255, blank=True, help_text="The vendor's prospect id(s)."
    )
    source = models.CharField(max_length=45, blank=True)
    first_name = models.CharField(max_length=45, blank=True)
    last_name = models.CharField(max_length=45, blank=True)
    email = models.CharField(max_length=255, blank=True)
    phone = models.CharField(max_length=16, help_text="E.164")
    call_notes = models.TextField(blank=True)
    whisper = models.TextField(blank=True)
    lead_type = models.CharField(max_length=45, blank=True, help_text="New or Used")
    department = models.CharField(max_length=45, blank=True)
    team = models.ForeignKey(
        Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls"
    )
    called_on_make = models.CharField(max_length=45, blank=True)
    called_on_model = models.CharField(max_length=45, blank=True)
    called_on_year = models.CharField(max_length=45, blank=True)
    called_on_registration = models.TextField(blank=True)
    called_on_summary = models.TextField(blank=True)
    current_make = models.CharField(max_length=45, blank=True)
    current_model = models.CharField(max_length=45, blank=True)
    current_year = models.CharField(max_length=45, blank=True)
    current_registration = models.TextField(blank=True)
    current_summary = models.TextField(blank=True)
    # What happened, filled in by call setup.
    agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="calls",
    )
    attempts = models.PositiveIntegerField(default=0, help_text="Dials of the lead.")
    duration = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds bridged."
    )
    response_time = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds from receipt to the lead answering."
    )
    recording_url = models.TextField(blank=True)
    update_notes = models.TextField(blank=True)
    inbound_tracking_number = models.TextField(blank=True)
    summary = models.TextField(blank=True)
    transcription = models.TextField(blank=True)
    transcript_turns = models.JSONField(
        default=list,
        blank=True,
        help_text=(
            "The transcription turn by turn: side (agent or lead), start and end "
            "(seconds into the recording) and text; ``transcription`` is its text."
        ),
    )
    transcript_language = models.CharField(
        max_length=8,
        blank=True,
        help_text=(
            "The language the lead spoke, as the transcription engine told it (ISO "
            '639-1: "en", "es"); empty before the call is transcribed.'
        ),
    )
    redactions = models.JSONField(
        default=list,
        blank=True,
        help_text=(
            "The card and identity numbers taken out of the transcription: each one's "
            "side, start and end (seconds into the recording) and kind; the same spans "
            "are silenced in the stored recording."
        ),
    )
    # Click-to-call names its agent; such a call is offered to that agent only.
    requested_agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    # Click-to-call may name an agent the service does not know (of the vendor's system):
    # such a call is rung at ``agent_number`` at once, never offered to users.
    vendor_agent_id = models.CharField(
        max_length=45, blank=True, help_text="The agent's id in the vendor's system."
    )
    agent_number = models.CharField(
        max_length=16,
        blank=True,
        help_text="E.164. The number of an agent who is not a user, rung for every round.",
    )
    rounds = models.PositiveSmallIntegerField(
        default=0, help_text="Rounds of offering the call to agents."
    )
    unanswered_rounds = models.PositiveSmallIntegerField(
        default=0, help_text="Rounds no agent accepted."
    )
    next_attempt_at = models.DateTimeField(
        null=True, blank=True, db_index=True, help_text="Not dialed before this."
    )
    ended_at = models.DateTimeField(null=True, blank=True)
    # At most one setup task per call is in the broker: when one was handed over (for the
    # time it runs at), or null when none is pending. The sweep dispatches a queued call
    # again only when none is, or when one was lost with its worker.
    setup_dispatched_at = models.DateTimeField(null=True, blank=True)
    waiting_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Since when the call waits for an agent: every one on duty is on a call, or none is on duty until the next schedule opening.",
    )
    end_estimated = models.BooleanField(
        default=False,
        help_text="The provider lost its record of this answered call: its end and duration are the last moment known.",
    )

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            # An account's calls in (received_at, id) order: the dashboard's and the call
            # browser's ranges, and the scored call data export reading them in order.
            models.Index(
                fields=["account", "received_at", "id"], name="call_account_received"
            ),
            # The call browser's default order across many accounts (its first page reads
            # 50 entries of this index instead of sorting every call in reach).
            models.Index(fields=["-received_at", "-id"], name="call_received_newest"),
            # The hand-over: the oldest queued call of the account a freed agent may take.
            models.Index(
                fields=["account", "received_at", "id"],
                condition=models.Q(status="QUEUED"),
                name="calls_call_queued_idx",
            ),
            # The call browser's Source choices: each account's sources walked through
            # this index, a probe per source (scoring.selectors.call_sources).
            models.Index(
                fields=["account", "source"], name="calls_call_account_source"
            ),
        ]

    def __str__(self) -> str:
        return f"Call {self.pk} ({self.status})"

    @property
    def agent_shown(self) -> str:
        """The record's ``agent``: see ``agent_label``."""
        return agent_label(
            full_name=self.agent.get_full_name() if self.agent else "",
            vendor_agent_id=self.vendor_agent_id,
            agent_number=self.agent_number,
        )


def agent_label(*, full_name: str, vendor_agent_id: str, agent_number: str) -> str:
    """Who took the call, as records show it: the user's full name; for an agent who is not
    a user (rung at ``agent_number``), the vendor's agent id, else that number."""
    if full_name or not agent_number:
        return full_name
    return vendor_agent_id or agent_number


class RingMode(models.TextChoices):
    SEQUENTIAL = "sequential", "Sequential (one agent at a time)"
    SIMULTANEOUS = "simultaneous", "Simultaneous (first to press 1 wins)"


class NoAgentPolicy(models.TextChoices):
    WAIT = "wait", "Wait for the next schedule opening"
    END = "end", "End the call as NOAGENT"


def default_retry_cadence() -> list[int]:
    return [0, 120, 600]


class DialingSettings(models.Model):
    """How an account's calls are set up. An account without a row uses the defaults."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="dialing_settings"
    )
    ring_mode = models.CharField(
        max_length=16, choices=RingMode, default=RingMode.SEQUENTIAL
    )
    agent_ring_seconds = models.PositiveSmallIntegerField(
        default=20,
        help_text="How long an agent's phone rings before the next agent is tried.",
    )
    press_one_required = models.BooleanField(
        default=True,
        help_text="The agent must press 1 after the whisper; otherwise answering connects.",
    )
    lead_attempt_limit = models.PositiveSmallIntegerField(
        default=3, help_text="How many times the lead is dialed."
    )
    retry_cadence = models.JSONField(
        default=default_retry_cadence,
        help_text="Seconds to wait before each dial of the lead, the first entry for the first dial: "
        "[0, 120, 600] dials now, 2 min after a miss, then 10 min after the next; the last entry repeats.",
    )
    agent_rounds = models.PositiveSmallIntegerField(
        default=2,
        help_text="How many times every available agent is offered a call before it ends as NOAGENT.",
    )
    agent_round_pause_seconds = models.PositiveSmallIntegerField(default=60)
    no_agent_policy = models.CharField(
        max_length=8, choices=NoAgentPolicy, default=NoAgentPolicy.WAIT
    )

    class Meta:
        verbose_name_plural = "dialing settings"

    def __str__(self) -> str:
        return f"Dialing settings of {self.account}"


class Leg(models.TextChoices):
    AGENT = "agent"
    LEAD = "lead"


class AttemptOutcome(models.TextChoices):
    PENDING = "", "(in progress)"
    ACCEPTED = "accepted", "Agent pressed 1"
    REFUSED = "refused", "Agent did not press 1"
    ANSWERED = "answered", "Lead answered"
    NOANSWER = "noanswer", "No answer"
    BUSY = "busy"
    FAILED = "failed"
    CANCELED = "canceled", "Hung up by the service"


class CallAttempt(models.Model):
    """One leg dialed: an agent being offered the call, or the lead being dialed."""

    call = models.ForeignKey(
        Call, on_delete=models.CASCADE, related_name="attempts_log"
    )
    leg = models.CharField(max_length=8, choices=Leg)
    round = models.PositiveSmallIntegerField(default=1)
    agent = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="agent_attempts",
    )
    number = models.CharField(max_length=16)
    provider = models.CharField(max_length=16)
    provider_id = models.CharField(max_length=64, blank=True, db_index=True)
    created_at = models.DateTimeField(auto_now_add=True)
    dial_requested_at = models.DateTimeField(null=True, blank=True)
    dial_dispatched_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When a dial task for this leg was handed to the broker (null: none pending).",
    )
    ringing_at = models.DateTimeField(null=True, blank=True)
    answered_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=AttemptOutcome, blank=True)
    key_pressed = models.CharField(max_length=8, blank=True)
    duration = models.PositiveIntegerField(
        null=True, blank=True, help_text="Seconds answered."
    )
    checked_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the provider last said this leg, silent to us, was still live.",
    )

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # Whether an agent is on a call now: their open legs.
            models.Index(
                fields=["agent"],
                condition=models.Q(ended_at__isnull=True),
                name="calls_attempt_open_idx",
            ),
            # Agent selection's "least recently offered first".
            models.Index(
                fields=["agent", "created_at"], name="calls_attempt_offered_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.leg} {self.number} {self.outcome or 'in progress'}"


class SimulatedLeg(models.Model):
    """The simulator's own record of a leg it placed, as a real switch keeps one: when it
    was answered, when and how it ended, how often it was dialed. In the database, so it
    outlives a cache flush or a broker lost with its tasks, as a real provider's records do;
    every change is a locked update, so concurrent callbacks never lose one."""

    attempt_id = models.BigIntegerField(primary_key=True)
    dials = models.PositiveIntegerField(default=0)
    answered_at = models.DateTimeField(null=True, blank=True)
    ends_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.CharField(max_length=16, blank=True)
    duration = models.PositiveIntegerField(null=True, blank=True)

    def __str__(self) -> str:
        return f"Simulated leg {self.attempt_id}"


class WorkerBeat(models.Model):
    """Who may hold the call pipeline's tasks: each worker consuming the ``calls`` queue
    (``name`` its node name, ``token`` its process id) beats here every few seconds while it
    runs, and the broker is a row of its own (``token`` its server's run id). A worker that
    stops beating, or comes back as a new process without having said goodbye, or a broker
    that comes back as a new server, may have lost the setups and dials it held: the row is
    marked ``lost`` and the sweep sends every pending one again, once. Nothing else is ever
    sent twice: a setup or dial merely waiting in a long queue is left to run."""

    name = models.CharField(max_length=255, unique=True)
    token = models.CharField(max_length=64)
    beat_at = models.DateTimeField()
    lost = models.BooleanField(default=False)

    def __str__(self) -> str:
        return self.name


class RecordingStatus(models.TextChoices):
    PENDING = "pending", "Being made or fetched"
    STORED = "stored", "Stored"
    FAILED = "failed", "Could not be stored"


class Recording(models.Model):
    """The audio of a call's answered lead leg, kept in the service's storage (Django's
    storage API: ``MEDIA_ROOT`` by default, any django-storages backend in production):
    two channels, the agent on the first and the lead on the second. The simulator's is
    spoken from a conversation script (``script``, the ground truth of what was said);
    Twilio's dual-channel recording is fetched from Twilio (``source_url``). Once stored it
    is what the recording link plays and what speech-to-text reads."""

    call = models.OneToOneField(
        Call, on_delete=models.CASCADE, related_name="recording"
    )
    attempt = models.ForeignKey(
        CallAttempt, on_delete=models.CASCADE, related_name="recordings"
    )
    status = models.CharField(
        max_length=16, choices=RecordingStatus, default=RecordingStatus.PENDING
    )
    audio = models.FileField(upload_to="recordings/%Y/%m/", blank=True, max_length=255)
    source_url = models.URLField(
        max_length=500, blank=True, help_text="Where the provider keeps it (Twilio)."
    )
    content_type = models.CharField(max_length=64, blank=True, default="audio/wav")
    seconds = models.FloatField(null=True, blank=True)
    channels = models.PositiveSmallIntegerField(null=True, blank=True)
    sample_rate = models.PositiveIntegerField(null=True, blank=True)
    script = models.JSONField(
        default=dict,
        blank=True,
        help_text="The simulator's conversation: what the audio carries, turn by turn.",
    )
    tries = models.PositiveSmallIntegerField(default=0)
    runs = models.PositiveSmallIntegerField(
        default=0,
        help_text="Runs started: with those that died (a worker killed while making it) "
        "counted, none is run more than calls.media.MAX_TRIES times.",
    )
    reason = models.TextField(blank=True, help_text="Why it could not be stored.")
    created_at = models.DateTimeField(auto_now_add=True)
    # The hand-over mark: the sweep sends the storing again only when this hand-over may
    # have been lost (core.handover.lost_before), never while it waits in a queue.
    dispatched_at = models.DateTimeField(
        null=True, blank=True, help_text="When its storing was last handed to a worker."
    )
    stored_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=models.Q(status="pending"),
                name="calls_recording_pending_idx",
            )
        ]

    def __str__(self) -> str:
        return f"Recording of call {self.call_id} ({self.status})"
