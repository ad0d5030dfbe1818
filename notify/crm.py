"""The call's outcome written back to the dealer's CRM as an ADF 1.0 document by e-mail
(the way DealerSocket, VinSolutions, eLeads and the rest take leads in): the original
prospect id and source, the customer, the vehicles, and in ``customer/comments`` what
happened. Written with lxml in the vocabulary ``leads.adf`` parses (part 2.4)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from django.conf import settings
from django.urls import reverse
from lxml import etree

from calls.models import Call, CallStatus
from core.compiled import CompiledQuery
from core.text import one_line, xml_safe
from leads.adf.values import ParsedLead, Vehicle
from notify.models import CrmSendOn, MessageKind, NotifySettings, crm_addresses
from notify.services import message_queue
from scoring.models import Score

# When each moment is written back.
SENDS = {
    "final": {CrmSendOn.FINAL, CrmSendOn.BOTH},
    "scored": {CrmSendOn.SCORED, CrmSendOn.BOTH},
}
VEHICLE_PARTS = (
    "year",
    "make",
    "model",
    "vin",
    "stock",
    "trim",
    "bodystyle",
    "transmission",
    "fueltype",
)


def _lead_of(call: Call) -> ParsedLead | None:
    lead = getattr(call, "lead", None)
    if lead is None or not lead.parsed:
        return None
    return ParsedLead.from_dict(lead.parsed)


def _local(moment: datetime | None, zone: ZoneInfo) -> str:
    return moment.astimezone(zone).strftime("%Y-%m-%d %H:%M %Z") if moment else ""


def call_page_url(call: Call) -> str:
    return settings.PUBLIC_BASE_URL + reverse("pages:call-detail", args=[call.pk])


def outcome_lines(call: Call, score: Score | None) -> list[tuple[str, str]]:
    """What happened, as (label, value) pairs: the same lines in the ADF comments and the
    plain-text part. Coaching never leaves the service; the scorer's notes do."""
    zone = ZoneInfo(call.account.timezone)
    agent = call.agent.get_full_name() if call.agent else call.agent_shown
    lines = [
        ("Status", call.status),
        ("Attempts", str(call.attempts)),
        ("Agent", agent),
        (
            "Response time",
            f"{call.response_time} s" if call.response_time is not None else "",
        ),
        ("Duration", f"{call.duration} s" if call.duration is not None else ""),
        # A call's recording is stored moments after its end: a write-back at the end
        # may come first, and then says where it will be.
        (
            "Recording",
            call.recording_url
            or ("being stored; it plays on the call page" if call.duration else ""),
        ),
        ("Received", _local(call.received_at, zone)),
        ("Ended", _local(call.ended_at, zone)),
        ("Summary", call.summary),
    ]
    if score is not None:
        lines += [
            ("Call end", score.call_end),
            (
                "Appointment",
                " ".join(
                    part
                    for part in (
                        score.appointment_date.isoformat()
                        if score.appointment_date
                        else "",
                        score.appointment_time.strftime("%H:%M")
                        if score.appointment_time
                        else "",
                    )
                    if part
                ),
            ),
            ("Scorer's notes", score.notes),
        ]
    lines.append(("Call page", call_page_url(call)))
    return [(label, value) for label, value in lines if value]


def _text(parent: etree._Element, tag: str, value: str, **attributes: str) -> None:
    if value:
        etree.SubElement(parent, tag, attributes).text = xml_safe(value)


def _vehicle(prospect: etree._Element, vehicle: Vehicle) -> None:
    element = etree.SubElement(
        prospect,
        "vehicle",
        {"interest": vehicle.interest or "buy", "status": vehicle.status or "used"},
    )
    for part in VEHICLE_PARTS:
        _text(element, part, getattr(vehicle, part, ""))


def _call_vehicles(prospect: etree._Element, call: Call) -> None:
    """A call without a stored lead (click-to-call, a reply's call back): its own vehicles."""
    for interest, prefix in (("buy", "called_on"), ("trade-in", "current")):
        parts = {p: getattr(call, f"{prefix}_{p}") for p in ("year", "make", "model")}
        if any(parts.values()):
            element = etree.SubElement(
                prospect, "vehicle", {"interest": interest, "status": "used"}
            )
            for part, value in parts.items():
                _text(element, part, value)


