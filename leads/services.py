"""Lead intake: store first, then parse, route, apply rules and hand over a queued call.

Every step leaves its outcome on the stored lead, so support can see what happened to
every lead and re-run any of them once the configuration is fixed.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Prefetch, Q
from django.utils import timezone

from accounts.models import Account, ApiCredential
from accounts.selectors import credential_narrowed, credential_reaches
from calls.models import Call, CallOrigin
from calls.services import call_queue
from consent.models import Source
from consent.services import consent_give
from core.compiled import CompiledInsert, CompiledUpdate
from core.logging import log_event
from core.phones import to_e164
from core.versioned import VersionedCache
from leads.adf import AdfError, ParsedLead, document_text, parse_adf
from leads.compose import compose_call_notes, compose_whisper
from leads.fresh import lead_setup_priority
from leads.models import (
    Lead,
    Outcome,
    ParsingRule,
    RuleAction,
    RuleCondition,
    VendorRegistration,
)
from leads.payloads import lead_outcome_emit
from leads.rules import rules_evaluate

MALFORMED = (
    "Unable to parse XML. Please check that the XML is well-formed and try again."
)
NOT_ADF = "The document is not an ADF lead: no adf/prospect element."
NO_VENDOR = "No active account found!"
NO_RULE = "No parsing rule was found on the account for this lead."
DO_NOT_PROCESS = "Lead was successfully parsed as a Do Not Process lead."
NO_PROSPECT_ID = "The lead has no prospect id."
RECEIVED = "Lead received successfully."
RECEIVED_NO_PHONE = (
    "Lead received successfully. It has no usable phone number, so no call was set up."
)
TOO_LARGE = "The XML document is larger than 1 MiB."
# What processing sets on a stored lead.
PROCESSED_FIELDS = [
    "parsed",
    "vendor_id",
    "vendor_name",
    "prospect_id",
    "prospect_source",
    "account",
    "is_test",
    "matched_rule",
    "whisper",
    "call_notes",
    "dedupe_key",
    "duplicate_of",
    "call",
    "outcome",
    "reason",
    "response_status",
    "response_body",
    "processed_at",
    "processing_ms",
]
# A document is one lead or a few; thousands of prospects in one request is an attack.
MAX_PROSPECTS = 50

log = logging.getLogger(__name__)
# How intake routes a lead: vendor registrations (with their accounts) and each account's
# rules (with their teams and conditions), read by every lead. Whatever saves or deletes
# one of those rows makes every entry stale (leads.apps).
routing = VersionedCache("lead-routing")
# The lead's INSERT and its outcome's conditional UPDATE, compiled once per process
# (core/compiled.py): building them through the ORM was about a tenth of a lead's CPU
# (12.7 M -> 11.3 M instructions a lead, callgrind).
_LEAD_INSERT = CompiledInsert(Lead)
_OUTCOME_UPDATE = CompiledUpdate(
    lambda lead_id: Lead.objects.filter(pk=lead_id, dedupe_key__isnull=True),
    PROCESSED_FIELDS,
    "lead_id",
)
# Outcomes logged under their own event; the others as lead.refused with the reason.
OUTCOME_EVENTS = {
    Outcome.ACCEPTED: "lead.accepted",
    Outcome.NO_PHONE: "lead.no_phone",
    Outcome.DUPLICATE: "lead.duplicate",
    Outcome.DO_NOT_PROCESS: "lead.do_not_process",
}


@dataclass(frozen=True)
class Answer:
    """What the lead intake endpoint answers for a lead."""

    status: int
    body: dict[str, Any]


def lead_receive(*, credential: ApiCredential, raw_xml: str | bytes) -> Answer:
    """Store the lead first, whatever happens next; a stored lead is never lost.

    ``raw_xml`` is the document as a form field carried it (text), or as a request body
    or file carried it (bytes, in the encoding its XML declaration names). A document
    with several prospects becomes one lead each; the answer is the first lead's, with
    the id every prospect was answered with in ``leadIds``.
    """
    text = raw_xml if isinstance(raw_xml, str) else document_text(raw_xml)
    lead = _LEAD_INSERT.create(
        organization_id=credential.organization_id,
        credential=credential,
        # PostgreSQL text cannot hold NUL; the stored copy shows where one was.
        raw_xml=text.replace("\x00", "\ufffd"),
    )
    try:
        # The bytes themselves, when the document came as bytes: the answer is the
        # parser's reading of what was sent, not of the stored copy.
        prospects = document_prospects(raw_xml)
    except AdfError as error:
        outcome, status, reason = adf_refusal(error)
        return _finish(lead, outcome, status, {"reason": reason}, detail=str(error))
    leads = _document_leads(lead, len(prospects))
    answers = [
        lead_process(lead=each, parsed=parsed)
        for each, parsed in zip(leads, prospects, strict=True)
    ]
    first = answers[0]
    if len(leads) == 1:
        return first
    return Answer(
        first.status,
        {
            **first.body,
            "leadIds": [
                _answered_id(a, each) for a, each in zip(answers, leads, strict=True)
            ],
        },
    )


def lead_process(*, lead: Lead, parsed: ParsedLead | None = None) -> Answer:
    """Route one stored lead through the current configuration and record the outcome.

    Safe to run again on the same lead (the re-run action, the sweep): a lead that was
    processed once answers as it did then and never queues a second call.
    """
    started = time.perf_counter()
    if lead.dedupe_key:
        return stored_answer(lead)
    if parsed is None:
        try:
            parsed = document_prospects(lead.raw_xml)[lead.prospect_index]
        except AdfError as error:
            outcome, status, reason = adf_refusal(error)
            return _finish(lead, outcome, status, {"reason": reason}, detail=str(error))
        except IndexError as error:
            return _finish(
                lead, Outcome.MALFORMED, 400, {"reason": MALFORMED}, detail=str(error)
            )
    lead.parsed = parsed.as_dict()
    lead.vendor_id, lead.vendor_name = parsed.vendor.id[:100], parsed.vendor.name[:200]
    lead.prospect_id, lead.prospect_source = (
        parsed.prospect_id[:255],
        parsed.prospect_source[:255],
    )
    if not parsed.prospect_id:
        return _finish(
            lead,
            Outcome.NO_PROSPECT_ID,
            422,
            {"reason": NO_PROSPECT_ID},
            started=started,
        )
    account = (
        vendor_account(credential=lead.credential, parsed=parsed)
        if lead.credential
        else None
    )
    lead.account = account
    if account is None:
        return _finish(
            lead, Outcome.NO_VENDOR, 422, {"reason": NO_VENDOR}, started=started
        )
    lead.is_test = account.is_test
    rule, _ = rules_evaluate(account_rules(account=account), parsed)
    lead.matched_rule = rule
    if rule is None:
        return _finish(lead, Outcome.NO_RULE, 422, {"reason": NO_RULE}, started=started)
    lead.whisper = compose_whisper(parsed)
    lead.call_notes = compose_call_notes(parsed)
    lead.dedupe_key = dedupe_key(account, parsed)
    if rule.action == RuleAction.DO_NOT_PROCESS:
        return _finish_once(
            lead,
            Outcome.DO_NOT_PROCESS,
            200,
            {"reason": DO_NOT_PROCESS},
            started=started,
        )
    phone = lead_phone(parsed, account)
    if not phone:
        body = {"result": "Success", "leadId": lead.pk, "message": RECEIVED_NO_PHONE}
        return _finish_once(lead, Outcome.NO_PHONE, 200, body, started=started)
    body = {"result": "Success", "leadId": lead.pk, "message": RECEIVED}
    return _finish_once(
        lead,
        Outcome.ACCEPTED,
        200,
        body,
        started=started,
        call=lambda: _queue_call(lead, parsed, rule, account, phone),
    )


def adf_refusal(error: AdfError) -> tuple[Outcome, int, str]:
    """The outcome, status and reason of a document the parser refused: too large (413),
    well-formed but not an ADF lead (422), else malformed or hostile (400)."""
    if error.too_large:
        return Outcome.MALFORMED, 413, TOO_LARGE
    if error.not_adf:
        return Outcome.NOT_ADF, 422, NOT_ADF
    return Outcome.MALFORMED, 400, MALFORMED


def vendor_account(*, credential: ApiCredential, parsed: ParsedLead) -> Account | None:
    """The active account registered for the lead's vendor id or name (``vendor_matches``)
    within the credential's organization and accounts."""
    registration = vendor_registration(
        organization_id=credential.organization_id, credential=credential, parsed=parsed
    )
    return registration.account if registration else None


