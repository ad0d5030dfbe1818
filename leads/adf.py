"""Parse ADF (Auto-lead Data Format) XML leads into typed, immutable values.

Hostile documents are refused before libxml2 sees them: anything over
``MAX_ADF_BYTES`` and any document type declaration other than a bare
``<!DOCTYPE name>`` (so no entities, internal subsets or external DTDs). The parser
itself resolves no entities, loads no DTD, touches no network and never runs
XInclude, so an ``xi:include`` element is just an unknown element and is ignored.

Real-world quirks are tolerated: a byte-order mark, white space or processing
instructions (``<?adf version="1.0"?>``) before or instead of the XML declaration,
Latin-1 and Windows-1252 declared encodings, CDATA, element and attribute names in
any case, and namespace prefixes. Elements are matched on their lower-cased local name.

No ``AdfError`` message quotes the document or anything it references.
"""

import codecs
import re
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass
from operator import attrgetter
from typing import Any, get_args, get_origin, get_type_hints

from lxml import etree

__all__ = [
    "FIELDS",
    "MAX_ADF_BYTES",
    "MAX_DEPTH",
    "Address",
    "AdfError",
    "Customer",
    "Identifier",
    "Odometer",
    "ParsedLead",
    "Phone",
    "Price",
    "Provider",
    "Vehicle",
    "Vendor",
    "document_text",
    "parse_adf",
]

MAX_ADF_BYTES = 1024 * 1024
MAX_DEPTH = 64


class AdfError(ValueError):
    """The document cannot be read as an ADF lead; `too_large` marks the size refusal,
    `not_adf` a well-formed document that is not an ADF lead (no adf root, no prospect)."""

    def __init__(
        self, message: str, *, too_large: bool = False, not_adf: bool = False
    ) -> None:
        super().__init__(message)
        self.too_large = too_large
        self.not_adf = not_adf


@dataclass(frozen=True, slots=True)
class Identifier:
    """An id element's text and its source attribute."""

    value: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class Odometer:
    """Mileage as sent, with its units and status attributes."""

    value: str = ""
    units: str = ""
    status: str = ""


@dataclass(frozen=True, slots=True)
class Price:
    """A price as sent, with its type and currency attributes."""

    value: str = ""
    type: str = ""
    currency: str = ""


@dataclass(frozen=True, slots=True)
class Vehicle:
    """A vehicle; interest is "buy" unless sent otherwise, status "new" or "used" (a trade-in is always used)."""

    interest: str = "buy"
    status: str = "used"
    year: str = ""
    make: str = ""
    model: str = ""
    vin: str = ""
    license_plate: str = ""
    stock: str = ""
    trim: str = ""
    doors: str = ""
    bodystyle: str = ""
    transmission: str = ""
    fueltype: str = ""
    type: str = ""
    comments: str = ""
    odometer: Odometer = Odometer()
    interior_color: str = ""
    exterior_color: str = ""
    price: Price = Price()


@dataclass(frozen=True, slots=True)
class Phone:
    """A phone element's text and its type and time attributes (type lower-cased)."""

    number: str = ""
    type: str = ""
    time: str = ""

    @property
    def takes_calls(self) -> bool:
        """Whether the number's type can take a call (a fax or pager number cannot)."""
        return self.type.lower() not in _UNCALLABLE_PHONE_TYPES


@dataclass(frozen=True, slots=True)
class Address:
    """A postal address; street lines are joined with commas."""

    street: str = ""
    city: str = ""
    regioncode: str = ""
    postalcode: str = ""
    country: str = ""


# A fax or pager number cannot take a call.
_UNCALLABLE_PHONE_TYPES = frozenset({"fax", "pager"})


