"""Mapping an ADF tree to a lead: one ``ParsedLead`` per prospect element.

Real-world quirks are tolerated: CDATA, element and attribute names in any case, and
namespace prefixes. Elements are matched on their lower-cased local name.

The walk: `children_of` lists an element's children once. Each reader below
(`_prospect`, `_vehicle`, `_customer`, ...) takes one pass over that list, keeping the
children it wants (in `firsts`, the first child of each name; in lists, every one of a
repeatable element), then reads those. Text and attributes are read only where they
are kept; unknown elements are passed by.

Each value is built once, from a plain dict of every one of its fields in order (`_value`):
a frozen dataclass's ``__init__`` sets its fields one ``object.__setattr__`` at a time,
which cost more than reading the tree (4 us for a Vehicle against under 1 us this way).
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
    root_name = local_name(root.tag)
    if root_name == "prospect":
        return [_prospect(root)]
    if root_name != "adf":
        raise AdfError(_NOT_ADF, not_adf=True)
    names = _local_names
    leads = [
        _prospect(child)
        for child in children_of(root)
        if (names.get(child.tag) or local_name(child.tag)) == "prospect"
    ]
    if not leads:
        raise AdfError(_NO_PROSPECT, not_adf=True)
    return leads


# --- Building values -------------------------------------------------------------------

_new = object.__new__
_set = object.__setattr__


def _value(cls: type, fields: dict[str, Any]) -> Any:
    """An instance of a value class holding `fields`: every field of the class, in order.

    What ``cls(**fields)`` makes (the same ``__dict__``, equality and hash), without the
    frozen ``__init__``'s one call per field."""
    value: Any = _new(cls)
    _set(value, "__dict__", fields)
    return value


# --- Reading the tree --------------------------------------------------------------

_local_names: dict[Any, str] = {}


def local_name(tag: Any) -> str:
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


def children_of(element: etree._Element) -> list[etree._Element]:
    """The element's children; the one place the walk lists them."""
    # A slice lists the children in one call, a fifth quicker than iterating them.
    return element[:]


# The readers inline `one_line` in their loops, where a call per element costs more than
# the work; these are the same expression.
def one_line(element: etree._Element) -> str:
    """The element's text on one line, white space collapsed."""
    text = "".join(element.itertext()) if len(element) else element.text
    if not text:
        return ""
    # Letters and digits only (most values) hold no white space to collapse.
    return text if text.isalnum() else " ".join(text.split())


def _block(element: etree._Element) -> str:
    """The element's text with its line breaks kept, each line collapsed and blank ends dropped."""
    text = "".join(element.itertext()) if len(element) else element.text
    if not text:
        return ""
    return "\n".join(" ".join(line.split()) for line in text.splitlines()).strip("\n")


def attr_value(element: etree._Element, name: str) -> str:
    """An attribute by lower-cased local name, stripped; "" when absent."""
    value = element.get(name)
    if value is None:
        # Keys then one get(): items() and values() take quadratic time in lxml on
        # an element with thousands of attributes.
        value = ""
        for key in element.attrib:
            if local_name(key) == name:
                value = element.get(key)
                break
    # XML already turned line breaks and tabs in attribute values into spaces.
    return value.strip()


# --- The readers ---------------------------------------------------------------------
# Where an element may repeat, the first one counts unless a comment says otherwise:
# every one is kept, or the first non-empty one counts.


def _prospect(prospect: etree._Element) -> ParsedLead:
    ids: list[Identifier] = []
    vehicles: list[Vehicle] = []
    firsts: dict[str, etree._Element] = {}  # of the other children, the first by name
    names = _local_names
    for child in children_of(prospect):
        name = names.get(child.tag) or local_name(child.tag)
        if name == "id":  # every one is kept
            ids.append(_identifier(child))
        elif name == "vehicle":  # every one is kept
            vehicles.append(_vehicle(child))
        elif name not in firsts:
            firsts[name] = child
    # The prospect's id is the first that has a value (its source comes with it).
    main_id = next((i for i in ids if i.value), ids[0] if ids else _NO_ID)
    customer = firsts.get("customer")
    vendor = firsts.get("vendor")
    provider = firsts.get("provider")
    lms = firsts.get("lms")
    return _value(  # type: ignore[no-any-return]
        ParsedLead,
        {
            "prospect_id": main_id.value,
            "prospect_source": main_id.source,
            "prospect_ids": tuple(ids),
            "prospect_status": attr_value(prospect, "status").lower(),
            "request_date": _line_of(firsts.get("requestdate")),
            "request_type": _line_of(firsts.get("requesttype")),
            "vehicles": tuple(vehicles),
            "customer": _NO_CUSTOMER if customer is None else _customer(customer),
            "vendor": _NO_VENDOR if vendor is None else _vendor(vendor),
            "provider": _NO_PROVIDER if provider is None else _provider(provider),
            "lms_name": "" if lms is None else _full_name(lms),
        },
    )


