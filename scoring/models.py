"""Scorecards, scores, coaching and their revisions, and scorers' claims on calls.

A score keeps the category names and points it was scored under (``category_names``,
``category_points``): editing a scorecard later never rewrites a scored call.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist, ValidationError
from django.db import models
from django.db.models import Q

from accounts.models import Account
from calls.models import Call, LeadType
from core.validation import digits_only

CATEGORY_SLOTS = 10
# Column widths of the scored call record (part 2.3): VARCHAR(45), TEXT, MEDIUMTEXT.
SHORT = 45
TEXT = 65_535
MEDIUMTEXT = 16_777_215


class Scorecard(models.Model):
    """What an account's calls are scored on: ten category slots and the lists scorers pick from."""

    account = models.OneToOneField(
        Account, on_delete=models.CASCADE, related_name="scorecard"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["account__name", "id"]

    def __str__(self) -> str:
        return f"Scorecard of {self.account}"


class Side(models.TextChoices):
    """Whose words a suggestion rule listens to."""

    AGENT = "agent", "The agent"
    LEAD = "lead", "The lead"
    EITHER = "either", "Either side"


class SuggestionRule(models.Model):
    """What makes the service suggest a category or a list entry to the scorer: phrases
    (one per line; ``{first_name}`` is the lead's first name, ``{weekday}`` any weekday,
    ``re:`` starts a regular expression; ``{vehicle}``, ``{questions_answered}`` and
    ``{appointment}`` stand for what the call established, ``scoring.suggestions``) said on
    one side, optionally within the first seconds of the call. Abstract: categories and
    list entries carry their own."""

    phrases = models.TextField(
        blank=True,
        help_text=(
            "One per line, matched without regard to case. {first_name}: the lead's first "
            "name; {weekday}: any weekday; a line starting with re: is a regular "
            "expression. A line alone of {vehicle}: a line naming the vehicle discussed; "
            "{questions_answered}: the agent's answers, when every question the lead asked "
            "was answered; {appointment}: the line that agreed an appointment's day and time."
        ),
    )
    side = models.CharField(max_length=8, choices=Side, default=Side.EITHER)
    within_seconds = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Only in the call's first seconds (blank: any time).",
    )

    class Meta:
        abstract = True

    def clean(self) -> None:
        from scoring.suggestions import phrase_errors

        errors = phrase_errors(self.phrases)
        if errors:
            raise ValidationError(
                {"phrases": [f"Not a valid regular expression: {e}" for e in errors]}
            )