@dataclass(frozen=True, slots=True)
class Customer:
    """The customer's first contact, comments and whisper."""

    full_name: str = ""
    first_name: str = ""
    last_name: str = ""
    email: str = ""
    phones: tuple[Phone, ...] = ()
    language: str = ""
    address: Address = Address()
    comments: str = ""
    whisper: str = ""

    @property
    def phone(self) -> str:
        """The number to call: the first phone with a digit that is not a fax or pager."""
        callable_phone = self._callable_phone()
        return callable_phone.number if callable_phone else ""

    @property
    def phone_type(self) -> str:
        """The type attribute of the phone that `phone` returns."""
        callable_phone = self._callable_phone()
        return callable_phone.type if callable_phone else ""

    def _callable_phone(self) -> Phone | None:
        for candidate in self.phones:
            if candidate.takes_calls and any(c.isdigit() for c in candidate.number):
                return candidate
        return None


@dataclass(frozen=True, slots=True)
class Vendor:
    """The dealer the lead is for."""

    id: str = ""
    id_source: str = ""
    name: str = ""
    contact_name: str = ""


@dataclass(frozen=True, slots=True)
class Provider:
    """Where the lead came from: bucket id, source name, service and link."""

    id: str = ""
    id_source: str = ""
    name: str = ""
    service: str = ""
    url: str = ""