def vendor_matches(parsed: ParsedLead) -> list[Q]:
    """How a lead finds its vendor registration, in order: by its vendor id, then by its
    vendor name (support registers "the vendor name or vendor ID"). A lead with an id is
    matched on its name only by a registration made by name alone: one registered with
    another id is another vendor of the same name. Empty when the lead has neither."""
    vendor = parsed.vendor
    matches = [Q(vendor_id=vendor.id)] if vendor.id else []
    if vendor.name:
        by_name = Q(vendor_name__iexact=vendor.name)
        matches.append(by_name & Q(vendor_id="") if vendor.id else by_name)
    return matches


def vendor_registration(
    *,
    organization_id: int,
    credential: ApiCredential | None,
    parsed: ParsedLead,
) -> VendorRegistration | None:
    """The active registration (of an active account) intake routes the lead by, within
    the organization and, when a credential is given, the accounts it reaches."""
    matches = vendor_matches(parsed)
    if not matches:
        return None

    def read() -> VendorRegistration | None:
        registrations = VendorRegistration.objects.select_related("account").filter(
            organization_id=organization_id,
            is_active=True,
            account__is_active=True,
        )
        if credential is not None:
            registrations = registrations.filter(credential_reaches(credential))
        for match in matches:
            found = registrations.filter(match).first()
            if found is not None:
                return found
        return None

    reach = "support" if credential is None else credential_narrowed(credential)
    vendor = (parsed.vendor.id, parsed.vendor.name.casefold())
    key = hashlib.sha256(repr((organization_id, reach, vendor)).encode()).hexdigest()
    found, _ = routing.get(f"registration:{key}", read)
    return found  # type: ignore[no-any-return]