class ScorecardCategory(SuggestionRule):
    """One of the ten slots; a slot without a name is unused."""

    scorecard = models.ForeignKey(
        Scorecard, on_delete=models.CASCADE, related_name="categories"
    )
    slot = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=256, blank=True)
    guidance = models.TextField(
        blank=True, help_text="What the scorer listens for before applying it."
    )
    points = models.PositiveSmallIntegerField(
        default=1, help_text="The category's weight."
    )

    class Meta:
        ordering = ["scorecard_id", "slot"]
        verbose_name_plural = "categories"
        constraints = [
            models.UniqueConstraint(
                fields=["scorecard", "slot"], name="scorecard_slot_unique"
            ),
            models.CheckConstraint(
                condition=Q(slot__gte=1, slot__lte=CATEGORY_SLOTS),
                name="scorecard_slot_in_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.slot}. {self.name or '(unused)'}"


class ChoiceKind(models.TextChoices):
    CALL_END = "call_end", "Call-end reason"
    ALERT = "alert", "Alert tag"
    DEPARTMENT = "department", "Department"


class ScorecardChoice(SuggestionRule):
    """An entry of one of the account's lists: call-end reasons, alert tags, departments."""

    scorecard = models.ForeignKey(
        Scorecard, on_delete=models.CASCADE, related_name="choices"
    )
    kind = models.CharField(max_length=16, choices=ChoiceKind)
    name = models.CharField(max_length=SHORT)
    position = models.PositiveSmallIntegerField(default=0)
    needs_appointment = models.BooleanField(
        default=False,
        help_text=(
            "Call-end reasons only: a score with this call end must give the "
            "appointment date."
        ),
    )

    class Meta:
        ordering = ["scorecard_id", "kind", "position", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["scorecard", "kind", "name"], name="scorecard_choice_unique"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class Score(models.Model):
    """The one score of an answered call, with its coaching."""

    call = models.OneToOneField(Call, on_delete=models.CASCADE, related_name="score")
    scorer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="scores",
    )
    # scoredAgent and transcibedBy: the scorer's full name when the call was scored.
    scorer_name = models.CharField(max_length=SHORT, blank=True)
    scored_at = models.DateTimeField()
    updated_at = models.DateTimeField(auto_now=True)
    # The scorecard as it was: ten names (None for an unused slot) and ten points.
    category_names = models.JSONField(default=list)
    category_points = models.JSONField(default=list)
    cat1 = models.BooleanField(default=False)
    cat2 = models.BooleanField(default=False)
    cat3 = models.BooleanField(default=False)
    cat4 = models.BooleanField(default=False)
    cat5 = models.BooleanField(default=False)
    cat6 = models.BooleanField(default=False)
    cat7 = models.BooleanField(default=False)
    cat8 = models.BooleanField(default=False)
    cat9 = models.BooleanField(default=False)
    cat10 = models.BooleanField(default=False)
    wow = models.BooleanField(default=False)
    accepted_suggestions = models.JSONField(
        default=list,
        blank=True,
        help_text="The members the scorer kept as the service suggested them.",
    )
    first_name = models.CharField(max_length=SHORT, blank=True)
    last_name = models.CharField(max_length=SHORT, blank=True)
    alt_phone = models.CharField(max_length=SHORT, blank=True)
    email = models.CharField(max_length=SHORT, blank=True)
    department = models.CharField(max_length=SHORT, blank=True)
    notes = models.TextField(max_length=TEXT, blank=True)
    appointment_date = models.DateField(null=True, blank=True)
    appointment_time = models.TimeField(null=True, blank=True)
    call_end = models.CharField(max_length=SHORT, blank=True)
    alert = models.CharField(
        max_length=SHORT, blank=True, help_text="Alert tags, separated by commas."
    )
    current_make = models.CharField(max_length=SHORT, blank=True)
    current_model = models.CharField(max_length=SHORT, blank=True)
    current_year = models.CharField(max_length=SHORT, blank=True)
    current_registration = models.TextField(max_length=MEDIUMTEXT, blank=True)
    current_summary = models.TextField(max_length=TEXT, blank=True)
    called_on_make = models.CharField(max_length=SHORT, blank=True)
    called_on_model = models.CharField(max_length=SHORT, blank=True)
    called_on_year = models.CharField(max_length=SHORT, blank=True)
    called_on_registration = models.TextField(max_length=MEDIUMTEXT, blank=True)
    called_on_summary = models.TextField(max_length=TEXT, blank=True)
    lead_type = models.CharField(max_length=SHORT, blank=True, choices=LeadType.choices)
    # Coaching, by a manager of the account; the agent reads it.
    coach_notes = models.TextField(max_length=TEXT, blank=True)
    coach = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="coached_scores",
    )
    coached_by = models.CharField(max_length=SHORT, blank=True)
    coached_at = models.DateTimeField(null=True, blank=True)
    coaching_read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-scored_at", "-id"]
        indexes = [
            models.Index(fields=["scorer", "scored_at"]),
            # The call browser's Call end and Alert choices read the names found on the
            # scores in reach (scoring.selectors.score_list_names) from this index, not
            # from the wide score rows, and a score without either is not in it.
            models.Index(
                fields=["call_end", "alert", "call"],
                condition=~models.Q(call_end="", alert=""),
                name="score_listed_names",
            ),
        ]
        # The roles of scoring.selectors; the permission templates (groups) hold them.
        permissions = [
            ("score_calls", "Can score the calls of the accounts in reach"),
            ("coach_account_calls", "Can coach and browse the calls of their accounts"),
            (
                "coach_organization_calls",
                "Can coach and browse the calls of every account of their organizations",
            ),
            ("take_calls", "Takes calls (offered as an agent in the call browser)"),
        ]

    def __str__(self) -> str:
        return f"Score of call {self.call_id}"

    @property
    def applied(self) -> list[bool]:
        return [getattr(self, f"cat{slot}") for slot in range(1, CATEGORY_SLOTS + 1)]

    @property
    def points(self) -> int:
        """Points earned: the weights of the applied categories."""
        weights = list(self.category_points) + [0] * CATEGORY_SLOTS
        return sum(w for w, on in zip(weights, self.applied, strict=False) if on)

    def member_label(self, member: str) -> str:
        """How a person reads a scored member (in a revision): a category by the name it was
        scored under, any other by its field's verbose name (``coach_notes``: "coach notes")."""
        if digits_only(member.removeprefix("cat")):
            slot = int(member.removeprefix("cat"))
            names = self.category_names or []
            name = names[slot - 1] if slot <= len(names) else None
            return f"category {slot} ({name})" if name else f"category {slot}"
        try:
            field = self._meta.get_field(member)
        except FieldDoesNotExist:
            return member.replace("_", " ")
        return str(getattr(field, "verbose_name", member.replace("_", " ")))


class RevisionKind(models.TextChoices):
    SCORE = "score", "Score"
    COACHING = "coaching", "Coaching"


class ScoreRevision(models.Model):
    """One change to a score or its coaching: who, when, and each member's old and new value."""

    score = models.ForeignKey(Score, on_delete=models.CASCADE, related_name="revisions")
    kind = models.CharField(max_length=16, choices=RevisionKind)
    changed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    changed_by_name = models.CharField(max_length=150, blank=True)
    changed_at = models.DateTimeField(auto_now_add=True)
    # {"member": [old, new], ...}; the first revision of a score has every old value null.
    changes = models.JSONField(default=dict)

    class Meta:
        ordering = ["changed_at", "id"]

    def __str__(self) -> str:
        return (
            f"{self.get_kind_display()} change by {self.changed_by_name or 'someone'}"
        )


class ScoringClaim(models.Model):
    """A scorer's hold on a call from the queue; expired, the call returns to the queue."""

    call = models.OneToOneField(
        Call, on_delete=models.CASCADE, related_name="scoring_claim"
    )
    scorer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    claimed_at = models.DateTimeField()
    expires_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"Call {self.call_id} held until {self.expires_at:%H:%M:%S}"


class CallSuggestions(models.Model):
    """What the service suggests to the scorer of a call, from its transcription: by score
    member (``cat1``..``cat10``, ``alert``, ``call_end``, ``appointment_date``,
    ``appointment_time``, the vehicles' members), each ``{"value", "line", "text", "at"}``:
    the value and the transcript line that triggered it. Never a score: a person confirms."""

    call = models.OneToOneField(
        Call, on_delete=models.CASCADE, related_name="suggestions"
    )
    members = models.JSONField(default=dict)
    made_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "call suggestions"

    def __str__(self) -> str:
        return f"Suggestions for call {self.call_id}"


class SuggestionSource(models.TextChoices):
    RULE = "rule", "Phrase rule"
    LEARNT = "learnt", "Learnt from the scores"


class LearntSuggester(models.Model):
    """What the service learnt to suggest for one member of an account's scores (``cat3``,
    ``call_end``, ``alert:Hot lead``) from its scorers' confirmed scores, and whether that
    or the phrase rule is in force: both measured on the same newest calls, held out from
    training (scoring/learning.py). ``weights`` is the model as plain data, kept only while
    it is in force. ``accounts`` above one: too few scores of the account's own, learnt
    from its organization's accounts that score a category of the same name."""

    account = models.ForeignKey(
        Account, on_delete=models.CASCADE, related_name="learnt_suggesters"
    )
    member = models.CharField(max_length=64)
    name = models.CharField(max_length=256, help_text="The category, list or tag.")
    source = models.CharField(
        max_length=8, choices=SuggestionSource, default=SuggestionSource.RULE
    )
    reason = models.CharField(max_length=200, blank=True)
    examples = models.PositiveIntegerField(default=0)
    accounts = models.PositiveSmallIntegerField(default=1)
    held_out = models.PositiveIntegerField(default=0)
    rule_precision = models.FloatField(null=True, blank=True)
    rule_recall = models.FloatField(null=True, blank=True)
    rule_f1 = models.FloatField(null=True, blank=True)
    learnt_precision = models.FloatField(null=True, blank=True)
    learnt_recall = models.FloatField(null=True, blank=True)
    learnt_f1 = models.FloatField(null=True, blank=True)
    weights = models.JSONField(null=True, blank=True)
    trained_at = models.DateTimeField()

    class Meta:
        ordering = ["account_id", "member"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "member"], name="learnt_suggester_unique"
            ),
            models.CheckConstraint(
                condition=~Q(source="learnt") | Q(weights__isnull=False),
                name="learnt_suggester_has_weights",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.member} of account {self.account_id}: {self.source}"