@dataclass(frozen=True, slots=True)
class ParsedLead:
    """One prospect of an ADF document; every text is stripped and "" when absent."""

    prospect_id: str = ""
    prospect_source: str = ""
    prospect_ids: tuple[Identifier, ...] = ()
    prospect_status: str = ""
    request_date: str = ""
    request_type: str = ""
    vehicles: tuple[Vehicle, ...] = ()
    customer: Customer = Customer()
    vendor: Vendor = Vendor()
    provider: Provider = Provider()
    lms_name: str = ""

    @property
    def buy_vehicle(self) -> Vehicle | None:
        """The vehicle of interest: the first one that is not a trade-in, wherever it sits."""
        return next((v for v in self.vehicles if v.interest != "trade-in"), None)

    @property
    def trade_in_vehicle(self) -> Vehicle | None:
        """The first trade-in vehicle."""
        return next((v for v in self.vehicles if v.interest == "trade-in"), None)

    def field(self, path: str) -> str:
        """The value at a `FIELDS` path, "" when the lead lacks it; KeyError for an unknown path."""
        return _FIELD_GETTERS[path](self)

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON types (lists, not tuples), so a stored lead reads back equal."""
        return _plain(asdict(self))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ParsedLead":
        """Rebuild a lead from `as_dict` output; missing keys take their defaults."""
        lead: ParsedLead = _from_dict(cls, data)
        return lead


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    return value


def _from_dict(cls: Any, data: Mapping[str, Any]) -> Any:
    hints = get_type_hints(cls)
    kwargs = {
        f.name: _from_plain(hints[f.name], data[f.name])
        for f in fields(cls)
        if f.name in data
    }
    return cls(**kwargs)


def _from_plain(hint: Any, value: Any) -> Any:
    if get_origin(hint) is tuple:
        item_hint = get_args(hint)[0]
        return tuple(_from_plain(item_hint, item) for item in value)
    if is_dataclass(hint):
        return _from_dict(hint, value)
    return value


def _vehicle_getter(
    attribute: str, *, trade_in: bool = False
) -> Callable[[ParsedLead], str]:
    get = attrgetter(attribute)

    def getter(lead: ParsedLead) -> str:
        vehicle = lead.trade_in_vehicle if trade_in else lead.buy_vehicle
        return get(vehicle) if vehicle else ""

    return getter


# Paths that parsing rules test; vehicle/* is the buy vehicle, tradein/* the trade-in.
_FIELD_TABLE: dict[str, tuple[str, Callable[[ParsedLead], str]]] = {
    "prospect/id": ("Prospect ID", attrgetter("prospect_id")),
    "prospect/id@source": ("Prospect ID source", attrgetter("prospect_source")),
    "prospect@status": ("Prospect status", attrgetter("prospect_status")),
    "prospect/requestdate": ("Request date", attrgetter("request_date")),
    "prospect/requesttype": ("Request type", attrgetter("request_type")),
    "vehicle/status": ("Vehicle status (new or used)", _vehicle_getter("status")),
    "vehicle/year": ("Vehicle year", _vehicle_getter("year")),
    "vehicle/make": ("Vehicle make", _vehicle_getter("make")),
    "vehicle/model": ("Vehicle model", _vehicle_getter("model")),
    "vehicle/vin": ("Vehicle VIN", _vehicle_getter("vin")),
    "vehicle/license_plate": (
        "Vehicle license plate",
        _vehicle_getter("license_plate"),
    ),
    "vehicle/stock": ("Vehicle stock number", _vehicle_getter("stock")),
    "vehicle/trim": ("Vehicle trim", _vehicle_getter("trim")),
    "vehicle/doors": ("Vehicle doors", _vehicle_getter("doors")),
    "vehicle/bodystyle": ("Vehicle body style", _vehicle_getter("bodystyle")),
    "vehicle/transmission": (
        "Vehicle transmission",
        _vehicle_getter("transmission"),
    ),
    "vehicle/fueltype": ("Vehicle fuel type", _vehicle_getter("fueltype")),
    "vehicle/type": ("Vehicle type", _vehicle_getter("type")),
    "vehicle/odometer": ("Vehicle odometer", _vehicle_getter("odometer.value")),
    "vehicle/price": ("Vehicle price", _vehicle_getter("price.value")),
    "vehicle/interiorcolor": (
        "Vehicle interior colour",
        _vehicle_getter("interior_color"),
    ),
    "vehicle/exteriorcolor": (
        "Vehicle exterior colour",
        _vehicle_getter("exterior_color"),
    ),
    "vehicle/comments": ("Vehicle comments", _vehicle_getter("comments")),
    "tradein/year": ("Trade-in year", _vehicle_getter("year", trade_in=True)),
    "tradein/make": ("Trade-in make", _vehicle_getter("make", trade_in=True)),
    "tradein/model": ("Trade-in model", _vehicle_getter("model", trade_in=True)),
    "tradein/vin": ("Trade-in VIN", _vehicle_getter("vin", trade_in=True)),
    "tradein/odometer": (
        "Trade-in odometer",
        _vehicle_getter("odometer.value", trade_in=True),
    ),
    "customer/name": ("Customer name", attrgetter("customer.full_name")),
    "customer/email": ("Customer email", attrgetter("customer.email")),
    "customer/phone": ("Customer phone", attrgetter("customer.phone")),
    "customer/phone@type": ("Customer phone type", attrgetter("customer.phone_type")),
    "customer/language": ("Customer language", attrgetter("customer.language")),
    "customer/address/street": (
        "Customer street",
        attrgetter("customer.address.street"),
    ),
    "customer/address/city": ("Customer city", attrgetter("customer.address.city")),
    "customer/address/regioncode": (
        "Customer region",
        attrgetter("customer.address.regioncode"),
    ),
    "customer/address/postalcode": (
        "Customer postal code",
        attrgetter("customer.address.postalcode"),
    ),
    "customer/address/country": (
        "Customer country",
        attrgetter("customer.address.country"),
    ),
    "customer/comments": ("Customer comments", attrgetter("customer.comments")),
    "customer/whisper": ("Whisper", attrgetter("customer.whisper")),
    "vendor/id": ("Vendor ID", attrgetter("vendor.id")),
    "vendor/id@source": ("Vendor ID source", attrgetter("vendor.id_source")),
    "vendor/vendorname": ("Vendor name", attrgetter("vendor.name")),
    "vendor/contact/name": ("Vendor contact name", attrgetter("vendor.contact_name")),
    "provider/id": ("Provider ID", attrgetter("provider.id")),
    "provider/id@source": ("Provider ID source", attrgetter("provider.id_source")),
    "provider/name": ("Provider name", attrgetter("provider.name")),
    "provider/service": ("Provider service", attrgetter("provider.service")),
    "provider/url": ("Provider URL", attrgetter("provider.url")),
    "lms/name": ("CRM name", attrgetter("lms_name")),
}
FIELDS: dict[str, str] = {path: label for path, (label, _) in _FIELD_TABLE.items()}
_FIELD_GETTERS = {path: getter for path, (_, getter) in _FIELD_TABLE.items()}


# --- Reading the bytes -------------------------------------------------------------

_TOO_LARGE = "The document is larger than 1 MiB."
_NOT_XML = "The document is not well-formed XML."
_BAD_ENCODING = (
    "The document's character encoding is unknown or does not match its bytes."
)
_DTD_REFUSED = (
    "The document declares a DTD, entities or an external reference; these are refused."
)
_TOO_DEEP = f"The document is nested deeper than {MAX_DEPTH} levels."
_NOT_ADF = "The document is not an ADF lead."
_NO_PROSPECT = "The document holds no prospect."

# White space and processing instructions, the XML declaration included, before the
# first real markup. Senders put `<?adf version="1.0"?>` or blank lines before the
# declaration, or write the declaration wrongly; none of it carries data.
_PROLOG_JUNK = re.compile(rb"(?:\s+|<\?.*?\?>)*", re.DOTALL)
# [^<>] rather than [^>]: each candidate declaration is scanned only up to the next
# tag, or a prolog of many "<?xml " would take quadratic time.
_DECLARED_ENCODING = re.compile(
    rb"<\?xml\s[^<>]*?\bencoding\s*=\s*[\"']([A-Za-z][A-Za-z0-9._:-]*)[\"']",
    re.IGNORECASE,
)
_UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
_BARE_DOCTYPE = re.compile(rb"<!DOCTYPE\s+[^\s\[\]>\"']+\s*>")
_DEEPER_THAN_LIMIT = etree.XPath("boolean(" + "/*" * (MAX_DEPTH + 1) + ")")

_threads = threading.local()


def _parser() -> etree.XMLParser:
    # One parser per thread: lxml releases the GIL while parsing only when parsers
    # are not shared between threads.
    parser: etree.XMLParser | None = getattr(_threads, "parser", None)
    if parser is None:
        parser = _threads.parser = etree.XMLParser(
            # The bytes are UTF-8 by now; saying so stops libxml2 from guessing another
            # encoding and seeing markup the DOCTYPE scan did not.
            encoding="utf-8",
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
    return parser


def _utf8_body(data: bytes | str) -> bytes:
    """The document as UTF-8 bytes without its prolog junk, or AdfError."""
    if len(data) > MAX_ADF_BYTES:
        raise AdfError(_TOO_LARGE, too_large=True)
    if isinstance(data, str):
        # Already decoded: whatever encoding the declaration names no longer applies.
        try:
            raw = data.encode("utf-8")
        except UnicodeEncodeError:
            raise AdfError(_BAD_ENCODING) from None
        if len(raw) > MAX_ADF_BYTES:
            raise AdfError(_TOO_LARGE, too_large=True)
        return _strip_prolog(raw.removeprefix(codecs.BOM_UTF8))[1]
    if data.startswith(codecs.BOM_UTF8):
        return _strip_prolog(data[len(codecs.BOM_UTF8) :])[1]
    if data.startswith(_UTF16_BOMS):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise AdfError(_BAD_ENCODING) from None
        return _strip_prolog(text.encode("utf-8"))[1]
    encoding, body = _strip_prolog(data)
    return body if encoding is None else _transcode(body, encoding)


def _strip_prolog(raw: bytes) -> tuple[str | None, bytes]:
    """The encoding the XML declaration names (None if none) and the bytes after the prolog junk."""
    end = _PROLOG_JUNK.match(raw).end()  # type: ignore[union-attr]  # the pattern matches the empty string
    declared = _DECLARED_ENCODING.search(raw, 0, end)
    return (declared.group(1).decode("ascii") if declared else None), raw[end:]


def _transcode(body: bytes, encoding: str) -> bytes:
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        raise AdfError(_BAD_ENCODING) from None
    # A declaration of ASCII or of any UTF on bytes we could read it from means UTF-8 in
    # practice; libxml2 treats a mislabelled UTF-16 declaration the same way.
    if codec == "ascii" or codec.startswith("utf"):
        return body
    try:
        return _decode(body, codec).encode("utf-8")
    except (UnicodeError, LookupError):
        # LookupError: the name is a codec, but not a text encoding (base64, rot13).
        raise AdfError(_BAD_ENCODING) from None


def _decode(data: bytes, codec: str) -> str:
    """``data`` decoded with a declared codec (a name `codecs.lookup` normalised)."""
    if codec == "iso8859-1":
        # Senders label Windows-1252 text (curly quotes, euro sign) as Latin-1, as
        # browsers know; bytes Windows-1252 leaves undefined fall back to Latin-1.
        try:
            return data.decode("cp1252")
        except UnicodeDecodeError:
            return data.decode("iso8859-1")
    return data.decode(codec)


def document_text(data: bytes) -> str:
    """The characters of a document received as bytes, read as `parse_adf` reads them:
    after a byte-order mark in its encoding, else in the encoding the XML declaration
    names, else in UTF-8.

    For storing the document as text: the declaration is kept (parsing text ignores it),
    a byte-order mark is not, and bytes that do not decode are kept as ``\\xNN`` escapes
    rather than lost (`parse_adf` refuses such a document anyway)."""
    if data.startswith(codecs.BOM_UTF8):
        return data[len(codecs.BOM_UTF8) :].decode("utf-8", "backslashreplace")
    if data.startswith(_UTF16_BOMS):
        return data.decode("utf-16", "backslashreplace")
    declared, body = _strip_prolog(data)
    prolog = data[: len(data) - len(body)].decode("utf-8", "backslashreplace")
    try:
        codec = codecs.lookup(declared).name if declared else "utf-8"
        if codec == "ascii" or codec.startswith("utf"):
            codec = "utf-8"  # as `_transcode` reads it
        return prolog + _decode(body, codec)
    except (UnicodeError, LookupError):
        return prolog + body.decode("utf-8", "backslashreplace")


def _refuse_doctypes(body: bytes) -> None:
    # Entities and external DTDs can only be declared in a DOCTYPE, so refusing every
    # DOCTYPE but `<!DOCTYPE name>` stops billion laughs, quadratic blowup and XXE
    # before libxml2 reads a byte.
    position = body.find(b"<!DOCTYPE")
    while position != -1:
        if not _BARE_DOCTYPE.match(body, position):
            raise AdfError(_DTD_REFUSED)
        position = body.find(b"<!DOCTYPE", position + 1)


def _parse_root(data: bytes | str) -> etree._Element:
    body = _utf8_body(data)
    _refuse_doctypes(body)
    try:
        root = etree.fromstring(body, _parser())
    except etree.XMLSyntaxError:
        # The syntax error's text quotes the document; it is deliberately dropped.
        raise AdfError(_NOT_XML) from None
    if _DEEPER_THAN_LIMIT(root):
        raise AdfError(_TOO_DEEP)
    return root


def parse_adf(data: bytes | str) -> list[ParsedLead]:
    """Parse an ADF document into one lead per prospect; anything unreadable or hostile raises AdfError."""
    root = _parse_root(data)
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
            # The first combination that names a colour; ADF lists them by preference.
            colors = {"interiorcolor": "", "exteriorcolor": ""}
            for color_name, color in _children(child):
                if color_name in colors and not colors[color_name]:
                    colors[color_name] = _line(color)
            if any(colors.values()):
                values["interior_color"] = colors["interiorcolor"]
                values["exterior_color"] = colors["exteriorcolor"]
    interest = _attr(vehicle, "interest").lower()
    # "trade-in" is the ADF value; senders also write trade, tradein or trade_in.
    if interest.startswith("trade"):
        return Vehicle(interest="trade-in", status="used", **values)
    status = "new" if _attr(vehicle, "status").lower() == "new" else "used"
    return Vehicle(interest=interest or "buy", status=status, **values)


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
