"""ADF leads as typed, immutable values, and the ADF fields parsing rules can test
(``FIELDS``, read with ``ParsedLead.field``)."""

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, is_dataclass
from functools import cache, partial
from operator import attrgetter
from typing import Any, get_args, get_origin, get_type_hints

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


@dataclass(frozen=True)
class Identifier:
    """An id element's text and its source attribute."""

    value: str = ""
    source: str = ""


@dataclass(frozen=True)
class Odometer:
    """Mileage as sent, with its units and status attributes."""

    value: str = ""
    units: str = ""
    status: str = ""


@dataclass(frozen=True)
class Price:
    """A price as sent, with its type and currency attributes."""

    value: str = ""
    type: str = ""
    currency: str = ""


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Phone:
    """A phone element's text and its type and time attributes (type lower-cased)."""

    number: str = ""
    type: str = ""
    time: str = ""

    @property
    def takes_calls(self) -> bool:
        """Whether the number's type can take a call (a fax or pager number cannot)."""
        return self.type.lower() not in _UNCALLABLE_PHONE_TYPES


@dataclass(frozen=True)
class Address:
    """A postal address; street lines are joined with commas."""

    street: str = ""
    city: str = ""
    regioncode: str = ""
    postalcode: str = ""
    country: str = ""


# A fax or pager number cannot take a call.
_UNCALLABLE_PHONE_TYPES = frozenset({"fax", "pager"})


@dataclass(frozen=True)
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


@dataclass(frozen=True)
class Vendor:
    """The dealer the lead is for."""

    id: str = ""
    id_source: str = ""
    name: str = ""
    contact_name: str = ""


@dataclass(frozen=True)
class Provider:
    """Where the lead came from: bucket id, source name, service and link."""

    id: str = ""
    id_source: str = ""
    name: str = ""
    service: str = ""
    url: str = ""


@dataclass(frozen=True)
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
        plain: dict[str, Any] = _plain_value(self)
        return plain

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


def _plain_value(value: Any) -> Any:
    """``_plain(asdict(value))`` without asdict's generic walk and deep copies (a lead
    took 200 us, more than parsing it): a value becomes a dict of its fields in order,
    a tuple a list, a string stays itself; anything else goes the generic way."""
    names = _FIELD_NAMES.get(type(value))
    if names is not None:
        return {name: _plain_value(getattr(value, name)) for name in names}
    if type(value) is tuple:
        return [_plain_value(item) for item in value]
    if type(value) is str:
        return value
    return _plain(asdict(_Box(value)))["value"]


@dataclass(frozen=True)
class _Box:
    """Holds any value, so that asdict converts it as it would a field's."""

    value: Any


def _from_dict(cls: Any, data: Mapping[str, Any]) -> Any:
    kwargs = {
        name: value if read is None else read(value)
        for name, read in _field_readers(cls)
        if (value := data.get(name, _MISSING)) is not _MISSING
    }
    return cls(**kwargs)


_MISSING = object()
_Reader = Callable[[Any], Any]


@cache
def _field_readers(cls: type) -> tuple[tuple[str, _Reader | None], ...]:
    """Each field's name and how its plain value is read back, once per class: the type
    hints are resolved here and not on every call (get_type_hints alone took most of a
    from_dict's 660 us)."""
    hints = get_type_hints(cls)
    return tuple((f.name, _reader(hints[f.name])) for f in fields(cls))


def _reader(hint: Any) -> _Reader | None:
    """How a plain value of this type becomes the value: None when it already is one."""
    if get_origin(hint) is tuple:
        read_item = _reader(get_args(hint)[0])
        if read_item is None:
            return tuple
        return lambda items: tuple([read_item(item) for item in items])
    if is_dataclass(hint):
        return partial(_from_dict, hint)
    return None


# The fields of each value class, in order: the keys of its `as_dict` form.
_FIELD_NAMES: dict[type, tuple[str, ...]] = {
    cls: tuple(f.name for f in fields(cls))
    for cls in (
        Identifier,
        Odometer,
        Price,
        Vehicle,
        Phone,
        Address,
        Customer,
        Vendor,
        Provider,
        ParsedLead,
    )
}


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