# --- the dashboard's rollup (scoring/rollup.py builds it, scoring/figures.py reads it)
#
# Per account and local day (the account's timezone, as the dashboard's range has it), the
# figures the dashboard sums: counts by agent and source, a histogram of response times
# (merged days give percentile_cont's exact answer), the agents' legs and the counts per
# UTC hour. Rows are derived data: rebuilt from the calls at any time, never edited. The
# agent columns hold the user's id without a foreign key: a row is only ever recomputed.


class RollupCoverage(models.Model):
    """How far an account's rollup is complete: every local day up to ``through`` (none
    yet: null), cut in ``timezone``. A later day, a day with a stale mark, or an account
    whose timezone has changed since is read from the calls instead. Its row is also the
    lock every write of the account's rollup takes."""

    account = models.OneToOneField(
        Account,
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="rollup_coverage",
    )
    timezone = models.CharField(max_length=64)
    through = models.DateField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "dashboard rollup"

    def __str__(self) -> str:
        return f"Rollup of account {self.account_id} through {self.through}"


class RollupStale(models.Model):
    """A call whose figures changed (it ended, its score or a leg changed), marked in the
    transaction that changed it: its day is read from the calls until the rollup sweep has
    computed it again and removed the mark."""

    call = models.ForeignKey(Call, on_delete=models.CASCADE, related_name="+")
    marked_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"Call {self.call_id} changed"


