"""Demo scoring (CONTRACT.md, "Demo data"): every account's scorecard, most past answered
calls scored by the organization's demo scorer with varied values, some of those coached by
the account's manager, and a few with a transcription and a summary.

Scores and coaching go through the scoring services, so they carry revisions and keep the
scorecard they were scored under, exactly as a scorer's would. The newest answered calls
of each account stay unscored, so the scoring queue has work in the demo.

Deterministic (one ``random.Random`` per account) and safe to run again: a call already
scored is left as it is, and only calls without a transcription get one. Only the demo's
own calls (``is_demo``, made by the calls step) are scored, coached or transcribed here.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from calls.models import Call, CallStatus
from calls.telephony.conversation import Facts, conversation_script
from calls.transcripts import render, speaker_names
from insights.models import Transcription, TranscriptionStatus
from insights.summaries import builtin_written
from scoring.models import ChoiceKind, RevisionKind, Score, ScoreRevision
from scoring.rollup_build import rollup_rebuild
from scoring.services import (
    CATEGORY_MEMBERS,
    coaching_save,
    score_save,
    scorecard_create_default,
)
from users.models import User

if TYPE_CHECKING:
    from demo.management.commands.seed_demo import DemoAccount, DemoData

# Every answered call is scored but the newest few (the queue's work); some are coached.
UNSCORED_NEWEST = 3
COACHED_SHARE = 0.35
# Transcribed: the newest answered calls but one, so some scored calls have one and some
# calls in the queue too.
TRANSCRIBED = slice(-5, -1)
# How likely an agent is to do each category's thing; the appointment is the hard part.
CATEGORY_ODDS = (0.9, 0.85, 0.8, 0.55, 0.75, 0.8, 0.45, 0.6, 0.4, 0.7)
WOW_ODDS = 0.1

SCORER_NOTES = (
    "Friendly and quick; the customer sounded pleased.",
    "Agent rushed the opening and talked over the customer.",
    "Good product knowledge, but no attempt to set an appointment.",
    "Customer asked twice about the price before getting an answer.",
    "Clear next steps agreed before hanging up.",
    "",
)
COACH_NOTES = (
    "Great call. Next time ask for the appointment before the price discussion.",
    "Slow down in the first ten seconds: name, dealership, then the customer's name.",
    "Nice recovery when the car was sold. Offer two alternatives, not one.",
    "Always confirm the callback number before you hang up.",
    "Ask about a trade-in early; it changes the whole conversation.",
)


def seed_demo(demo: DemoData) -> None:
    """Give every demo account its scorecard, scores, coaching and a few transcriptions."""
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            scorecard_create_default(account=demo_account.account)
            scorer = demo_org.scorers[0] if demo_org.scorers else None
            if scorer is None or not demo_account.managers:
                continue
            scored, coached = _score_account(demo_account, scorer)
            transcribed = _transcribe_account(demo_account)
            if scored or coached or transcribed:
                demo.log(
                    f"{demo_account.account.name}: {scored} calls scored, "
                    f"{coached} coached, {transcribed} transcribed"
                )


def seed_rollup(demo: DemoData) -> None:
    """Build every demo account's dashboard rollup from its calls now: the demo's calls are
    written in bulk, backdated, behind the services that keep the rollup in step."""
    for demo_org in demo.organizations:
        for demo_account in demo_org.accounts:
            rollup_rebuild(account=demo_account.account)


def _rng(demo_account: DemoAccount, purpose: str) -> random.Random:
    account = demo_account.account
    return random.Random(f"{purpose}:{account.organization.name}:{account.name}")


def _answered(demo_account: DemoAccount) -> list[Call]:
    return list(
        # The demo's own calls only: a call someone made trying the demo keeps its score,
        # transcription and summary, whatever they are.
        Call.objects.filter(
            account=demo_account.account, status=CallStatus.ANSWER, is_demo=True
        )
        .select_related("agent")
        .order_by("received_at", "id")
    )


def _score_account(demo_account: DemoAccount, scorer: User) -> tuple[int, int]:
    """Score most answered calls not scored yet and coach some; returns both counts."""
    rng = _rng(demo_account, "scoring.seed")
    manager = demo_account.managers[0]
    choices = _choices(demo_account)
    already = set(
        Score.objects.filter(
            call__account=demo_account.account, call__is_demo=True
        ).values_list("call_id", flat=True)
    )
    scored = coached = 0
    for call in _answered(demo_account)[:-UNSCORED_NEWEST]:
        # Drawn for every call, scored or not, so a rerun makes the same choices.
        coach_it = rng.random() < COACHED_SHARE
        values = _values(rng, call, choices)
        notes = rng.choice(COACH_NOTES)
        if call.pk in already:
            continue
        score_save(call=call, scorer=scorer, values=values)
        scored += 1
        if coach_it:
            coaching_save(call=call, coach=manager, notes=notes)
            coached += 1
        _backdate(call, coached=coach_it)
    return scored, coached


def _choices(demo_account: DemoAccount) -> dict[str, list[str]]:
    scorecard = scorecard_create_default(account=demo_account.account)
    lists: dict[str, list[str]] = {kind: [] for kind in ChoiceKind.values}
    for choice in scorecard.choices.order_by("position"):
        lists[choice.kind].append(choice.name)
    return lists


def _values(
    rng: random.Random, call: Call, choices: dict[str, list[str]]
) -> dict[str, Any]:
    """A scorer's plausible reading of the call: the lead's details confirmed, categories
    applied by their odds, an appointment when the agent set one."""
    values: dict[str, Any] = {
        member: rng.random() < odds
        for member, odds in zip(CATEGORY_MEMBERS, CATEGORY_ODDS, strict=True)
    }
    values["wow"] = rng.random() < WOW_ODDS
    appointment = values["cat8"] and values["cat9"]
    call_ends = choices[ChoiceKind.CALL_END] or [""]
    call_end = call_ends[0] if appointment else rng.choice(call_ends[1:] or call_ends)
    departments = choices[ChoiceKind.DEPARTMENT]
    department = call.department if call.department in departments else ""
    alerts = choices[ChoiceKind.ALERT]
    local = call.received_at.date()
    values.update(
        first_name=call.first_name,
        last_name=call.last_name,
        email=call.email,
        alt_phone=f"+1303555{rng.randint(200, 299):04d}" if rng.random() < 0.2 else "",
        department=department or (departments[0] if departments else ""),
        notes=rng.choice(SCORER_NOTES),
        call_end=call_end,
        alert=rng.choice(alerts) if alerts and rng.random() < 0.15 else "",
        appointment_date=(local + timedelta(days=rng.randint(1, 4))).isoformat()
        if appointment
        else None,
        appointment_time=f"{rng.randint(9, 17):02d}:{rng.choice((0, 30)):02d}"
        if appointment
        else None,
        lead_type=call.lead_type if call.lead_type in ("New", "Used") else "",
        called_on_make=call.called_on_make,
        called_on_model=call.called_on_model,
        called_on_year=call.called_on_year,
        current_make=call.current_make,
        current_model=call.current_model,
        current_year=call.current_year,
        current_summary="Clean, one owner." if call.current_make else "",
    )
    return values


def _backdate(call: Call, *, coached: bool) -> None:
    """Scored (and coached the next day) a few hours after the call, as a scorer's day would
    have it; the revisions follow, so the history reads in order."""
    now = timezone.now()
    scored_at = min(now, (call.ended_at or call.received_at) + timedelta(hours=2))
    coached_at = min(now, scored_at + timedelta(hours=20)) if coached else None
    Score.objects.filter(call=call).update(
        scored_at=scored_at, coached_at=coached_at, updated_at=coached_at or scored_at
    )
    revisions = ScoreRevision.objects.filter(score__call=call)
    revisions.filter(kind=RevisionKind.SCORE).update(changed_at=scored_at)
    revisions.filter(kind=RevisionKind.COACHING).update(changed_at=coached_at)


def _transcribe_account(demo_account: DemoAccount) -> int:
    """A transcription and summary on the newest answered calls, as the service would write
    them: the conversation the simulator speaks on such a call (``conversation_script``)
    spread over its duration, in part 2.3's line format, summarised by the built-in rules."""
    transcribed = 0
    for call in _answered(demo_account)[TRANSCRIBED]:
        if call.transcription or call.agent is None:
            continue
        turns = _turns(call)
        written = builtin_written(call=call, turns=turns)
        Call.objects.filter(pk=call.pk, is_demo=True).update(
            transcription=render(turns, speaker_names(call)),
            transcript_turns=turns,
            transcript_language="en",
            summary=written.text,
        )
        # The summary's evidence (each sentence's lines, shown on hover), as a run keeps it.
        Transcription.objects.update_or_create(
            call=call,
            defaults={
                "status": TranscriptionStatus.DONE,
                "engine": "demo",
                "summary_evidence": written.evidence,
                "finished_at": timezone.now(),
            },
        )
        transcribed += 1
    return transcribed


def _turns(call: Call) -> list[dict[str, Any]]:
    """The call's script as timed turns (``insights.engines.turns_from``'s shape), each as
    long as its share of the words, over the call's duration."""
    agent = call.agent
    assert agent is not None
    script = conversation_script(
        Facts.of(call, agent_name=agent.first_name), seed=call.pk
    )
    words = [len(turn.text.split()) for turn in script.turns]
    per_word = (call.duration or 60) / (sum(words) + len(words))
    turns, at = [], 0.0
    for turn, count in zip(script.turns, words, strict=True):
        end = at + count * per_word
        turns.append(
            {
                "side": turn.speaker,
                "start": round(at, 2),
                "end": round(end, 2),
                "text": turn.text,
            }
        )
        at = end + per_word  # a pause between turns
    return turns