def account_rules(
    *, account: Account, include_inactive: bool = False
) -> list[ParsingRule]:
    """The account's active rules (every rule, with ``include_inactive``: inactive ones
    never match) with their conditions, in priority order."""

    def read() -> list[ParsingRule]:
        rules = ParsingRule.objects.filter(account=account)
        if not include_inactive:
            rules = rules.filter(is_active=True)
        return list(
            rules.select_related("team")
            .prefetch_related(
                Prefetch("conditions", queryset=RuleCondition.objects.order_by("id"))
            )
            .order_by("priority", "id")
        )

    found, _ = routing.get(f"rules:{account.pk}:{include_inactive:d}", read)
    return found  # type: ignore[no-any-return]


def lead_phone(parsed: ParsedLead, account: Account) -> str:
    """The lead's first usable phone number in E.164, read in the account's country
    (fax and pager numbers skipped); "" when none is usable."""
    for phone in parsed.customer.phones:
        if not phone.takes_calls:
            continue
        number = to_e164(phone.number, account.country_code)
        if number:
            return number
    return ""


def leads_rerun(*, leads: list[Lead]) -> dict[str, int]:
    """Re-run stored leads through the current configuration; returns outcome counts."""
    counts: dict[str, int] = {}
    for lead in leads:
        lead_process(lead=lead)
        counts[lead.outcome] = counts.get(lead.outcome, 0) + 1
    return counts


def leads_sweep(*, older_than: timedelta = timedelta(seconds=30)) -> int:
    """Process leads stored but never processed (their request died mid-way), the other
    prospects of their documents included; returns how many leads it processed."""
    stuck = Lead.objects.filter(
        outcome=Outcome.RECEIVED, received_at__lt=timezone.now() - older_than
    )
    count = 0
    for lead in stuck.order_by("id").iterator(chunk_size=100):
        lead.refresh_from_db()
        if lead.outcome != Outcome.RECEIVED:
            continue  # processed as a sibling of an earlier one
        if lead.prospect_index == 0:
            try:
                prospects = document_prospects(lead.raw_xml)
            except AdfError:
                prospects = []
            if len(prospects) > 1:
                for each, parsed in zip(
                    _document_leads(lead, len(prospects)), prospects, strict=True
                ):
                    if each.outcome == Outcome.RECEIVED:
                        lead_process(lead=each, parsed=parsed)
                        count += 1
                continue
        lead_process(lead=lead)
        count += 1
    return count


