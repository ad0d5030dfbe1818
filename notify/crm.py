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
from leads.adf.extras import (
    Amount,
    ColorCombination,
    Finance,
    PriceExtras,
    ProspectExtras,
    VehicleExtras,
    prospect_extras,
)
from leads.adf.values import Identifier, ParsedLead, Phone, Vehicle
from notify.models import CrmSendOn, MessageKind, NotifySettings, crm_addresses
from notify.services import message_queue
from scoring.models import Score

# When each moment is written back.
SENDS = {
    "final": {CrmSendOn.FINAL, CrmSendOn.BOTH},
    "scored": {CrmSendOn.SCORED, CrmSendOn.BOTH},
}
# ADF 1.0's enumerated attribute values (the DTD's): a value outside them is not written
# as the attribute but as a line of the comments' layout.
INTERESTS = ("buy", "lease", "sell", "trade-in", "test-drive")
ODOMETER_UNITS = ("km", "mi")
ODOMETER_STATUSES = ("unknown", "rolledover", "replaced", "original")
PRICE_TYPES = ("quote", "offer", "msrp", "invoice", "call", "appraisal", "asking")
PRICE_DELTAS = ("absolute", "relative", "percentage")
PRICE_RELATIVE_TO = ("msrp", "invoice")
AMOUNT_TYPES = ("downpayment", "monthly", "total")
AMOUNT_LIMITS = ("maximum", "minimum", "exact")
BALANCE_TYPES = ("finance", "residual")
PHONE_TYPES = ("voice", "fax", "cellphone", "pager")
PHONE_TIMES = ("morning", "afternoon", "evening", "nopreference", "day")
# A lead's vehicle members ADF 1.0 has, written as they came (colours as combinations).
VEHICLE_CARRIED = (
    "year",
    "make",
    "model",
    "vin",
    "stock",
    "trim",
    "doors",
    "bodystyle",
    "transmission",
    "comments",
)
# Those it has not (part 2.4 accepts them): lines of the comments' layout. Colours go
# there too (``_Writer.colors``).
VEHICLE_NOT_CARRIED = (
    ("license_plate", "license plate"),
    ("fueltype", "fuel type"),
    ("type", "type"),
)
# ADF 1.0 needs a vehicle in every prospect: one that names nothing stands for none.
EMPTY_VEHICLE = Vehicle()
# The headers of the comments' layout (docs/integrators-guide.md, "CRM write-back").
NOT_IN_ADF = "From the lead, not in ADF 1.0:"
CUSTOMER_COMMENTS = "The customer's comments:"


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


def _always(parent: etree._Element, tag: str, value: str, **attributes: str) -> None:
    """An element the DTD requires, empty when there is no value."""
    etree.SubElement(parent, tag, attributes).text = xml_safe(value) or None


