"""The rule tester's dry run: what lead intake would do with a document, step by step and
with the reasons, storing nothing and queueing no call.

Every decision comes from the functions ``lead_process`` uses (``document_prospects``,
``vendor_registration``, ``account_rules`` with ``rules_evaluate``, ``lead_phone``,
``dedupe_key``), so the tester cannot disagree with intake; the queries here only explain
a decision already taken.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import reduce
from operator import or_
from typing import Any

from django_countries import countries

from accounts.models import Account, ApiCredential, Organization
from accounts.selectors import credential_account_ids
from leads.adf import FIELDS, AdfError, ParsedLead
from leads.compose import compose_call_notes, compose_whisper
from leads.models import Lead, Outcome, ParsingRule, RuleAction, VendorRegistration
from leads.rules import rules_evaluate
from leads.services import (
    DO_NOT_PROCESS,
    NO_PROSPECT_ID,
    NO_RULE,
    NO_VENDOR,
    RECEIVED,
    RECEIVED_NO_PHONE,
    account_rules,
    adf_refusal,
    call_lead_type,
    dedupe_key,
    document_prospects,
    lead_phone,
    stored_answer,
    vendor_matches,
    vendor_registration,
)


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@dataclass(frozen=True)
class RuleRow:
    rule: ParsingRule
    state: str  # matched, no match, inactive, not reached
    why: str

    @property
    def conditions(self) -> list[str]:
        """The rule's conditions in words, e.g. "Request type (prospect/requesttype) equals 'service'"."""
        return [
            f"{FIELDS.get(c.field, c.field)} ({c.field}) {c.get_operator_display()}"
            + (f" {c.value!r}" if c.value else "")
            for c in self.rule.conditions.all()
        ]


@dataclass
class ProspectTrial:
    """One prospect of the document, as lead intake would see it."""

    number: int
    parsed: ParsedLead
    key_fields: list[tuple[str, str]]
    parsed_json: str
    account: Account | None = None
    account_why: str = ""
    rules: list[RuleRow] = field(default_factory=list)
    rule: ParsingRule | None = None
    duplicate_of: Lead | None = None
    whisper: str = ""
    call_notes: str = ""
    phone: str = ""
    phone_why: str = ""
    outcome: str = ""
    answer_status: int = 0
    answer_body: str = ""
    call: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Trial:
    error: str = ""
    answer_status: int = 0
    answer_body: str = ""
    prospects: list[ProspectTrial] = field(default_factory=list)


def lead_trial(
    *,
    raw_xml: str,
    organization: Organization | None,
    credential: ApiCredential | None,
) -> Trial:
    """What ``lead_receive`` would do with the document for this organization or credential,
    step by step and with the reasons, without storing anything or queueing a call."""
    try:
        prospects = document_prospects(raw_xml)
    except AdfError as error:
        _, status, reason = adf_refusal(error)
        return Trial(
            error=str(error),
            answer_status=status,
            answer_body=pretty_json({"reason": reason}),
        )
    if organization is None:
        assert credential is not None
        organization = credential.organization
    return Trial(
        prospects=[
            _prospect_trial(number, parsed, organization, credential)
            for number, parsed in enumerate(prospects, start=1)
        ]
    )


def _prospect_trial(
    number: int,
    parsed: ParsedLead,
    organization: Organization,
    credential: ApiCredential | None,
) -> ProspectTrial:
    trial = ProspectTrial(
        number=number,
        parsed=parsed,
        key_fields=_key_fields(parsed),
        parsed_json=pretty_json(parsed.as_dict()),
        whisper=compose_whisper(parsed),
        call_notes=compose_call_notes(parsed),
    )
    trial.account, trial.account_why = _routed_account(parsed, organization, credential)
    if trial.account is not None:
        _evaluate_rules(trial, trial.account)
        if trial.rule is not None and parsed.prospect_id:
            trial.duplicate_of = Lead.objects.filter(
                dedupe_key=dedupe_key(trial.account, parsed)
            ).first()
        trial.phone = lead_phone(parsed, trial.account)
        if not parsed.customer.phone:
            trial.phone_why = "The lead has no phone number that can be called."
        elif not trial.phone:
            country = countries.name(str(trial.account.country))
            trial.phone_why = (
                f"{parsed.customer.phone!r} is not a valid number in {country}."
            )
    else:
        trial.phone_why = "Read in the account's country once an account is found."
    _outcome(trial)
    return trial


def _key_fields(parsed: ParsedLead) -> list[tuple[str, str]]:
    customer, buy, trade = parsed.customer, parsed.buy_vehicle, parsed.trade_in_vehicle

    def vehicle(v: Any) -> str:
        return (
            " ".join(p for p in (v.status.title(), v.year, v.make, v.model) if p)
            if v
            else ""
        )

    rows = [
        ("Prospect ID", parsed.prospect_id),
        ("Prospect ID source", parsed.prospect_source),
        ("Request type", parsed.request_type),
        ("Vendor ID", parsed.vendor.id),
        ("Vendor name", parsed.vendor.name),
        ("Provider name", parsed.provider.name),
        ("Customer", customer.full_name),
        ("Email", customer.email),
        (
            "Phone (as sent)",
            f"{customer.phone} ({customer.phone_type})"
            if customer.phone_type
            else customer.phone,
        ),
        ("Vehicle", vehicle(buy)),
        ("Trade-in", vehicle(trade)),
    ]
    return [(label, value or "—") for label, value in rows]