def dedupe_key(account: Account, parsed: ParsedLead) -> str:
    """Same account, vendor, prospect id and source: the same lead. Hashed, so any length
    and any characters make a key of one size that no other combination shares."""
    parts = [
        account.pk,
        parsed.vendor.id or parsed.vendor.name.casefold(),
        parsed.prospect_id,
        parsed.prospect_source,
    ]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def document_prospects(raw_xml: str | bytes) -> list[ParsedLead]:
    """The document's prospects, parsed; AdfError for a document intake refuses."""
    prospects = parse_adf(raw_xml)
    if len(prospects) > MAX_PROSPECTS:
        raise AdfError(f"The document holds more than {MAX_PROSPECTS} prospects.")
    return prospects


def _document_leads(first: Lead, count: int) -> list[Lead]:
    """The document's leads, one per prospect: the stored first one and its siblings,
    created where missing (a request may have died after storing only the first)."""
    if count == 1:
        return [first]
    existing = {
        lead.prospect_index: lead for lead in Lead.objects.filter(document=first)
    }
    siblings = [
        existing.get(index)
        or _LEAD_INSERT.create(
            organization_id=first.organization_id,
            credential=first.credential,
            raw_xml=first.raw_xml,
            prospect_index=index,
            document=first,
        )
        for index in range(1, count)
    ]
    return [first, *siblings]


def call_lead_type(rule: ParsingRule, parsed: ParsedLead) -> str:
    """The call's lead type: the rule's, else the vehicle's status ("New", "Used")."""
    buy = parsed.buy_vehicle
    return rule.lead_type or (buy.status.title() if buy else "")


def _queue_call(
    lead: Lead, parsed: ParsedLead, rule: ParsingRule, account: Account, phone: str
) -> Call:
    buy, trade = parsed.buy_vehicle, parsed.trade_in_vehicle
    customer = parsed.customer
    first, last = customer.first_name, customer.last_name
    if not (first or last) and customer.full_name:
        first, _, last = customer.full_name.partition(" ")
    source = (rule.source_label or parsed.provider.name or parsed.vendor.name)[:45]
    # The person's submission: consent to the account's calls (texts need their START).
    consent_give(
        account=account,
        source=Source.LEAD,
        at=lead.received_at,
        phone=phone,
        email=customer.email,
        texts=False,
        detail=f"Lead from {source}" if source else "Lead",
        reference=f"lead {lead.pk}",
    )
    return call_queue(
        account=account,
        phone=phone,
        received_at=lead.received_at,
        origin=CallOrigin.LEAD,
        priority=lead_setup_priority(
            request_date=parsed.request_date,
            zone=account.timezone,
            received_at=lead.received_at,
        ),
        team=rule.team,
        altid=parsed.prospect_id[:255],
        source=source,
        first_name=first[:45],
        last_name=last[:45],
        email=customer.email[:255],
        call_notes=lead.call_notes,
        whisper=lead.whisper,
        lead_type=call_lead_type(rule, parsed),
        department=rule.department,
        called_on_make=(buy.make if buy else "")[:45],
        called_on_model=(buy.model if buy else "")[:45],
        called_on_year=(buy.year if buy else "")[:45],
        called_on_registration=buy.license_plate if buy else "",
        called_on_summary=buy.comments if buy else "",
        current_make=(trade.make if trade else "")[:45],
        current_model=(trade.model if trade else "")[:45],
        current_year=(trade.year if trade else "")[:45],
        current_registration=trade.license_plate if trade else "",
        current_summary=trade.comments if trade else "",
    )


def _finish(
    lead: Lead,
    outcome: str,
    status: int,
    body: dict[str, Any],
    *,
    detail: str = "",
    started: float | None = None,
) -> Answer:
    """Record an outcome that does not count as processed (the lead may be re-run)."""
    _record(lead, outcome, status, body, detail=detail, started=started)
    return Answer(status, body)


