"""Scorecards, scoring, coaching and the scoring queue. Every write of a score or its
coaching is kept as a revision; a score keeps the scorecard it was scored under."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallStatus
from calls.transcripts import reading_context, speaker_names
from scoring import suggestions
from scoring.defaults import (
    DEFAULT_APPOINTMENT_CALL_ENDS,
    DEFAULT_CATEGORIES,
    DEFAULT_CATEGORY_RULES,
    DEFAULT_CHOICE_RULES,
    DEFAULT_CHOICES,
)
from scoring.learnt import learnt_suggestions_apply
from scoring.models import (
    CATEGORY_SLOTS,
    MEDIUMTEXT,
    SHORT,
    TEXT,
    CallSuggestions,
    ChoiceKind,
    LeadType,
    RevisionKind,
    Score,
    Scorecard,
    ScorecardCategory,
    ScorecardChoice,
    ScoreRevision,
    ScoringClaim,
)
from scoring.payloads import coaching_event_emit, score_event_emit
from scoring.rollup_build import rollup_mark
from scoring.selectors import accounts_coachable_by, accounts_scorable_by, scoring_queue
from scoring.signals import score_saved
from understanding import LANGUAGES, Context, understand
from users.models import User

# What a scorer fills in, with the longest value each member takes (part 2.3).
TEXT_MEMBERS: dict[str, int] = {
    "first_name": SHORT,
    "last_name": SHORT,
    "alt_phone": SHORT,
    "email": SHORT,
    "department": SHORT,
    "notes": TEXT,
    "call_end": SHORT,
    "alert": SHORT,
    "current_make": SHORT,
    "current_model": SHORT,
    "current_year": SHORT,
    "current_registration": MEDIUMTEXT,
    "current_summary": TEXT,
    "called_on_make": SHORT,
    "called_on_model": SHORT,
    "called_on_year": SHORT,
    "called_on_registration": MEDIUMTEXT,
    "called_on_summary": TEXT,
    "lead_type": SHORT,
}
CATEGORY_MEMBERS = [f"cat{slot}" for slot in range(1, CATEGORY_SLOTS + 1)]
FLAG_MEMBERS = [*CATEGORY_MEMBERS, "wow"]
SCORED_MEMBERS = [
    *TEXT_MEMBERS,
    "appointment_date",
    "appointment_time",
    *FLAG_MEMBERS,
]
LABELS = {
    "alt_phone": "alternate phone",
    "call_end": "call end",
    "lead_type": "lead type",
    "called_on_make": "called-on make",
    "called_on_model": "called-on model",
    "called_on_year": "called-on year",
    "called_on_registration": "called-on registration number",
    "called_on_summary": "called-on summary",
    "current_registration": "current registration number",
}
YEAR_MEMBERS = ["current_year", "called_on_year"]
YEAR = re.compile(r"[0-9]{4}")
FIRST_YEAR = 1886
ONLY_ANSWERED = "Only answered calls can be scored."
NOT_SCORED = "Only a scored call can be coached."
NO_SCORING_RIGHT = "You may not score calls of this account."
NO_COACHING_RIGHT = "You may not coach calls of this account."
TIME_WITHOUT_DATE = "Give the appointment's date with its time."


def _label(member: str) -> str:
    return LABELS.get(member, member.replace("_", " "))


def scorecard_create_default(*, account: Account) -> Scorecard:
    """The account's scorecard, created with the default categories and lists if missing
    (idempotent: the one place a default scorecard is made)."""
    scorecard, created = Scorecard.objects.get_or_create(account=account)
    if created:
        categories, choices = scorecard_default_parts(scorecard=scorecard)
        ScorecardCategory.objects.bulk_create(categories)
        ScorecardChoice.objects.bulk_create(choices)
    return scorecard


def scorecard_default_parts(
    *, scorecard: Scorecard
) -> tuple[list[ScorecardCategory], list[ScorecardChoice]]:
    """The default categories and lists of ``scorecard``, unsaved: what
    ``scorecard_create_default`` stores, and what a page shows before it is stored."""
    categories = [
        ScorecardCategory(
            scorecard=scorecard,
            slot=slot,
            name=name,
            guidance=guide,
            **_rule(DEFAULT_CATEGORY_RULES.get(name)),
        )
        for slot, (name, guide) in enumerate(DEFAULT_CATEGORIES, start=1)
    ]
    choices = [
        ScorecardChoice(
            scorecard=scorecard,
            kind=kind,
            name=name,
            position=index,
            needs_appointment=(
                kind == ChoiceKind.CALL_END and name in DEFAULT_APPOINTMENT_CALL_ENDS
            ),
            **_rule(DEFAULT_CHOICE_RULES.get((kind, name))),
        )
        for kind, names in DEFAULT_CHOICES.items()
        for index, name in enumerate(names)
    ]
    return categories, choices


def _rule(rule: tuple[str, str, int | None] | None) -> dict[str, Any]:
    if rule is None:
        return {}
    phrases, side, within_seconds = rule
    return {"phrases": phrases, "side": side, "within_seconds": within_seconds}


def scorecard_snapshot(scorecard: Scorecard) -> tuple[list[str | None], list[int]]:
    """The ten category names (None for an unused slot) and points, as a score keeps them."""
    return categories_snapshot(scorecard.categories.all())


def categories_snapshot(
    categories: Iterable[ScorecardCategory],
) -> tuple[list[str | None], list[int]]:
    """``scorecard_snapshot`` of a scorecard's categories (saved or not)."""
    by_slot = {category.slot: category for category in categories}
    names: list[str | None] = []
    points: list[int] = []
    for slot in range(1, CATEGORY_SLOTS + 1):
        category = by_slot.get(slot)
        names.append(category.name if category and category.name else None)
        points.append(category.points if category and category.name else 0)
    return names, points


