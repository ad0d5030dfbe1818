"""What an ADF prospect holds beyond ``ParsedLead``, read from the stored document for
the CRM write-back (notify/crm.py) to carry over as it came: the vendor contact's e-mail
and phones, and per vehicle its colour combinations (with their preference), price
attributes, image tag, price comments, options and finance.

Read-only: intake neither calls this nor changes what it accepts. The document is read
with the same hardened parser (``leads.adf.guards.parse_root``) and the same matching
(lower-cased local names, first of each name counts) as ``leads.adf.mapping``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from leads.adf.guards import parse_root
from leads.adf.mapping import attr_value, children_of, local_name, one_line
from leads.adf.values import AdfError, Phone


@dataclass(frozen=True)
class ColorCombination:
    interior: str = ""
    exterior: str = ""
    preference: str = ""


@dataclass(frozen=True)
class PriceExtras:
    """A price's text and every attribute ADF 1.0 gives it, as sent."""

    value: str = ""
    type: str = ""
    currency: str = ""
    delta: str = ""
    relativeto: str = ""
    source: str = ""


@dataclass(frozen=True)
class Option:
    name: str = ""
    manufacturer_code: str = ""
    stock: str = ""
    weighting: str = ""
    price: PriceExtras | None = None


@dataclass(frozen=True)
class Amount:
    value: str = ""
    type: str = ""
    limit: str = ""
    currency: str = ""


@dataclass(frozen=True)
class Finance:
    method: str = ""
    amounts: tuple[Amount, ...] = ()
    balance: Amount | None = None  # its type is finance or residual; no limit


@dataclass(frozen=True)
class VehicleExtras:
    colors: tuple[ColorCombination, ...] = ()
    price: PriceExtras | None = None
    imagetag: str = ""
    pricecomments: str = ""
    options: tuple[Option, ...] = ()
    finance: Finance | None = None


@dataclass(frozen=True)
class ProspectExtras:
    vendor_contact_email: str = ""
    vendor_contact_phones: tuple[Phone, ...] = ()
    vehicles: tuple[VehicleExtras, ...] = ()


def prospect_extras(document: str | bytes, *, index: int = 0) -> ProspectExtras:
    """The extras of the document's prospect at ``index`` (in document order, as
    ``parse_adf`` lists them); empty extras when the document or prospect cannot be read."""
    try:
        root = parse_root(document)
    except AdfError:
        return ProspectExtras()
    if local_name(root.tag) == "prospect":
        prospects = [root]
    else:
        prospects = [c for c in children_of(root) if local_name(c.tag) == "prospect"]
    if index >= len(prospects):
        return ProspectExtras()
    vehicles: list[VehicleExtras] = []
    vendor = None
    for child in children_of(prospects[index]):
        name = local_name(child.tag)
        if name == "vehicle":
            vehicles.append(_vehicle(child))
        elif name == "vendor" and vendor is None:
            vendor = child
    email, phones = _vendor_contact(vendor)
    return ProspectExtras(email, phones, tuple(vehicles))


def _firsts(element: etree._Element) -> dict[str, etree._Element]:
    found: dict[str, etree._Element] = {}
    for child in children_of(element):
        found.setdefault(local_name(child.tag), child)
    return found


def _text(firsts: dict[str, etree._Element], name: str) -> str:
    element = firsts.get(name)
    return "" if element is None else one_line(element)


def _vendor_contact(vendor: etree._Element | None) -> tuple[str, tuple[Phone, ...]]:
    contact = None if vendor is None else _firsts(vendor).get("contact")
    if contact is None:
        return "", ()
    email = ""
    phones: list[Phone] = []
    for child in children_of(contact):
        name = local_name(child.tag)
        if name == "email":
            email = email or one_line(child)
        elif name == "phone" and one_line(child):
            phones.append(
                Phone(
                    one_line(child),
                    attr_value(child, "type").lower(),
                    attr_value(child, "time").lower(),
                )
            )
    return email, tuple(phones)


def _price(element: etree._Element | None) -> PriceExtras | None:
    if element is None:
        return None
    return PriceExtras(
        one_line(element),
        *(
            attr_value(element, a)
            for a in ("type", "currency", "delta", "relativeto", "source")
        ),
    )


def _amount(element: etree._Element) -> Amount:
    return Amount(
        one_line(element),
        attr_value(element, "type"),
        attr_value(element, "limit"),
        attr_value(element, "currency"),
    )


def _vehicle(vehicle: etree._Element) -> VehicleExtras:
    colors: list[ColorCombination] = []
    options: list[Option] = []
    firsts: dict[str, etree._Element] = {}
    for child in children_of(vehicle):
        name = local_name(child.tag)
        if name == "colorcombination":
            parts = _firsts(child)
            combination = ColorCombination(
                _text(parts, "interiorcolor"),
                _text(parts, "exteriorcolor"),
                _text(parts, "preference"),
            )
            if combination.interior or combination.exterior:
                colors.append(combination)
        elif name == "option":
            parts = _firsts(child)
            options.append(
                Option(
                    _text(parts, "optionname"),
                    _text(parts, "manufacturercode"),
                    _text(parts, "stock"),
                    _text(parts, "weighting"),
                    _price(parts.get("price")),
                )
            )
        else:
            firsts.setdefault(name, child)
    return VehicleExtras(
        colors=tuple(colors),
        price=_price(firsts.get("price")),
        imagetag=_text(firsts, "imagetag"),
        pricecomments=_text(firsts, "pricecomments"),
        options=tuple(options),
        finance=_finance(firsts.get("finance")),
    )


def _finance(finance: etree._Element | None) -> Finance | None:
    if finance is None:
        return None
    method = balance = None
    amounts: list[Amount] = []
    for child in children_of(finance):
        name = local_name(child.tag)
        if name == "method" and method is None:
            method = one_line(child)
        elif name == "amount":
            amounts.append(_amount(child))
        elif name == "balance" and balance is None:
            balance = _amount(child)
    if not (method or amounts or balance):
        return None
    return Finance(method or "", tuple(amounts), balance)
