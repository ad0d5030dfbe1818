"""Suggestions that learn from the scorers: each account's members learnt from its confirmed
scores (scoring/learning.py does the learning), measured against the phrase rules on the
newest scores, and put in force per member only where they measure better.

A member is a category (``cat3``), the call end (``call_end``) or one alert tag
(``alert:Hot lead``). An account with too few scores of its own for a member learns it
from the accounts of its own organization that score the same category name (or offer
the same call ends, or the same alert tag); never from another organization's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from calls.transcripts import speaker_names
from scoring import learning, suggestions
from scoring.models import (
    CATEGORY_SLOTS,
    ChoiceKind,
    LearntSuggester,
    Score,
    Scorecard,
    SuggestionSource,
)

log = logging.getLogger(__name__)

ALERT = "alert:"
# The newest scores learnt from, per account (and per organization when pooled): enough
# for what the scorers do now, and a night's training stays within minutes.
LEARN_WINDOW = 2000


@dataclass(frozen=True)
class Target:
    """One member an account's scorecard offers: what a score says of it, and its rule's."""

    member: str
    name: str
    kind: str  # "category", "call_end" or "alert"
    choices: frozenset[str] = frozenset()

    def label(self, score: Score) -> Any:
        """The scorer's value, or None where the score does not hold this member (a
        category of that name was not on its scorecard; a call end not offered now)."""
        if self.kind == "category":
            names = list(score.category_names or [])
            if self.name not in names:
                return None
            return bool(getattr(score, f"cat{names.index(self.name) + 1}"))
        if self.kind == "call_end":
            value = score.call_end.strip()
            return value if value in self.choices or not value else None
        return self.name in [tag.strip() for tag in score.alert.split(",")]

    def ruled(self, members: Mapping[str, Mapping[str, Any]]) -> Any:
        """What the phrase rules suggested of this member, as a label."""
        if self.kind == "category":
            return self.member in members
        if self.kind == "call_end":
            return str(members.get("call_end", {}).get("value", ""))
        return members.get("alert", {}).get("value") == self.name


def targets_of(scorecard: Scorecard) -> list[Target]:
    """The members an account learns: its named categories, its call end, its alert tags."""
    found = [
        Target(f"cat{category.slot}", category.name, "category")
        for category in scorecard.categories.all()
        if category.name and 1 <= category.slot <= CATEGORY_SLOTS
    ]
    choices = list(scorecard.choices.all())
    ends = frozenset(c.name for c in choices if c.kind == ChoiceKind.CALL_END)
    if ends:
        found.append(Target("call_end", "Call end", "call_end", ends))
    found += [
        Target(f"{ALERT}{c.name}", c.name, "alert")
        for c in choices
        if c.kind == ChoiceKind.ALERT
    ]
    return found


def scorecard_rules(scorecard: Scorecard) -> list[suggestions.Rule]:
    """The scorecard's phrase rules, as ``call_suggestions_make`` builds them (a test
    holds the two together)."""
    return suggestions.rules_of(scorecard.categories.all(), scorecard.choices.all())


@dataclass
class Example:
    """One scored call with a transcript: its score, its lines and their features."""

    score: Score
    lines: list[dict[str, Any]]
    features: list[list[str]]
    ruled: dict[str, Any] = field(default_factory=dict)


def _examples(accounts: QuerySet[Account]) -> list[Example]:
    """The newest scored calls with transcripts of ``accounts``, oldest first."""
    scores = (
        Score.objects.filter(call__account__in=accounts)
        .exclude(call__transcript_turns=[])
        .select_related("call", "call__agent")
        .defer("call__transcription", "call__summary", "call__redactions")
        .order_by("-scored_at", "-id")[:LEARN_WINDOW]
    )
    found = []
    for score in scores:
        call: Call = score.call
        lines = suggestions.transcript_lines(call.transcript_turns, speaker_names(call))
        if lines:
            features = learning.call_features(lines, first_name=call.first_name)
            found.append(Example(score, lines, features))
    found.reverse()
    return found


def _rule_members(example: Example, rules: Sequence[suggestions.Rule]) -> Any:
    """What ``rules`` suggest of the example's call (only the categories and lists are read:
    the appointment and vehicles are given nothing to find)."""
    if "members" not in example.ruled:
        call = example.score.call
        example.ruled["members"] = suggestions.suggest(
            turns=call.transcript_turns,
            rules=rules,
            names=speaker_names(call),
            first_name=call.first_name,
            received_on=call.received_at.date(),
            called_on={},
            current={},
        )
    return example.ruled["members"]


def _pool_for(target: Target, account: Account) -> QuerySet[Account]:
    """The accounts of ``account``'s organization that score ``target`` alike: any for a
    category (a score keeps the names it was scored under), those offering the same call
    ends, or the same alert tag."""
    pool = Account.objects.filter(organization_id=account.organization_id)
    if target.kind == "call_end":
        for name in target.choices:
            pool = pool.filter(
                scorecard__choices__kind=ChoiceKind.CALL_END,
                scorecard__choices__name=name,
            )
    elif target.kind == "alert":
        pool = pool.filter(
            scorecard__choices__kind=ChoiceKind.ALERT,
            scorecard__choices__name=target.name,
        )
    return pool.distinct()


def _learn(
    target: Target,
    examples: Sequence[Example],
    rules: Sequence[suggestions.Rule],
) -> tuple[learning.Verdict | None, int]:
    """The verdict on one member from the examples that hold it (None: too few), and how
    many accounts they came from."""
    held = [(e, target.label(e.score)) for e in examples]
    held = [(e, label) for e, label in held if label is not None]
    labels = [label for _, label in held]
    if not learning.enough(labels):
        return None, 0
    ruled = [target.ruled(_rule_members(e, rules)) for e, _ in held]
    verdict = learning.judge([e.features for e, _ in held], labels, ruled)
    return verdict, len({e.score.call.account_id for e, _ in held})


def suggesters_learn(
    *, account: Account, progress: Callable[[str], None] | None = None
) -> list[LearntSuggester]:
    """Learn every member of ``account``'s scorecard from its scorers (its organization's
    when its own are too few) and record which source is in force for each, with both
    measures; the rule stays wherever the model does not measure better."""
    scorecard = (
        Scorecard.objects.prefetch_related("categories", "choices")
        .filter(account=account)
        .first()
    )
    if scorecard is None:
        return []
    rules = scorecard_rules(scorecard)
    own = _examples(Account.objects.filter(pk=account.pk))
    pooled: dict[frozenset[int], list[Example]] = {}
    trained_at = timezone.now()
    rows = []
    for target in targets_of(scorecard):
        verdict, accounts = _learn(target, own, rules)
        if verdict is None:
            pool = frozenset(_pool_for(target, account).values_list("pk", flat=True))
            if len(pool) > 1:
                if pool not in pooled:
                    pooled[pool] = _examples(Account.objects.filter(pk__in=pool))
                verdict, accounts = _learn(target, pooled[pool], rules)
        row = _row(account, target, verdict, accounts, trained_at)
        rows.append(row)
        if progress is not None:
            progress(describe(row))
    with transaction.atomic():
        # One writer per account at a time: a second run waits, then replaces the rows.
        Scorecard.objects.select_for_update().filter(pk=scorecard.pk).first()
        LearntSuggester.objects.filter(account=account).delete()
        LearntSuggester.objects.bulk_create(rows)
    return rows


def _row(
    account: Account,
    target: Target,
    verdict: learning.Verdict | None,
    accounts: int,
    trained_at: Any,
) -> LearntSuggester:
    row = LearntSuggester(
        account=account, member=target.member, name=target.name, trained_at=trained_at
    )
    if verdict is None:
        row.reason = (
            f"Too few scored calls with transcripts to learn from (at least "
            f"{learning.MIN_EXAMPLES}, {learning.MIN_PER_CLASS} of each answer)."
        )
        return row
    row.examples, row.accounts = verdict.examples, accounts
    row.held_out = verdict.rule.calls
    row.rule_precision = verdict.rule.precision
    row.rule_recall = verdict.rule.recall
    row.rule_f1 = verdict.rule.f1
    if verdict.learnt is None:
        row.reason = "Too few of each answer among the older calls to learn from."
        return row
    row.learnt_precision = verdict.learnt.precision
    row.learnt_recall = verdict.learnt.recall
    row.learnt_f1 = verdict.learnt.f1
    if verdict.in_force:
        row.source = SuggestionSource.LEARNT
        row.weights = verdict.weights
    else:
        row.reason = "The phrase rule measures as well or better on the newest calls."
    return row


def describe(row: LearntSuggester) -> str:
    """One line on a member's verdict, for the command's progress."""
    head = f"{row.member} ({row.name})" if row.member != row.name else row.member
    if row.rule_f1 is None:
        return f"{head}: rule stays, too few examples"
    learnt = "-" if row.learnt_f1 is None else f"{row.learnt_f1:.2f}"
    pooled = f" from {row.accounts} accounts" if row.accounts > 1 else ""
    return (
        f"{head}: {row.source} in force "
        f"(F1 rule {row.rule_f1:.2f}, learnt {learnt}; "
        f"{row.examples} examples{pooled}, {row.held_out} held out)"
    )


def suggesters_learn_all(*, progress: Callable[[str], None] | None = None) -> int:
    """Learn every account with scored calls; returns the accounts learnt. An account that
    fails is logged and skipped: the others still learn, its suggesters stay as they were."""
    learnt = 0
    accounts = Account.objects.filter(calls__score__isnull=False).distinct()
    for account in accounts.order_by("pk").iterator():
        try:
            suggesters_learn(account=account, progress=progress)
        except Exception:
            log.exception("learning suggestions of account %s failed", account.pk)
            continue
        learnt += 1
    return learnt


def learnt_suggestions_apply(
    *, call: Call, members: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The rules' suggestions with each member whose learnt model is in force replaced by
    the model's: a category or tag it finds (``"source": "learnt"``, pointing at the line
    that weighed most), or none where it finds none."""
    suggesters = list(
        LearntSuggester.objects.filter(
            account_id=call.account_id, source=SuggestionSource.LEARNT
        ).only("member", "weights")
    )
    if not suggesters:
        return members
    lines = suggestions.transcript_lines(call.transcript_turns, speaker_names(call))
    if not lines:
        return members
    features = learning.call_features(lines, first_name=call.first_name)
    found = dict(members)
    tags: list[tuple[float, str, dict[str, Any]]] = []
    learnt_tags = set()
    for suggester in suggesters:
        prediction = learning.predict(suggester.weights or {}, features)
        member, value = suggester.member, prediction.value
        if member.startswith(ALERT):
            learnt_tags.add(member.removeprefix(ALERT))
            if value is True:
                tag = member.removeprefix(ALERT)
                tags.append(
                    (prediction.probability, tag, _said(lines, prediction, tag))
                )
            continue
        found.pop(member, None)
        if value is True:
            found[member] = _said(lines, prediction, 1)
        elif value and member == "call_end":
            found[member] = _said(lines, prediction, value)
    ruled_tag = found.get("alert", {}).get("value")
    if ruled_tag in learnt_tags:
        found.pop("alert")
    if "alert" not in found and tags:
        found["alert"] = max(tags, key=lambda tag: tag[0])[2]
    return found


def _said(
    lines: Sequence[Mapping[str, Any]], prediction: learning.Prediction, value: Any
) -> dict[str, Any]:
    line = lines[prediction.line or 0]
    return {
        "value": value,
        "line": line["index"],
        "text": f"{line['speaker']} ({line['clock']}): {line['text']}",
        "at": line["start"],
        "source": "learnt",
    }


def learnt_members(suggesters: Iterable[LearntSuggester]) -> list[LearntSuggester]:
    """Suggesters in the scorecard's order: categories by slot, the call end, the tags."""

    def order(row: LearntSuggester) -> tuple[int, int, str]:
        if row.member.startswith("cat"):
            return (0, int(row.member.removeprefix("cat")), "")
        return (1 if row.member == "call_end" else 2, 0, row.name)

    return sorted(suggesters, key=order)