def score_values(score: Score | None) -> dict[str, Any]:
    """A score's scored members as plain values (dates as ISO text), as revisions keep them."""
    if score is None:
        return dict.fromkeys(SCORED_MEMBERS)
    values: dict[str, Any] = {}
    for member in SCORED_MEMBERS:
        value = getattr(score, member)
        if isinstance(value, dt.time):
            value = value.strftime("%H:%M")
        elif isinstance(value, dt.date):
            value = value.isoformat()
        values[member] = value
    return values


@transaction.atomic
def score_save(*, call: Call, scorer: User, values: Mapping[str, Any]) -> Score:
    """Score an answered call (or change its score); every change is kept as a revision.

    ``values`` holds members of ``SCORED_MEMBERS``; an omitted member keeps its value (its
    default on a new score). Refused with a ``ValidationError`` keyed by member.
    """
    unknown = set(values) - set(SCORED_MEMBERS)
    if unknown:
        raise ValueError(f"not scored members: {sorted(unknown)}")
    call = Call.objects.select_for_update().select_related("account").get(pk=call.pk)
    if call.status != CallStatus.ANSWER:
        raise ValidationError(ONLY_ANSWERED)
    if not accounts_scorable_by(scorer).filter(pk=call.account_id).exists():
        raise ValidationError(NO_SCORING_RIGHT)
    scorecard = scorecard_create_default(account=call.account)
    score = Score.objects.filter(call=call).first()
    before = score_values(score)
    if score is None:
        names, points = scorecard_snapshot(scorecard)
        score = Score(
            call=call,
            scored_at=timezone.now(),
            category_names=names,
            category_points=points,
        )
    cleaned = _clean(values, scorecard=scorecard, names=score.category_names)
    for member, value in cleaned.items():
        setattr(score, member, value)
    _check_appointment(score, scorecard=scorecard)
    score.scorer = scorer
    score.scorer_name = scorer.get_full_name()[:SHORT] or scorer.username[:SHORT]
    after = score_values(score)
    score.accepted_suggestions = _accepted(call, after)
    score.save()
    changes = {
        m: [before[m], after[m]] for m in SCORED_MEMBERS if before[m] != after[m]
    }
    if changes or not ScoreRevision.objects.filter(score=score).exists():
        _revise(score, RevisionKind.SCORE, scorer, changes)
        score_event_emit(score=score)
        score_saved.send(sender=Score, score=score, changes=changes)
        rollup_mark(call=call)  # the dashboard reads its day afresh
    ScoringClaim.objects.filter(call=call).delete()
    return score


def _accepted(call: Call, values: Mapping[str, Any]) -> list[str]:
    """The suggested members the score holds as they were suggested (an alert tag: among
    the score's tags)."""
    members = (
        CallSuggestions.objects.filter(call=call)
        .values_list("members", flat=True)
        .first()
    ) or {}
    kept = []
    for member, suggestion in members.items():
        value, saved = suggestion.get("value"), values.get(member)
        if member in FLAG_MEMBERS:
            same = bool(saved) == bool(value)
        elif member == "alert":
            tags = [tag.strip() for tag in (saved or "").split(",")]
            same = all(tag.strip() in tags for tag in str(value).split(","))
        else:
            same = (
                saved is not None and str(saved).strip().lower() == str(value).lower()
            )
        if same:
            kept.append(member)
    return sorted(kept, key=lambda member: SCORED_MEMBERS.index(member))