class RollupDay(models.Model):
    """The calls of one account's day taken by one agent (or none) from one source: the
    counts of the dashboard's headline figures, sources, leaderboard and categories."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    agent_id = models.IntegerField(null=True)
    source = models.CharField(max_length=45, blank=True)
    received = models.PositiveIntegerField(default=0)
    answered = models.PositiveIntegerField(default=0)
    noagent = models.PositiveIntegerField(default=0)
    within30 = models.PositiveIntegerField(default=0)
    within60 = models.PositiveIntegerField(default=0)
    within300 = models.PositiveIntegerField(default=0)
    response_sum = models.BigIntegerField(default=0)
    response_n = models.PositiveIntegerField(default=0)
    scored = models.PositiveIntegerField(default=0)
    appointments = models.PositiveIntegerField(default=0)
    wow = models.PositiveIntegerField(default=0)
    cat1 = models.PositiveIntegerField(default=0)
    cat2 = models.PositiveIntegerField(default=0)
    cat3 = models.PositiveIntegerField(default=0)
    cat4 = models.PositiveIntegerField(default=0)
    cat5 = models.PositiveIntegerField(default=0)
    cat6 = models.PositiveIntegerField(default=0)
    cat7 = models.PositiveIntegerField(default=0)
    cat8 = models.PositiveIntegerField(default=0)
    cat9 = models.PositiveIntegerField(default=0)
    cat10 = models.PositiveIntegerField(default=0)

    class Meta:
        indexes = [models.Index(fields=["account", "day"])]

    def __str__(self) -> str:
        return f"{self.day} of account {self.account_id}"


class RollupResponse(models.Model):
    """How many calls of one account's day, taken by one agent (or none), had each response
    time: the histogram every percentile of the dashboard is read from."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    agent_id = models.IntegerField(null=True)
    seconds = models.PositiveIntegerField()
    calls = models.PositiveIntegerField()

    class Meta:
        indexes = [models.Index(fields=["account", "day"])]

    def __str__(self) -> str:
        return f"{self.calls} calls in {self.seconds} s on {self.day}"


class RollupOffer(models.Model):
    """An agent's legs on the calls of one account's day: offers, presses of 1, distinct
    calls offered and those of them the agent answered (distinct per day, so summed over
    days, as each call has one day)."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    agent_id = models.IntegerField()
    offered = models.PositiveIntegerField(default=0)
    accepted = models.PositiveIntegerField(default=0)
    offered_calls = models.PositiveIntegerField(default=0)
    answered_offered = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "day", "agent_id"], name="rollup_offer_unique"
            )
        ]

    def __str__(self) -> str:
        return f"Offers to agent {self.agent_id} on {self.day}"


class RollupHour(models.Model):
    """The calls of one account's day received in one UTC hour (``hour``, its start): the
    trend and NOAGENT by hour, moved to the viewer's timezone when read."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    hour = models.DateTimeField()
    received = models.PositiveIntegerField(default=0)
    answered = models.PositiveIntegerField(default=0)
    within60 = models.PositiveIntegerField(default=0)
    noagent = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["account", "day", "hour"], name="rollup_hour_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.hour:%Y-%m-%d %H}:00 UTC of account {self.account_id}"


class RollupStaleDay(models.Model):
    """An account's local day whose figures changed though none of its calls did (an
    appointment starting then changed status), named by a moment of it (``at``; its day
    is cut in the account's timezone when read, as a call's is): read from the data until
    the rollup sweep has computed the day again and removed the mark."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    at = models.DateTimeField()
    marked_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"The day of {self.at} at account {self.account_id} changed"
