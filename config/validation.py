"""Validation messages in the documented style ("The email address field is required.").

Serializer fields here carry message templates with an ``{attribute}`` placeholder;
``flatten_errors`` turns DRF's nested error detail into ``{"dotted.key": [messages]}``
and fills each placeholder with the key's readable name, so a message always names the
member it is about: ``schedule.monday.endTime`` reads "schedule.monday.end time".
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from rest_framework import serializers

# DRF formats each template once (``str.format``), so the placeholder is escaped.
REQUIRED = "The {{attribute}} field is required."

_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


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


class CharField(serializers.CharField):
    default_error_messages = {
        **_COMMON,
        "blank": REQUIRED,
        "invalid": "The {{attribute}} must be a string.",
        "max_length": "The {{attribute}} may not be greater than {max_length} characters.",
        "min_length": "The {{attribute}} must be at least {min_length} characters.",
    }


class IntegerField(serializers.IntegerField):
    default_error_messages = {
        **_COMMON,
        "invalid": "The {{attribute}} must be an integer.",
        "max_string_length": "The {{attribute}} must be an integer.",
        "max_value": "The {{attribute}} may not be greater than {max_value}.",
        "min_value": "The {{attribute}} must be at least {min_value}.",
    }

    def to_internal_value(self, data: Any) -> int:
        # JSON true/false are not integers, whatever Python thinks.
        if isinstance(data, bool) or (
            isinstance(data, float) and not data.is_integer()
        ):
            self.fail("invalid")
        return super().to_internal_value(data)


class BooleanField(serializers.BooleanField):
    default_error_messages = {
        **_COMMON,
        "invalid": "The {{attribute}} field must be true or false.",
    }


class EmailField(serializers.EmailField):
    default_error_messages = {
        **CharField.default_error_messages,
        # Used by Django's EmailValidator as it is, not through str.format: one brace.
        "invalid": "The {attribute} must be a valid email address.",
    }


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