def call_suggestions_make(*, call_id: int) -> CallSuggestions | None:
    """Work out what the call's transcript suggests to its scorer and store it (replacing
    what was suggested before); never touches a score. None for a call without turns or
    in a language the rules do not read (``understanding.LANGUAGES``)."""
    call = Call.objects.select_related("account", "agent").filter(pk=call_id).first()
    if (
        call is None
        or not call.transcript_turns
        # The rules read English only: no guesses from another language's words ("" is
        # a transcript saved without its language: English, as before languages).
        or call.transcript_language not in ("", *LANGUAGES)
    ):
        CallSuggestions.objects.filter(call_id=call_id).delete()
        return None
    scorecard = scorecard_create_default(account=call.account)
    rules = suggestions.rules_of(scorecard.categories.all(), scorecard.choices.all())
    context = Context.of(reading_context(call))
    members = suggestions.suggest(
        turns=call.transcript_turns,
        rules=rules,
        names=speaker_names(call),
        first_name=call.first_name,
        facts=understand(call.transcript_turns, context),
        call_ends={
            choice.name
            for choice in scorecard.choices.all()
            if choice.kind == ChoiceKind.CALL_END
        },
    )
    # Where a model learnt from the account's scores measures better than the rule.
    members = learnt_suggestions_apply(call=call, members=members)
    made, _ = CallSuggestions.objects.update_or_create(
        call=call, defaults={"members": members}
    )
    return made


def _clean(
    values: Mapping[str, Any], *, scorecard: Scorecard, names: list[str | None]
) -> dict[str, Any]:
    errors: dict[str, list[str]] = {}
    cleaned: dict[str, Any] = {}
    choices: dict[str, set[str]] = {kind: set() for kind in ChoiceKind.values}
    for choice in scorecard.choices.all():
        choices[choice.kind].add(choice.name)
    for member, value in values.items():
        if member in TEXT_MEMBERS:
            text = "" if value is None else str(value).strip()
            if len(text) > TEXT_MEMBERS[member]:
                errors.setdefault(member, []).append(
                    f"The {_label(member)} may not be greater than {TEXT_MEMBERS[member]} characters."
                )
            cleaned[member] = text
        elif member in FLAG_MEMBERS:
            cleaned[member] = bool(value)
        else:
            cleaned[member] = _moment(member, value, errors)
    _check_listed(cleaned, "call_end", choices[ChoiceKind.CALL_END], errors)
    _check_email(cleaned, errors)
    _check_years(cleaned, errors)
    _check_listed(cleaned, "department", choices[ChoiceKind.DEPARTMENT], errors)
    if cleaned.get("alert"):
        tags = [tag.strip() for tag in cleaned["alert"].split(",") if tag.strip()]
        unknown = [tag for tag in tags if tag not in choices[ChoiceKind.ALERT]]
        if unknown:
            errors.setdefault("alert", []).append(
                f"Not an alert tag of this account: {', '.join(unknown)}."
            )
        cleaned["alert"] = ", ".join(tags)
    if cleaned.get("lead_type") and cleaned["lead_type"] not in LeadType.values:
        errors.setdefault("lead_type", []).append("The lead type must be New or Used.")
    for slot, member in enumerate(CATEGORY_MEMBERS):
        if cleaned.get(member) and not names[slot]:
            errors.setdefault(member, []).append(
                f"Category {slot + 1} is not used on this scorecard."
            )
    if errors:
        raise ValidationError(errors)
    return cleaned


def _check_email(cleaned: dict[str, Any], errors: dict[str, list[str]]) -> None:
    email = cleaned.get("email")
    if not email:
        return
    try:
        validate_email(email)
    except ValidationError:
        errors.setdefault("email", []).append("The email must be an email address.")


def _check_years(cleaned: dict[str, Any], errors: dict[str, list[str]]) -> None:
    """A vehicle's year is four digits from the first cars to next year's models."""
    latest = timezone.now().year + 1
    for member in YEAR_MEMBERS:
        year = cleaned.get(member)
        if year and not (YEAR.fullmatch(year) and FIRST_YEAR <= int(year) <= latest):
            errors.setdefault(member, []).append(
                f"The {_label(member)} must be a year from {FIRST_YEAR} to {latest} (YYYY)."
            )


def _check_appointment(score: Score, *, scorecard: Scorecard) -> None:
    """A call end that means an appointment was set needs the appointment's date, and so
    does an appointment time (a date alone is fine: the time may not be known)."""
    if score.appointment_date is not None:
        return
    needs = bool(score.call_end) and (
        scorecard.choices.filter(
            kind=ChoiceKind.CALL_END, name=score.call_end, needs_appointment=True
        ).exists()
    )
    if needs:
        raise ValidationError(
            {
                "appointment_date": [
                    f"The call end “{score.call_end}” needs the appointment date."
                ]
            }
        )
    if score.appointment_time is not None:
        raise ValidationError({"appointment_date": [TIME_WITHOUT_DATE]})


