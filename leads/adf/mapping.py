"""Mapping an ADF tree to a lead: one ``ParsedLead`` per prospect element.

Real-world quirks are tolerated: CDATA, element and attribute names in any case, and
namespace prefixes. Elements are matched on their lower-cased local name.
"""

import sys
from typing import Any

from lxml import etree

from leads.adf.guards import parse_root
from leads.adf.values import (
    Address,
    AdfError,
    Customer,
    Identifier,
    Odometer,
    ParsedLead,
    Phone,
    Price,
    Provider,
    Vehicle,
    Vendor,
)

_NOT_ADF = "The document is not an ADF lead."
_NO_PROSPECT = "The document holds no prospect."


def parse_adf(data: bytes | str) -> list[ParsedLead]:
    """Parse an ADF document into one lead per prospect; anything unreadable or hostile raises AdfError."""
    root = parse_root(data)
    root_name = _name(root.tag)
    if root_name == "prospect":
        return [_prospect(root)]
    if root_name != "adf":
        raise AdfError(_NOT_ADF, not_adf=True)
    leads = [_prospect(child) for name, child in _children(root) if name == "prospect"]
    if not leads:
        raise AdfError(_NO_PROSPECT, not_adf=True)
    return leads


# --- Reading the tree --------------------------------------------------------------
# Written for speed: one pass over each element's children, names looked up once.

_local_names: dict[Any, str] = {}


def _name(tag: Any) -> str:
    """The lower-cased local name of a tag or attribute: `{ns}Prospect` -> `prospect`."""
    name = _local_names.get(tag)
    if name is None:
        # Anything but an element (which the parser options rule out) gets no name.
        name = tag.rpartition("}")[2].lower() if isinstance(tag, str) else ""
        # Bounded, so documents full of invented names cannot grow it without end;
        # interned, so comparing a cached name with a literal is an identity check.
        if len(_local_names) < 2048:
            name = _local_names[tag] = sys.intern(name)
    return name


def _children(element: etree._Element) -> list[tuple[str, etree._Element]]:
    names = _local_names
    return [(names.get(child.tag) or _name(child.tag), child) for child in element]


def _line(element: etree._Element) -> str:
    """The element's text on one line, white space collapsed."""
    text = "".join(element.itertext()) if len(element) else element.text
    return " ".join(text.split()) if text else ""


def _block(element: etree._Element) -> str:
    """The element's text with its line breaks kept, each line collapsed and blank ends dropped."""
    text = "".join(element.itertext()) if len(element) else element.text
    if not text:
        return ""
    return "\n".join(" ".join(line.split()) for line in text.splitlines()).strip("\n")


def _attr(element: etree._Element, name: str) -> str:
    """An attribute by lower-cased local name, stripped; "" when absent."""
    value = element.get(name)
    if value is None:
        # Keys then one get(): items() and values() take quadratic time in lxml on
        # an element with thousands of attributes.
        key = next((k for k in element.attrib if _name(k) == name), None)
        value = element.get(key, "") if key is not None else ""
    # XML already turned line breaks and tabs in attribute values into spaces.
    return value.strip()


def _identifier(element: etree._Element) -> Identifier:
    return Identifier(_line(element), _attr(element, "source"))


def _prospect(prospect: etree._Element) -> ParsedLead:
    ids: list[Identifier] = []
    vehicles: list[Vehicle] = []
    texts: dict[str, str] = {}
    customer = vendor = provider = None
    for name, child in _children(prospect):
        if name == "id":
            ids.append(_identifier(child))
        elif name == "vehicle":
            vehicles.append(_vehicle(child))
        # Of the rest, the first of each counts.
        elif name == "customer":
            customer = customer or _customer(child)
        elif name == "vendor":
            vendor = vendor or _vendor(child)
        elif name == "provider":
            provider = provider or _provider(child)
        elif name in ("requestdate", "requesttype") and name not in texts:
            texts[name] = _line(child)
        elif name == "lms" and name not in texts:
            texts[name] = _full_name(child)
    main_id = next((i for i in ids if i.value), ids[0] if ids else Identifier())
    return ParsedLead(
        prospect_id=main_id.value,
        prospect_source=main_id.source,
        prospect_ids=tuple(ids),
        prospect_status=_attr(prospect, "status").lower(),
        request_date=texts.get("requestdate", ""),
        request_type=texts.get("requesttype", ""),
        vehicles=tuple(vehicles),
        customer=customer or Customer(),
        vendor=vendor or Vendor(),
        provider=provider or Provider(),
        lms_name=texts.get("lms", ""),
    )


# Vehicle child element -> Vehicle field, for the plain text ones.
_VEHICLE_TEXT_FIELDS = {
    "year": "year",
    "make": "make",
    "model": "model",
    "vin": "vin",
    "license_plate": "license_plate",
    "licenseplate": "license_plate",
    "license-plate": "license_plate",
    "stock": "stock",
    "trim": "trim",
    "doors": "doors",
    "bodystyle": "bodystyle",
    "transmission": "transmission",
    "fueltype": "fueltype",
    "type": "type",
}


