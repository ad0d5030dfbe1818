"""The ADF value classes: frozen dataclasses whose constructor leads.adf.values writes
itself (for speed), with the parameters and defaults dataclasses would give them."""

import dataclasses
import inspect

import pytest

from leads.adf import (
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
)

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
