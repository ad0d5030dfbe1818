"""Parsing rules: which of an account's rules a lead matches, and why the others did not."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from leads.adf import ParsedLead
from leads.models import Operator, ParsingRule, RuleCondition


@dataclass(frozen=True)
class RuleVerdict:
    rule: ParsingRule
    matched: bool
    why: str


def condition_holds(condition: RuleCondition, lead: ParsedLead) -> bool:
    """Whether one condition holds for the lead; text is compared case-insensitively."""
    actual = lead.field(condition.field).strip()
    wanted = condition.value.strip()
    match condition.operator:
        case Operator.PRESENT:
            return actual != ""
        case Operator.ABSENT:
            return actual == ""
        case Operator.EQUALS:
            return actual.casefold() == wanted.casefold()
        case Operator.CONTAINS:
            return wanted.casefold() in actual.casefold()
        case Operator.STARTS_WITH:
            return actual.casefold().startswith(wanted.casefold())
        case Operator.REGEX:
            return _compiled(wanted).search(actual) is not None
    return False


def rule_verdict(rule: ParsingRule, lead: ParsedLead) -> RuleVerdict:
    """Whether every condition of the rule holds, with the first one that does not."""
    if not rule.is_active:
        return RuleVerdict(rule, False, "inactive")
    for condition in rule.conditions.all():
        if not condition_holds(condition, lead):
            actual = lead.field(condition.field) or "(empty)"
            return RuleVerdict(
                rule, False, f"{condition} does not hold: the lead has {actual!r}"
            )
    return RuleVerdict(
        rule,
        True,
        "every condition holds"
        if rule.conditions.all()
        else "no conditions: matches all",
    )


def rules_evaluate(
    rules: Iterable[ParsingRule], lead: ParsedLead
) -> tuple[ParsingRule | None, list[RuleVerdict]]:
    """The first matching rule in priority order, and a verdict for each rule up to it."""
    verdicts = []
    for rule in sorted(rules, key=lambda r: (r.priority, r.pk)):
        verdict = rule_verdict(rule, lead)
        verdicts.append(verdict)
        if verdict.matched:
            return rule, verdicts
    return None, verdicts


def _compiled(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error:
        # A broken pattern matches nothing; the admin refuses to save one.
        return re.compile(r"(?!)")