def _line_of(element: etree._Element | None) -> str:
    return "" if element is None else one_line(element)


def _identifier(element: etree._Element | None) -> Identifier:
    if element is None:
        return _NO_ID
    return _value(  # type: ignore[no-any-return]
        Identifier,
        {"value": one_line(element), "source": attr_value(element, "source")},
    )


_NO_ID = Identifier()
_NO_CUSTOMER = Customer()
_NO_VENDOR = Vendor()
_NO_PROVIDER = Provider()
_NO_ADDRESS = Address()

# Vehicle child element -> Vehicle field, for the plain text ones: the first non-empty
# counts.
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
# A Vehicle's fields, in order, with their defaults: each vehicle starts from a copy.
_VEHICLE_DEFAULTS: dict[str, Any] = {
    name: getattr(Vehicle(), name) for name in Vehicle.__dataclass_fields__
}


def _vehicle(vehicle: etree._Element) -> Vehicle:
    values = _VEHICLE_DEFAULTS.copy()
    text_fields = _VEHICLE_TEXT_FIELDS
    names = _local_names
    firsts: dict[str, etree._Element] = {}  # of the other children, the first by name
    colors = None
    for child in children_of(vehicle):
        name = names.get(child.tag) or local_name(child.tag)
        field_name = text_fields.get(name)
        if field_name is not None:
            # Every text field's default is "": the first non-empty counts.
            if not values[field_name]:
                values[field_name] = one_line(child)
        elif name == "colorcombination":
            # ADF lists the combinations by preference: the first naming a colour counts.
            colors = colors or _colors(child)
        elif name not in firsts:
            firsts[name] = child
    if colors is not None:
        values["interior_color"], values["exterior_color"] = colors
    comments = firsts.get("comments")
    if comments is not None:
        values["comments"] = _block(comments)
    odometer = firsts.get("odometer")
    if odometer is not None:
        values["odometer"] = _value(
            Odometer,
            {
                "value": one_line(odometer),
                "units": attr_value(odometer, "units"),
                "status": attr_value(odometer, "status"),
            },
        )
    price = firsts.get("price")
    if price is not None:
        values["price"] = _value(
            Price,
            {
                "value": one_line(price),
                "type": attr_value(price, "type"),
                "currency": attr_value(price, "currency"),
            },
        )
    values["interest"], values["status"] = _interest_status(vehicle)
    return _value(Vehicle, values)  # type: ignore[no-any-return]


def _interest_status(vehicle: etree._Element) -> tuple[str, str]:
    interest = attr_value(vehicle, "interest").lower()
    # "trade-in" is the ADF value; senders also write trade, tradein or trade_in.
    if interest.startswith("trade"):
        return "trade-in", "used"
    status = "new" if attr_value(vehicle, "status").lower() == "new" else "used"
    return interest or "buy", status


def _colors(combination: etree._Element) -> tuple[str, str] | None:
    """A <colorcombination>'s interior and exterior colours (the first non-empty of
    each), or None when it names neither."""
    interior = exterior = ""
    names = _local_names
    for color in children_of(combination):
        name = names.get(color.tag) or local_name(color.tag)
        if name == "interiorcolor":
            interior = interior or one_line(color)
        elif name == "exteriorcolor":
            exterior = exterior or one_line(color)
    return (interior, exterior) if interior or exterior else None


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
        part = attr_value(element, "part").lower()
        if part in _NAME_PARTS:
            if not parts.get(part):
                parts[part] = one_line(element)
        elif not full:
            full = one_line(element)
    if not full:
        full = " ".join([parts[p] for p in _NAME_PARTS if parts.get(p)])
    if parts.get("first") or parts.get("last"):
        return full, parts.get("first", ""), parts.get("last", "")
    first, _, last = full.partition(" ")
    return full, first, last