class _Writer:
    """One write-back being built: the document, and the lead's members ADF 1.0 cannot
    carry, as (label, value) lines for the comments' layout."""

    def __init__(self) -> None:
        self.not_in_adf: list[tuple[str, str]] = []

    def enum(self, value: str, allowed: tuple[str, ...], label: str) -> str:
        """``value`` as the DTD's spelling when it is one of ``allowed`` (any case);
        otherwise "" and a comments line, so nothing the lead sent is lost."""
        if not value:
            return ""
        if value.lower() in allowed:
            return value.lower()
        self.not_in_adf.append((label, value))
        return ""

    def attributes(
        self, label: str, **values: tuple[str, tuple[str, ...] | None]
    ) -> dict[str, str]:
        """The attributes with a value; an enumerated one outside its values goes to the
        comments as "<label> <attribute>"."""
        found: dict[str, str] = {}
        for name, (value, allowed) in values.items():
            if not value:
                continue
            if allowed is None:
                found[name] = xml_safe(value)
            elif kept := self.enum(value, allowed, f"{label} {name}"):
                found[name] = kept
        return found

    def price(
        self, parent: etree._Element, price: PriceExtras | None, label: str
    ) -> None:
        if price is None:
            return
        attributes = self.attributes(
            label,
            type=(price.type, PRICE_TYPES),
            currency=(price.currency, None),
            delta=(price.delta, PRICE_DELTAS),
            relativeto=(price.relativeto, PRICE_RELATIVE_TO),
            source=(price.source, None),
        )
        _always(parent, "price", price.value, **attributes)

    def vehicle(
        self,
        prospect: etree._Element,
        vehicle: Vehicle,
        extras: VehicleExtras,
        number: int,
    ) -> None:
        """A lead's vehicle in the DTD's order, its members as they came."""
        label = f"Vehicle {number}"
        interest = self.enum(vehicle.interest, INTERESTS, f"{label} interest")
        element = etree.SubElement(
            prospect,
            "vehicle",
            {**({"interest": interest} if interest else {}), "status": vehicle.status},
        )
        for part in ("year", "make", "model"):
            _always(element, part, getattr(vehicle, part))
        for part in ("vin", "stock", "trim", "doors", "bodystyle", "transmission"):
            _text(element, part, getattr(vehicle, part))
        odometer = vehicle.odometer
        if odometer.value or odometer.units or odometer.status:
            _always(
                element,
                "odometer",
                odometer.value,
                **self.attributes(
                    f"{label} odometer",
                    status=(odometer.status, ODOMETER_STATUSES),
                    units=(odometer.units, ODOMETER_UNITS),
                ),
            )
        _text(element, "imagetag", extras.imagetag)
        price = extras.price or (
            PriceExtras(vehicle.price.value, vehicle.price.type, vehicle.price.currency)
            if vehicle.price.value or vehicle.price.type or vehicle.price.currency
            else None
        )
        self.price(element, price, f"{label} price")
        _text(element, "pricecomments", extras.pricecomments)
        for index, option in enumerate(extras.options, start=1):
            option_element = etree.SubElement(element, "option")
            _always(option_element, "optionname", option.name)
            _text(option_element, "manufacturercode", option.manufacturer_code)
            _text(option_element, "stock", option.stock)
            _text(option_element, "weighting", option.weighting)
            self.price(option_element, option.price, f"{label} option {index} price")
        if extras.finance is not None:
            self.finance(element, extras.finance, f"{label} finance")
        _text(element, "comments", vehicle.comments)
        for part, name in VEHICLE_NOT_CARRIED:
            if getattr(vehicle, part):
                self.not_in_adf.append((f"{label} {name}", getattr(vehicle, part)))
        self.colors(vehicle, extras, label)

    def colors(self, vehicle: Vehicle, extras: VehicleExtras, label: str) -> None:
        """Colour combinations go to the comments: libxml2 validates no colorcombination
        against the ADF 1.0 DTD, whose content model for it is not deterministic."""
        colors = extras.colors or (
            (ColorCombination(vehicle.interior_color, vehicle.exterior_color),)
            if vehicle.interior_color or vehicle.exterior_color
            else ()
        )
        for rank, colour in enumerate(colors, start=1):
            suffix = f" {rank}" if rank > 1 else ""
            for name, value in (
                ("interior colour", colour.interior),
                ("exterior colour", colour.exterior),
                ("colour preference", colour.preference),
            ):
                if value:
                    self.not_in_adf.append((f"{label} {name}{suffix}", value))

    def finance(self, parent: etree._Element, finance: Finance, label: str) -> None:
        element = etree.SubElement(parent, "finance")
        _always(element, "method", finance.method)
        for index, amount in enumerate(finance.amounts or (Amount(),), start=1):
            _always(
                element,
                "amount",
                amount.value,
                **self.attributes(
                    f"{label} amount {index}",
                    type=(amount.type, AMOUNT_TYPES),
                    limit=(amount.limit, AMOUNT_LIMITS),
                    currency=(amount.currency, None),
                ),
            )
        if finance.balance is not None:
            balance = finance.balance
            _always(
                element,
                "balance",
                balance.value,
                **self.attributes(
                    f"{label} balance",
                    type=(balance.type, BALANCE_TYPES),
                    currency=(balance.currency, None),
                ),
            )

    def phone(self, contact: etree._Element, phone: Phone, label: str) -> None:
        _always(
            contact,
            "phone",
            phone.number,
            **self.attributes(
                label, type=(phone.type, PHONE_TYPES), time=(phone.time, PHONE_TIMES)
            ),
        )