def _routed_account(
    parsed: ParsedLead, organization: Organization, credential: ApiCredential | None
) -> tuple[Account | None, str]:
    """The account intake routes the lead to (``vendor_registration``, as ``vendor_account``
    calls it), and why, or why none."""
    registration = vendor_registration(
        organization_id=organization.pk, credential=credential, parsed=parsed
    )
    vendor = parsed.vendor
    named = f"Vendor ID {vendor.id!r}" if vendor.id else f"Vendor name {vendor.name!r}"
    if registration is not None:
        if vendor.id and registration.vendor_id != vendor.id:
            named = (
                f"Vendor name {vendor.name!r} (its ID {vendor.id!r} is not registered)"
            )
        account = registration.account
        test = (
            " It is a test account: no real phone call is placed."
            if account.is_test
            else ""
        )
        return account, f"{named} is registered for {account.name}.{test}"
    return None, _unrouted_why(parsed, named, organization, credential)


def _unrouted_why(
    parsed: ParsedLead,
    named: str,
    organization: Organization,
    credential: ApiCredential | None,
) -> str:
    """Why intake found no account for the lead (the decision is ``vendor_registration``'s)."""
    matches = vendor_matches(parsed)
    if not matches:
        return "The lead has neither a vendor ID nor a vendor name."
    registrations = list(
        VendorRegistration.objects.filter(
            reduce(or_, matches), organization=organization
        )
        .select_related("account")
        .order_by("id")
    )
    if not registrations:
        why = f"{named} is not registered in {organization.name}."
        if parsed.vendor.id and parsed.vendor.name:
            why += (
                f" Nor is its name {parsed.vendor.name!r} registered without an ID"
                " (a name registered with another ID is another vendor's)."
            )
        return why
    usable = [r for r in registrations if r.is_active and r.account.is_active]
    if not usable:
        registration = registrations[0]
        if not registration.is_active:
            return f"{named} is registered for {registration.account.name}, but the registration is inactive."
        return f"{named} is registered for {registration.account.name}, but that account is inactive."
    if credential is not None:
        reached = credential_account_ids(credential=credential)
        unreached = [r for r in usable if r.account_id not in reached]
        if unreached:
            return f"{named} is registered for {unreached[0].account.name}, which credential {credential.api_user} does not reach."
    return NO_VENDOR


def _evaluate_rules(trial: ProspectTrial, account: Account) -> None:
    """Every rule of the account in priority order; inactive ones say so and never match."""
    # Inactive rules are shown (and never match): the rule chosen is intake's.
    rules = account_rules(account=account, include_inactive=True)
    trial.rule, verdicts = rules_evaluate(rules, trial.parsed)
    rows = []
    for verdict in verdicts:
        state = (
            "matched"
            if verdict.matched
            else "inactive"
            if verdict.why == "inactive"
            else "no match"
        )
        rows.append(RuleRow(verdict.rule, state, verdict.why))
    reached = {row.rule.pk for row in rows}
    rows += [
        RuleRow(rule, "not reached", "an earlier rule matched")
        for rule in rules
        if rule.pk not in reached
    ]
    trial.rules = rows


def _outcome(trial: ProspectTrial) -> None:
    """The outcome and answer, in the order ``lead_process`` decides them."""
    parsed, rule, account = trial.parsed, trial.rule, trial.account
    body: dict[str, Any]
    if not parsed.prospect_id:
        outcome, status, body = Outcome.NO_PROSPECT_ID, 422, {"reason": NO_PROSPECT_ID}
    elif account is None:
        outcome, status, body = Outcome.NO_VENDOR, 422, {"reason": NO_VENDOR}
    elif rule is None:
        outcome, status, body = Outcome.NO_RULE, 422, {"reason": NO_RULE}
    elif (first := trial.duplicate_of) is not None:
        outcome, status = Outcome.DUPLICATE, first.response_status or 200
        body = {**stored_answer(first).body, "duplicate": True}
    elif rule.action == RuleAction.DO_NOT_PROCESS:
        outcome, status, body = Outcome.DO_NOT_PROCESS, 200, {"reason": DO_NOT_PROCESS}
    elif not trial.phone:
        outcome, status = Outcome.NO_PHONE, 200
        body = {
            "result": "Success",
            "leadId": "(new lead id)",
            "message": RECEIVED_NO_PHONE,
        }
    else:
        outcome, status = Outcome.ACCEPTED, 200
        body = {"result": "Success", "leadId": "(new lead id)", "message": RECEIVED}
        source = rule.source_label or parsed.provider.name or parsed.vendor.name
        trial.call = [
            ("Phone", trial.phone),
            ("Team", rule.team.name if rule.team else "every agent of the account"),
            ("Department", rule.department or "(none)"),
            ("Lead type", call_lead_type(rule, parsed) or "(none)"),
            ("Source", source),
            ("Prospect ID (altid)", parsed.prospect_id),
            ("Test call", "yes: no real phone call" if account.is_test else "no"),
        ]
    trial.outcome = Outcome(outcome).label
    trial.answer_status, trial.answer_body = status, pretty_json(body)