def _check_listed(
    cleaned: dict[str, Any], member: str, listed: set[str], errors: dict[str, list[str]]
) -> None:
    value = cleaned.get(member)
    if value and value not in listed:
        errors.setdefault(member, []).append(
            f"Choose a {_label(member)} from the account's list."
        )


def _moment(member: str, value: Any, errors: dict[str, list[str]]) -> Any:
    """An appointment date or time from a date/time or ISO text; blank is none."""
    kind = dt.date if member == "appointment_date" else dt.time
    if value in (None, ""):
        return None
    if isinstance(value, kind) and not isinstance(value, dt.datetime):
        return value
    try:
        return kind.fromisoformat(str(value).strip())
    except ValueError:
        shape = "YYYY-MM-DD" if kind is dt.date else "HH:MM"
        errors.setdefault(member, []).append(
            f"The {_label(member)} must be a valid {'date' if kind is dt.date else 'time'} ({shape})."
        )
        return None


@transaction.atomic
def coaching_save(*, call: Call, coach: User, notes: str) -> Score:
    """Write a scored call's coaching notes as ``coach``, a manager of its account."""
    score = Score.objects.select_for_update().filter(call=call).first()
    if score is None:
        raise ValidationError(NOT_SCORED)
    if not accounts_coachable_by(coach).filter(pk=call.account_id).exists():
        raise ValidationError(NO_COACHING_RIGHT)
    notes = (notes or "").strip()
    if len(notes) > TEXT:
        raise ValidationError(
            {
                "coach_notes": [
                    f"The coach notes may not be greater than {TEXT} characters."
                ]
            }
        )
    coached_by = coach.get_full_name()[:SHORT] or coach.username[:SHORT]
    changes = {
        member: [old, new]
        for member, old, new in (
            ("coach_notes", score.coach_notes, notes),
            ("coached_by", score.coached_by, coached_by),
        )
        if old != new
    }
    if not changes:
        return score
    score.coach_notes = notes
    score.coach = coach
    score.coached_by = coached_by
    score.coached_at = timezone.now()
    score.coaching_read_at = None
    score.save(
        update_fields=[
            "coach_notes",
            "coach",
            "coached_by",
            "coached_at",
            "coaching_read_at",
            "updated_at",
        ]
    )
    _revise(score, RevisionKind.COACHING, coach, changes)
    coaching_event_emit(score=score)
    return score


def coaching_mark_read(*, call: Call, agent: User) -> bool:
    """The call's agent has read its coaching; True when this marked it."""
    return bool(
        Score.objects.filter(
            call=call,
            call__agent=agent,
            coached_at__isnull=False,
            coaching_read_at__isnull=True,
        ).update(coaching_read_at=timezone.now())
    )


def _revise(
    score: Score, kind: str, by: User, changes: dict[str, list[Any]]
) -> ScoreRevision:
    return ScoreRevision.objects.create(
        score=score,
        kind=kind,
        changed_by=by,
        changed_by_name=by.get_full_name() or by.username,
        changes=changes,
    )


def _claim_hold() -> timedelta:
    return timedelta(seconds=settings.SCORING_CLAIM_SECONDS)


@transaction.atomic
def scoring_claim_next(*, scorer: User) -> Call | None:
    """Hold the next call of the scoring queue for ``scorer`` and return it; None when the
    queue is empty. A call the scorer already holds comes back first; two scorers asking
    at once never get the same call (row locks, SKIP LOCKED)."""
    now = timezone.now()
    held = (
        ScoringClaim.objects.filter(
            scorer=scorer, expires_at__gt=now, call__score__isnull=True
        )
        .select_related("call")
        .order_by("claimed_at")
        .first()
    )
    if held is not None:
        held.expires_at = now + _claim_hold()
        held.save(update_fields=["expires_at"])
        return held.call
    passed: list[int] = []
    # A row locked by another scorer is skipped; a call whose claim another scorer committed
    # while this statement ran is seen by the fresh check below and passed over.
    for _ in range(20):
        call = (
            scoring_queue(scorer=scorer)
            .exclude(pk__in=passed)
            .select_for_update(skip_locked=True, of=("self",))
            .first()
        )
        if call is None:
            return None
        taken = ScoringClaim.objects.filter(
            call=call, expires_at__gt=timezone.now()
        ).exclude(scorer=scorer)
        if not taken.exists():
            ScoringClaim.objects.update_or_create(
                call=call,
                defaults={
                    "scorer": scorer,
                    "claimed_at": now,
                    "expires_at": now + _claim_hold(),
                },
            )
            return call
        passed.append(call.pk)
    return None


def scoring_claim_release(*, call: Call, scorer: User) -> None:
    """Give a held call back to the queue (the scorer skipped it)."""
    ScoringClaim.objects.filter(call=call, scorer=scorer).delete()