def _call_vehicles(prospect: etree._Element, call: Call) -> int:
    """A call without a stored lead (click-to-call, a reply's call back): its own
    vehicles; returns how many it wrote."""
    written = 0
    for interest, prefix in (("buy", "called_on"), ("trade-in", "current")):
        parts = {p: getattr(call, f"{prefix}_{p}") for p in ("year", "make", "model")}
        if any(parts.values()):
            element = etree.SubElement(
                prospect, "vehicle", {"interest": interest, "status": "used"}
            )
            for part, value in parts.items():
                _always(element, part, value)
            written += 1
    return written


def _empty_vehicle(prospect: etree._Element) -> None:
    """ADF 1.0 requires a vehicle: empty year, make and model say the lead named none."""
    element = etree.SubElement(prospect, "vehicle")
    for part in ("year", "make", "model"):
        _always(element, part, "")


def _lead_extras(call: Call) -> ProspectExtras:
    lead = getattr(call, "lead", None)
    if lead is None or not lead.raw_xml:
        return ProspectExtras()
    return prospect_extras(lead.raw_xml, index=lead.prospect_index)


def writeback_comments(
    outcome: list[tuple[str, str]],
    not_in_adf: list[tuple[str, str]],
    customer_comments: str,
) -> str:
    """customer/comments of a write-back: the outcome's "Label: value" lines; then, after
    a blank line and a header, the lead's members ADF 1.0 cannot carry, one a line; then,
    after a blank line and a header, the customer's own comments as they came.
    ``comments_read`` reads it back."""

    def lines(pairs: list[tuple[str, str]]) -> list[str]:
        return [f"{label}: {one_line(xml_safe(value))}" for label, value in pairs]

    blocks = ["\n".join(lines(outcome))]
    if not_in_adf:
        blocks.append("\n".join([NOT_IN_ADF, *lines(not_in_adf)]))
    if customer_comments:
        blocks.append(f"{CUSTOMER_COMMENTS}\n{customer_comments}")
    return "\n\n".join(blocks)


def comments_read(
    text: str,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], str]:
    """The outcome's lines, the lead's members ADF 1.0 cannot carry, and the customer's
    comments, from a write-back's customer/comments (``writeback_comments``' layout)."""
    head, _, customer = text.partition(f"\n\n{CUSTOMER_COMMENTS}\n")
    outcome_block, _, rest = head.partition("\n\n")
    members_block = rest.removeprefix(f"{NOT_IN_ADF}\n") if rest else ""

    def pairs(block: str) -> list[tuple[str, str]]:
        return [
            (label, value)
            for label, _, value in (line.partition(": ") for line in block.splitlines())
        ]

    return pairs(outcome_block), pairs(members_block), customer


def writeback_adf(
    call: Call, score: Score | None = None, *, crm_address: str | None = None
) -> str:
    """The ADF 1.0 document of the call's outcome, valid against the ADF 1.0 DTD: the
    lead's own members as they came where ADF 1.0 has them, the rest and the outcome in
    customer/comments (``writeback_comments``). ``crm_address`` is the vendor contact's
    e-mail when the lead names none (the account's first CRM address by default)."""
    lead = _lead_of(call)
    extras = _lead_extras(call) if lead else ProspectExtras()
    writer = _Writer()
    root = etree.Element("adf")
    prospect = etree.SubElement(root, "prospect", {"status": "resend"})
    ids = lead.prospect_ids if lead else ()
    if not ids:
        ids = (Identifier(call.altid or f"call-{call.pk}"),)
    for sequence, identifier in enumerate(ids, start=1):
        attributes = {"sequence": str(sequence)}
        if identifier.source:
            attributes["source"] = xml_safe(identifier.source)
        _always(prospect, "id", identifier.value, **attributes)
    _always(
        prospect,
        "requestdate",
        (lead.request_date if lead else "")
        or call.received_at.replace(microsecond=0).isoformat(),
    )
    if lead and lead.request_type:
        writer.not_in_adf.append(("Request type", lead.request_type))
    if lead and lead.vehicles:
        for number, vehicle in enumerate(lead.vehicles, start=1):
            more = extras.vehicles[number - 1 : number]
            writer.vehicle(
                prospect, vehicle, more[0] if more else VehicleExtras(), number
            )
    elif not (lead is None and _call_vehicles(prospect, call)):
        _empty_vehicle(prospect)
    customer = etree.SubElement(prospect, "customer")
    _customer_contact(etree.SubElement(customer, "contact"), writer, call, lead)
    vendor = etree.SubElement(prospect, "vendor")
    vendor_id = (lead.vendor.id if lead else "") or str(call.account_id)
    _always(
        vendor,
        "id",
        vendor_id,
        sequence="1",
        source=xml_safe((lead.vendor.id_source if lead else "") or "dealerId"),
    )
    _always(
        vendor,
        "vendorname",
        lead.vendor.name if lead and lead.vendor.name else call.account.name,
    )
    _vendor_contact(vendor, writer, call, lead, extras, crm_address)
    customer_comments = lead.customer.comments if lead else ""
    _always(
        customer,
        "comments",
        writeback_comments(
            outcome_lines(call, score), writer.not_in_adf, customer_comments
        ),
    )
    provider = etree.SubElement(prospect, "provider")
    etree.SubElement(provider, "name", {"part": "full"}).text = "Leadcall"
    _text(provider, "service", "Call outcome")
    _text(provider, "url", call_page_url(call))
    root.addprevious(etree.PI("adf", 'version="1.0"'))
    return etree.tostring(
        root.getroottree(), xml_declaration=True, encoding="UTF-8", pretty_print=True
    ).decode()