def writeback_adf(call: Call, score: Score | None = None) -> str:
    """The ADF 1.0 document of the call's outcome."""
    lead = _lead_of(call)
    root = etree.Element("adf")
    prospect = etree.SubElement(root, "prospect", {"status": "resend"})
    prospect_id = lead.prospect_id if lead else call.altid
    source = lead.prospect_source if lead else ""
    etree.SubElement(
        prospect,
        "id",
        {"sequence": "1", **({"source": xml_safe(source)} if source else {})},
    ).text = xml_safe(prospect_id or f"call-{call.pk}")
    _text(prospect, "requestdate", call.received_at.replace(microsecond=0).isoformat())
    _text(prospect, "requesttype", lead.request_type if lead else "")
    if lead:
        for vehicle in lead.vehicles:
            _vehicle(prospect, vehicle)
    else:
        _call_vehicles(prospect, call)
    customer = etree.SubElement(prospect, "customer")
    contact = etree.SubElement(customer, "contact")
    name = f"{call.first_name} {call.last_name}".strip()
    etree.SubElement(contact, "name", {"part": "full"}).text = xml_safe(
        name or (lead.customer.full_name if lead else "")
    )
    _text(contact, "email", call.email or (lead.customer.email if lead else ""))
    etree.SubElement(contact, "phone", {"type": "voice"}).text = xml_safe(call.phone)
    comments = "\n".join(
        f"{label}: {value}" for label, value in outcome_lines(call, score)
    )
    etree.SubElement(customer, "comments").text = xml_safe(comments)
    vendor = etree.SubElement(prospect, "vendor")
    vendor_id = (lead.vendor.id if lead else "") or str(call.account_id)
    etree.SubElement(
        vendor, "id", {"sequence": "1", "source": "dealerId"}
    ).text = xml_safe(vendor_id)
    etree.SubElement(vendor, "vendorname").text = xml_safe(
        lead.vendor.name if lead and lead.vendor.name else call.account.name
    )
    provider = etree.SubElement(prospect, "provider")
    etree.SubElement(provider, "name", {"part": "full"}).text = "Leadcall"
    _text(provider, "service", "Call outcome")
    _text(provider, "url", call_page_url(call))
    return etree.tostring(
        root, xml_declaration=True, encoding="UTF-8", pretty_print=True
    ).decode()


def writeback_text(call: Call, score: Score | None) -> str:
    """The plain-text part: who, which vehicles, and what happened."""
    lead = _lead_of(call)
    lines = [
        f"Call outcome for {call.first_name} {call.last_name}".rstrip(),
        f"Phone: {call.phone}",
    ]
    if call.email:
        lines.append(f"E-mail: {call.email}")
    if lead and lead.prospect_id:
        source = f" ({lead.prospect_source})" if lead.prospect_source else ""
        lines.append(f"Prospect id: {lead.prospect_id}{source}")
    vehicles = (
        [
            " ".join(p for p in (v.interest, v.year, v.make, v.model) if p)
            for v in lead.vehicles
        ]
        if lead
        else []
    )
    lines += [f"Vehicle: {vehicle}" for vehicle in vehicles]
    lines.append("")
    lines += [f"{label}: {value}" for label, value in outcome_lines(call, score)]
    lines += ["", "The ADF document is attached as lead.xml."]
    return "\n".join(lines) + "\n"


# Compiled once (core/compiled.py): read as every call ends.
_NOTIFY_SETTINGS = CompiledQuery(
    lambda account_id: NotifySettings.objects.filter(account_id=account_id),
    "account_id",
)


def writes_back(*, account_id: int, moment: str) -> bool:
    """Whether the account writes back to a CRM at ``moment`` ("final" or "scored")."""
    config = _NOTIFY_SETTINGS.first(account_id=account_id)
    return bool(
        config and config.crm_addresses.strip() and config.crm_send_on in SENDS[moment]
    )


def crm_writeback_queue(*, call: Call, moment: str, score: Score | None = None) -> int:
    """Write the call's outcome back to each of its account's CRM addresses, once per
    moment ("final" or "scored") and address, when the account sends at that moment.
    A call that never was (Do Not Process, refused) has no call and sends nothing.
    Returns the messages stored."""
    config = _NOTIFY_SETTINGS.first(account_id=call.account_id)
    if config is None or config.crm_send_on not in SENDS[moment]:
        return 0
    addresses = crm_addresses(config.crm_addresses)
    if not addresses or call.status == CallStatus.QUEUED:
        return 0
    if score is None and moment == "final":
        score = Score.objects.filter(call=call).first()
    adf, text = writeback_adf(call, score), writeback_text(call, score)
    name = f"{call.first_name} {call.last_name}".strip() or call.phone
    subject = one_line(f"Lead call outcome: {name} - {call.status}")
    stored = 0
    for address in addresses:
        stored += (
            message_queue(
                key=f"crm:{moment}:{call.pk}:{address.lower()}",
                kind=MessageKind.CRM,
                to=[address],
                subject=subject,
                text=text,
                adf=adf,
                account=call.account,
                call=call,
            )
            is not None
        )
    return stored