def _record(
    lead: Lead,
    outcome: str,
    status: int,
    body: dict[str, Any],
    *,
    detail: str = "",
    started: float | None = None,
    unless_processed: bool = False,
) -> bool:
    """Write the outcome and its webhook event, or neither (no savepoint: nothing here is
    retried). With ``unless_processed`` only a lead not processed meanwhile is written:
    returns whether it was."""
    lead.outcome = outcome
    lead.reason = detail or body.get("reason", body.get("message", ""))
    lead.response_status, lead.response_body = status, body
    lead.processed_at = timezone.now()
    lead.processing_ms = (time.perf_counter() - started) * 1000 if started else None
    with transaction.atomic(savepoint=False):
        if unless_processed:
            # One conditional UPDATE: no lock taken, no row read back.
            fields = {name: getattr(lead, name) for name in PROCESSED_FIELDS}
            if not _OUTCOME_UPDATE.update(fields, lead_id=lead.pk):
                return False
        else:
            lead.save(update_fields=PROCESSED_FIELDS)  # never rewrites the raw document
        lead_outcome_emit(lead)
    _log_outcome(lead, status)
    return True


def _log_outcome(lead: Lead, status: int) -> None:
    """One line per lead: its outcome with ids only (never the document or a key)."""
    event = OUTCOME_EVENTS.get(Outcome(lead.outcome), "lead.refused")
    fields: dict[str, Any] = {
        "lead_id": lead.pk,
        "organization_id": lead.organization_id,
        "account_id": lead.account_id,
        "credential_id": lead.credential_id,
        "vendor_id": lead.vendor_id,
        "prospect_id": lead.prospect_id,
        "status": status,
    }
    if event == "lead.refused":
        fields["reason"] = "too_large" if status == 413 else lead.outcome
        if lead.outcome in (Outcome.MALFORMED, Outcome.NOT_ADF):
            fields["detail"] = lead.reason  # parse_adf's messages quote nothing
    elif lead.outcome == Outcome.DUPLICATE:
        fields["duplicate_of"] = lead.duplicate_of_id
    elif lead.outcome == Outcome.DO_NOT_PROCESS:
        fields["rule_id"] = lead.matched_rule_id
    else:
        fields["call_id"] = lead.call_id
        fields["rule_id"] = lead.matched_rule_id
    level = logging.WARNING if event == "lead.refused" else logging.INFO
    log_event(log, event, level=level, **fields)


class _ProcessedMeanwhile(Exception):
    """Rolls back a call queued for a lead that another run processed meanwhile."""


def _finish_once(
    lead: Lead,
    outcome: str,
    status: int,
    body: dict[str, Any],
    *,
    started: float,
    call: Any = None,
) -> Answer:
    """Record a processed outcome under the lead's dedupe key, and queue its call, in one
    transaction. A key taken by an earlier lead (also one arriving this very moment)
    makes this a duplicate: it answers the first lead's answer, with no second call. A
    lead processed meanwhile (a stale copy from the sweep or a re-run) answers as it did
    then, and the call queued here is rolled back."""
    try:
        with transaction.atomic():
            if call is not None:
                lead.call = call()
            if not _record(
                lead, outcome, status, body, started=started, unless_processed=True
            ):
                raise _ProcessedMeanwhile
    except _ProcessedMeanwhile:
        return stored_answer(
            Lead.objects.only("response_status", "response_body").get(pk=lead.pk)
        )
    except IntegrityError:
        lead.call = None
        key, lead.dedupe_key = lead.dedupe_key, None
        first = Lead.objects.get(dedupe_key=key)
        lead.duplicate_of = first
        answer = {**stored_answer(first).body, "duplicate": True}
        return _finish(
            lead,
            Outcome.DUPLICATE,
            first.response_status or 200,
            answer,
            started=started,
        )
    return Answer(status, body)


# The members of intake's answers in the order they are written: a stored answer comes
# back from PostgreSQL's jsonb with its keys reordered (shortest first), and a repeated
# answer must read as the first did, byte for byte.
ANSWER_MEMBERS = ("result", "leadId", "message", "reason", "duplicate", "leadIds")


def stored_answer(lead: Lead) -> Answer:
    """The answer stored on a processed lead, its members in the order first written."""
    body = lead.response_body or {}
    ordered = {name: body[name] for name in ANSWER_MEMBERS if name in body}
    return Answer(lead.response_status or 200, {**ordered, **body})


def _answered_id(answer: Answer, lead: Lead) -> int:
    return int(answer.body.get("leadId", lead.pk))