def _customer_contact(
    contact: etree._Element, writer: _Writer, call: Call, lead: ParsedLead | None
) -> None:
    """The customer as the call knows them, the lead's other numbers and address as they
    came; the lead's members ADF 1.0 has no place for go to ``writer.not_in_adf``."""
    name = f"{call.first_name} {call.last_name}".strip()
    _always(
        contact, "name", name or (lead.customer.full_name if lead else ""), part="full"
    )
    _text(contact, "email", call.email or (lead.customer.email if lead else ""))
    # The number called first (E.164), then the lead's other numbers as they came.
    called = lead.customer.phone if lead else ""
    phones = lead.customer.phones if lead else ()
    first = next((p for p in phones if called and p.number == called), None)
    writer.phone(
        contact,
        Phone(
            call.phone, first.type if first else "voice", first.time if first else ""
        ),
        "Customer phone 1",
    )
    others = [p for p in phones if p is not first and p.number]
    for number, phone in enumerate(others, start=2):
        writer.phone(contact, phone, f"Customer phone {number}")
    address = lead.customer.address if lead else None
    if address and any(vars(address).values()):
        element = etree.SubElement(contact, "address")
        _always(element, "street", address.street)
        for part in ("city", "regioncode", "postalcode", "country"):
            _text(element, part, getattr(address, part))
    if lead:
        if lead.customer.language:
            writer.not_in_adf.append(("Customer language", lead.customer.language))
        for label, value in (
            ("Lead provider", lead.provider.name),
            ("Lead provider id", lead.provider.id),
            ("Lead provider service", lead.provider.service),
            ("Lead provider URL", lead.provider.url),
            ("Lead CRM", lead.lms_name),
            ("Whisper", lead.customer.whisper),
        ):
            if value:
                writer.not_in_adf.append((label, value))


def _vendor_contact(
    vendor: etree._Element,
    writer: _Writer,
    call: Call,
    lead: ParsedLead | None,
    extras: ProspectExtras,
    crm_address: str | None,
) -> None:
    """The lead's vendor contact as it came; what it lacks, the dealer account's own:
    its name, its first CRM address and its caller ID. ADF 1.0 needs an e-mail or a
    phone: without any, an empty phone."""
    contact = etree.SubElement(vendor, "contact")
    _always(
        contact,
        "name",
        (lead.vendor.contact_name if lead else "") or call.account.name,
        part="full",
    )
    if extras.vendor_contact_email or extras.vendor_contact_phones:
        _text(contact, "email", extras.vendor_contact_email)
        for number, phone in enumerate(extras.vendor_contact_phones, start=1):
            writer.phone(contact, phone, f"Vendor contact phone {number}")
        return
    if crm_address is None:
        config = _NOTIFY_SETTINGS.first(account_id=call.account_id)
        addresses = crm_addresses(config.crm_addresses) if config else []
        crm_address = addresses[0] if addresses else ""
    _text(contact, "email", crm_address)
    if call.account.caller_id or not crm_address:
        _always(contact, "phone", call.account.caller_id)


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
    adf = writeback_adf(call, score, crm_address=addresses[0])
    text = writeback_text(call, score)
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
