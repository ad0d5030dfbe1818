"""The ADF value classes: frozen dataclasses with the parameters and defaults their fields
give them, and whose `as_dict` (written for speed) is dataclasses.asdict with lists for
tuples."""

import dataclasses
import inspect
import json
from pathlib import Path
from typing import Any

import pytest

from leads.adf import (
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
    parse_adf,
)

SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"

VALUE_CLASSES = [
    Address,
    Customer,
    Identifier,
    Odometer,
    ParsedLead,
    Phone,
    Price,
    Provider,
    Vehicle,
    Vendor,
]


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_constructor_takes_each_field_in_order_with_its_default(cls):
    fields = dataclasses.fields(cls)

    parameters = list(inspect.signature(cls).parameters.values())

    assert [(p.name, p.default, p.kind) for p in parameters] == [
        (f.name, f.default, inspect.Parameter.POSITIONAL_OR_KEYWORD) for f in fields
    ]


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_constructor_stores_every_argument_positional_or_keyword(cls):
    names = [f.name for f in dataclasses.fields(cls)]
    arguments = [f"<{name}>" for name in names]

    by_position = cls(*arguments)
    by_keyword = cls(**dict(zip(names, arguments, strict=True)))

    assert [getattr(by_position, name) for name in names] == arguments
    assert by_keyword == by_position
    assert hash(by_keyword) == hash(by_position)
    assert cls() == cls(*[f.default for f in dataclasses.fields(cls)])


@pytest.mark.parametrize("cls", VALUE_CLASSES, ids=lambda cls: cls.__name__)
def test_values_stay_frozen(cls):
    value = cls()
    name = dataclasses.fields(cls)[0].name

    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, name, "other")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(value, name)


def test_constructor_refuses_unknown_and_repeated_arguments():
    with pytest.raises(TypeError):
        Odometer(mileage="12")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Odometer("12", value="12")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Odometer("12", "mi", "original", "extra")  # type: ignore[call-arg]


def asdict_with_lists(value: Any) -> Any:
    """dataclasses.asdict, then every tuple a list: what `as_dict` has always returned."""
    return _lists(dataclasses.asdict(value))


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _lists(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_lists(item) for item in value]
    return value


def assert_same_plain(found: Any, expected: Any) -> None:
    """Equal, with the same types and the same key order all the way down."""
    assert json.dumps(found, default=repr) == json.dumps(expected, default=repr)
    assert type(found) is type(expected)
    if isinstance(found, dict):
        for key in found:
            assert_same_plain(found[key], expected[key])
    elif isinstance(found, list):
        for item, expected_item in zip(found, expected, strict=True):
            assert_same_plain(item, expected_item)


@pytest.mark.parametrize(
    "path", sorted(SAMPLES.glob("*.xml")), ids=lambda path: path.stem
)
def test_as_dict_of_sample_leads_is_asdict_with_lists(path):
    try:
        leads = parse_adf(path.read_bytes())
    except AdfError:
        pytest.skip("a refused sample")

    for lead in leads:
        assert_same_plain(lead.as_dict(), asdict_with_lists(lead))


def test_as_dict_of_unexpected_values_is_asdict_with_lists():
    # Only a hand-built lead or a stored one read back from odd JSON holds these.
    lead = ParsedLead(
        prospect_id=7,  # type: ignore[arg-type]
        vehicles=[Vehicle(make={"a": (1, Phone())})],  # type: ignore[arg-type]
        customer=Customer(phones=(Phone(number=None),)),  # type: ignore[arg-type]
        lms_name=("x", ["y", ("z",)]),  # type: ignore[arg-type]
    )

    assert_same_plain(lead.as_dict(), asdict_with_lists(lead))


def _values_within(value: Any) -> list[Any]:
    """The value and every value class instance it holds, all the way down."""
    if isinstance(value, tuple):
        return [inner for item in value for inner in _values_within(item)]
    if not dataclasses.is_dataclass(value):
        return []
    held = [getattr(value, f.name) for f in dataclasses.fields(value)]
    return [value, *_values_within(tuple(held))]


@pytest.mark.parametrize(
    "path", sorted(SAMPLES.glob("*.xml")), ids=lambda path: path.stem
)
def test_parsed_values_hold_every_field_as_the_constructor_would(path):
    # parse_adf builds its values without calling __init__ (see leads.adf.mapping):
    # each must hold exactly what the constructor stores, every field in order.
    try:
        leads = parse_adf(path.read_bytes())
    except AdfError:
        pytest.skip("a refused sample")

    for value in _values_within(tuple(leads)):
        cls = type(value)
        names = [f.name for f in dataclasses.fields(cls)]
        rebuilt = cls(**{name: getattr(value, name) for name in names})
        assert list(vars(value).items()) == list(vars(rebuilt).items())
