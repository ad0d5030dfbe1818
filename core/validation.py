"""Validation messages in the documented style ("The email address field is required.").

Serializer fields here carry message templates with an ``{attribute}`` placeholder;
``flatten_errors`` turns DRF's nested error detail into ``{"dotted.key": [messages]}``
and fills each placeholder with the key's readable name, so a message always names the
member it is about: ``schedule.monday.endTime`` reads "schedule.monday.end time".
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from django.core.validators import EmailValidator, ProhibitNullCharactersValidator
from rest_framework import serializers

# DRF formats each template once (``str.format``), so the placeholder is escaped.
REQUIRED = "The {{attribute}} field is required."

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def digits_only(text: str) -> bool:
    """Whether ``text`` is one or more of the digits 0-9. ``str.isdigit`` also takes "²",
    "①" and other scripts' digits, which ``int`` then refuses (a 500) or reads as another
    number."""
    return text.isascii() and text.isdigit()


def attribute_name(key: str) -> str:
    """``emailAddress`` -> ``email address``; dots kept: ``accountIds.0`` -> ``account ids.0``."""
    return _CAMEL.sub(r"_\1", key).lower().replace("_", " ")


def flatten_errors(detail: Any, prefix: str = "") -> dict[str, list[str]]:
    """DRF error detail (nested dicts and lists) as a flat map of dotted keys to messages."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, Mapping):
        for key, value in detail.items():
            name = (
                "body"
                if key in ("non_field_errors", "__all__") and not prefix
                else str(key)
            )
            dotted = f"{prefix}.{name}" if prefix else name
            if key in ("non_field_errors", "__all__") and prefix:
                dotted = prefix
            for k, v in flatten_errors(value, dotted).items():
                flat.setdefault(k, []).extend(v)
    elif isinstance(detail, Sequence) and not isinstance(detail, str):
        if all(isinstance(item, str) for item in detail):
            label = attribute_name(prefix or "body")
            flat[prefix or "body"] = [
                str(item).replace("{attribute}", label) for item in detail
            ]
        else:
            for index, item in enumerate(detail):
                if item:
                    flat.update(
                        flatten_errors(
                            item, f"{prefix}.{index}" if prefix else str(index)
                        )
                    )
    else:
        flat[prefix or "body"] = [
            str(detail).replace("{attribute}", attribute_name(prefix or "body"))
        ]
    return flat


_COMMON = {"required": REQUIRED, "null": REQUIRED}
NULL_CHARACTERS = "The {attribute} may not contain null characters."
CONTROL_CHARACTERS = "The {attribute} field must not contain control characters."
# C0 controls and DEL (CONTRACT.md "Common"). NUL has its own message (NULL_CHARACTERS);
# a multi-line member (a bio) may hold TAB, LF and CR.
_CONTROL = re.compile("[\x01-\x1f\x7f]")
_CONTROL_IN_TEXT = re.compile("[\x01-\x08\x0b\x0c\x0e-\x1f\x7f]")


class NoControlCharacters:
    """Refuses C0 control characters and DEL (TAB, LF and CR too unless ``multiline``):
    they break every XML document, e-mail header and CSV line a value is written to."""

    def __init__(self, *, multiline: bool = False) -> None:
        self.pattern = _CONTROL_IN_TEXT if multiline else _CONTROL

    def __call__(self, value: Any) -> None:
        if isinstance(value, str) and self.pattern.search(value):
            raise serializers.ValidationError(CONTROL_CHARACTERS)


class CharField(serializers.CharField):
    default_error_messages = {
        **_COMMON,
        "blank": REQUIRED,
        "invalid": "The {{attribute}} must be a string.",
        "max_length": "The {{attribute}} may not be greater than {max_length} characters.",
        "min_length": "The {{attribute}} must be at least {min_length} characters.",
        "encoding": "The {{attribute}} must be valid UTF-8 text.",
    }

    def __init__(self, *, multiline: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = [
            *_in_our_words(self.validators),
            NoControlCharacters(multiline=multiline),
        ]

    def to_internal_value(self, data: Any) -> str:
        return _storable(self, super().to_internal_value(data))


def _in_our_words(validators: list[Any], email: str = "") -> list[Any]:
    """DRF's text validators with the documented style's messages: its refusal of a NUL
    read "Null characters are not allowed.". A validator's message is used as it is, not
    through ``str.format``, so its placeholder has one brace."""
    return [
        ProhibitNullCharactersValidator(NULL_CHARACTERS)
        if isinstance(validator, ProhibitNullCharactersValidator)
        else EmailValidator(message=email)
        if email and isinstance(validator, EmailValidator)
        else validator
        for validator in validators
    ]


def _storable(field: serializers.Field, text: str) -> str:
    """``text``, unless it holds a lone surrogate (JSON can say "\\ud800"), which no database
    column or response can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        field.fail("encoding")
    return text


# Ids are BigAutoField: a number outside a signed 64-bit integer names nothing and
# must not reach a query.
BIGINT_MAX = 2**63 - 1
BIGINT_MIN = -(2**63)


class IntegerField(serializers.IntegerField):
    """An integer within a signed 64-bit range unless the field narrows it further."""

    default_error_messages = {
        **_COMMON,
        "invalid": "The {{attribute}} must be an integer.",
        "max_string_length": "The {{attribute}} must be an integer.",
        "max_value": "The {{attribute}} may not be greater than {max_value}.",
        "min_value": "The {{attribute}} must be at least {min_value}.",
    }

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("max_value", BIGINT_MAX)
        kwargs.setdefault("min_value", BIGINT_MIN)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> int:
        # JSON true/false are not integers, whatever Python thinks; 1e999 reads as infinity.
        if isinstance(data, bool) or (
            isinstance(data, float) and not (math.isfinite(data) and data.is_integer())
        ):
            self.fail("invalid")
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    default_error_messages = {
        **_COMMON,
        "invalid": "The {{attribute}} field must be true or false.",
    }


class EmailField(serializers.EmailField):
    """Text that is an email address. DRF's EmailField uses one message, "invalid", both for
    a value that is not text (formatted by DRF) and for a bad address (not formatted, by
    Django's validator), so a template cannot suit both: each gets its own here."""

    default_error_messages = {
        **CharField.default_error_messages,
        # Used by Django's EmailValidator as it is, not through str.format: one brace.
        "email": "The {attribute} must be a valid email address.",
    }

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.validators = _in_our_words(
            self.validators, str(self.error_messages["email"])
        )

    def to_internal_value(self, data: Any) -> str:
        return _storable(self, super().to_internal_value(data))


class ListField(serializers.ListField):
    default_error_messages = {
        **_COMMON,
        "not_a_list": "The {{attribute}} must be an array.",
        "empty": REQUIRED,
        "min_length": "The {{attribute}} must have at least {min_length} items.",
        "max_length": "The {{attribute}} may not have more than {max_length} items.",
    }


class Serializer(serializers.Serializer):
    default_error_messages = {
        **_COMMON,
        "invalid": "The {{attribute}} must be an object.",
    }