def _full_name(element: etree._Element | None) -> str:
    """The full name of a vendor contact, provider or lms."""
    if element is None:
        return ""
    names = _local_names
    return _full_first_last(
        [
            child
            for child in children_of(element)
            if (names.get(child.tag) or local_name(child.tag)) == "name"
        ]
    )[0]


def _customer(customer: etree._Element) -> Customer:
    firsts: dict[str, etree._Element] = {}
    names = _local_names
    for child in children_of(customer):
        name = names.get(child.tag) or local_name(child.tag)
        if name not in firsts:
            firsts[name] = child
    contact = firsts.get("contact")
    comments = firsts.get("comments")
    values = _NO_CONTACT if contact is None else _contact(contact)
    return _value(  # type: ignore[no-any-return]
        Customer,
        {
            **values,
            "comments": "" if comments is None else _block(comments),
            "whisper": _line_of(firsts.get("whisper")),
        },
    )


def _contact(contact: etree._Element) -> dict[str, Any]:
    """The contact's Customer fields: names, email, phones, language and address."""
    name_elements: list[etree._Element] = []
    phones: list[Phone] = []
    email = language = locale = ""  # the first non-empty of each counts
    address = None
    names = _local_names
    for child in children_of(contact):
        name = names.get(child.tag) or local_name(child.tag)
        if name == "name":  # every one is read: see _full_first_last
            name_elements.append(child)
        elif name == "phone":  # every one is kept
            phones.append(
                _value(
                    Phone,
                    {
                        "number": one_line(child),
                        "type": attr_value(child, "type").lower(),
                        "time": attr_value(child, "time").lower(),
                    },
                )
            )
        elif name == "email":
            email = email or one_line(child)
        elif name == "language":
            language = language or one_line(child)
        elif name == "locale":
            locale = locale or one_line(child)
        elif name == "address":
            address = address or _address(child)
    full_name, first_name, last_name = _full_first_last(name_elements)
    return {
        "full_name": full_name,
        "first_name": first_name,
        "last_name": last_name,
        "email": email,
        "phones": tuple(phones),
        # Activix sends <locale> where ADF has <language>.
        "language": language or locale,
        "address": address or _NO_ADDRESS,
    }


# A customer without a contact: the contact's fields at their defaults.
_NO_CONTACT: dict[str, Any] = {
    name: getattr(_NO_CUSTOMER, name)
    for name in Customer.__dataclass_fields__
    if name not in ("comments", "whisper")
}


def _address(address: etree._Element) -> Address:
    streets: list[str] = []
    values = {
        "street": "",
        "city": "",
        "regioncode": "",
        "postalcode": "",
        "country": "",
    }
    names = _local_names
    for child in children_of(address):
        name = names.get(child.tag) or local_name(child.tag)
        if name == "street":  # every line is kept
            streets.append(one_line(child))
        elif name in _ADDRESS_FIELDS and not values[name]:  # the first non-empty counts
            values[name] = one_line(child)
    values["street"] = ", ".join([s for s in streets if s])
    return _value(Address, values)  # type: ignore[no-any-return]


_ADDRESS_FIELDS = frozenset({"city", "regioncode", "postalcode", "country"})


def _vendor(vendor: etree._Element) -> Vendor:
    firsts: dict[str, etree._Element] = {}
    names = _local_names
    for child in children_of(vendor):
        name = names.get(child.tag) or local_name(child.tag)
        if name not in firsts:
            firsts[name] = child
    identifier = _identifier(firsts.get("id"))
    return _value(  # type: ignore[no-any-return]
        Vendor,
        {
            "id": identifier.value,
            "id_source": identifier.source,
            "name": _line_of(firsts.get("vendorname")),
            "contact_name": _full_name(firsts.get("contact")),
        },
    )


def _provider(provider: etree._Element) -> Provider:
    name_elements: list[etree._Element] = []
    firsts: dict[str, etree._Element] = {}
    names = _local_names
    for child in children_of(provider):
        name = names.get(child.tag) or local_name(child.tag)
        if name == "name":  # every one is read: see _full_first_last
            name_elements.append(child)
        elif name not in firsts:
            firsts[name] = child
    identifier = _identifier(firsts.get("id"))
    return _value(  # type: ignore[no-any-return]
        Provider,
        {
            "id": identifier.value,
            "id_source": identifier.source,
            "name": _full_first_last(name_elements)[0],
            "service": _line_of(firsts.get("service")),
            "url": _line_of(firsts.get("url")),
        },
    )