def _vehicle(vehicle: etree._Element) -> Vehicle:
    values: dict[str, Any] = {}
    for name, child in _children(vehicle):
        field_name = _VEHICLE_TEXT_FIELDS.get(name)
        if field_name is not None:
            if not values.get(field_name):
                values[field_name] = _line(child)
        elif name in values:
            continue  # the first comments, odometer and price count
        elif name == "comments":
            values[name] = _block(child)
        elif name == "odometer":
            values[name] = Odometer(
                _line(child), _attr(child, "units"), _attr(child, "status")
            )
        elif name == "price":
            values[name] = Price(
                _line(child), _attr(child, "type"), _attr(child, "currency")
            )
        elif name == "colorcombination" and "interior_color" not in values:
            values.update(_colors(child))
    interest = _attr(vehicle, "interest").lower()
    # "trade-in" is the ADF value; senders also write trade, tradein or trade_in.
    if interest.startswith("trade"):
        return Vehicle(interest="trade-in", status="used", **values)
    status = "new" if _attr(vehicle, "status").lower() == "new" else "used"
    return Vehicle(interest=interest or "buy", status=status, **values)


def _colors(combination: etree._Element) -> dict[str, str]:
    """A <colorcombination>'s colours, or nothing when it names none (ADF lists the
    combinations by preference: the first that names a colour counts)."""
    colors = {"interiorcolor": "", "exteriorcolor": ""}
    for name, color in _children(combination):
        if name in colors and not colors[name]:
            colors[name] = _line(color)
    if not any(colors.values()):
        return {}
    return {
        "interior_color": colors["interiorcolor"],
        "exterior_color": colors["exteriorcolor"],
    }


_NAME_PARTS = ("first", "middle", "last", "suffix")


def _full_first_last(name_elements: list[etree._Element]) -> tuple[str, str, str]:
    """Full, first and last name from a contact's <name> elements.

    A name without a known part (part="full", none at all, or the misspelt
    type="full") is the full name. Without a full name, the parts make it; without
    first and last parts, the full name is split at its first space.
    """
    full = ""
    parts: dict[str, str] = {}
    for element in name_elements:
        part = _attr(element, "part").lower()
        if part in _NAME_PARTS:
            if not parts.get(part):
                parts[part] = _line(element)
        elif not full:
            full = _line(element)
    if not full:
        full = " ".join([parts[p] for p in _NAME_PARTS if parts.get(p)])
    if parts.get("first") or parts.get("last"):
        return full, parts.get("first", ""), parts.get("last", "")
    first, _, last = full.partition(" ")
    return full, first, last


def _full_name(element: etree._Element) -> str:
    """The full name of a vendor contact, provider or lms."""
    return _full_first_last(
        [child for name, child in _children(element) if name == "name"]
    )[0]


def _customer(customer: etree._Element) -> Customer:
    values: dict[str, Any] = {}
    for name, child in _children(customer):
        if name in values:
            continue
        if name == "contact":
            values.update(_contact(child))
            values[name] = True
        elif name == "comments":
            values[name] = _block(child)
        elif name == "whisper":
            values[name] = _line(child)
    values.pop("contact", None)
    return Customer(**values)


def _contact(contact: etree._Element) -> dict[str, Any]:
    values: dict[str, Any] = {}
    phones: list[Phone] = []
    name_elements: list[etree._Element] = []
    for name, child in _children(contact):
        if name == "name":
            name_elements.append(child)
        elif name == "phone":
            phones.append(
                Phone(
                    _line(child),
                    _attr(child, "type").lower(),
                    _attr(child, "time").lower(),
                )
            )
        elif values.get(name):
            continue  # the first non-empty email and language, and the first address, count
        elif name in ("email", "language", "locale"):
            values[name] = _line(child)
        elif name == "address":
            values[name] = _address(child)
    values["full_name"], values["first_name"], values["last_name"] = _full_first_last(
        name_elements
    )
    values["phones"] = tuple(phones)
    # Activix sends <locale> where ADF has <language>.
    locale = values.pop("locale", "")
    values["language"] = values.get("language") or locale
    return values


def _address(address: etree._Element) -> Address:
    streets: list[str] = []
    values: dict[str, str] = {}
    for name, child in _children(address):
        if name == "street":
            streets.append(_line(child))
        elif name in ("city", "regioncode", "postalcode", "country") and not values.get(
            name
        ):
            values[name] = _line(child)
    return Address(street=", ".join([s for s in streets if s]), **values)


def _vendor(vendor: etree._Element) -> Vendor:
    values: dict[str, Any] = {}
    for name, child in _children(vendor):
        if name in values:
            continue
        if name == "id":
            values[name] = _identifier(child)
        elif name == "vendorname":
            values[name] = _line(child)
        elif name == "contact":
            values[name] = _full_name(child)
    identifier = values.get("id", Identifier())
    return Vendor(
        id=identifier.value,
        id_source=identifier.source,
        name=values.get("vendorname", ""),
        contact_name=values.get("contact", ""),
    )


def _provider(provider: etree._Element) -> Provider:
    values: dict[str, Any] = {}
    name_elements: list[etree._Element] = []
    for name, child in _children(provider):
        if name == "name":
            name_elements.append(child)
        elif name in values:
            continue
        elif name == "id":
            values[name] = _identifier(child)
        elif name in ("service", "url"):
            values[name] = _line(child)
    identifier = values.pop("id", Identifier())
    full_name = _full_first_last(name_elements)[0]
    return Provider(
        id=identifier.value, id_source=identifier.source, name=full_name, **values
    )
