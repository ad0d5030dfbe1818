"""The interface's password rule: a digit, a lowercase and an uppercase letter, and a special character."""

from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import ValidationError

_RULES = (
    (re.compile(r"\d"), "one digit"),
    (re.compile(r"[a-z]"), "one lowercase letter"),
    (re.compile(r"[A-Z]"), "one uppercase letter"),
    (re.compile(r"[^A-Za-z0-9]"), "one special character"),
)
MESSAGE = "The password must contain at least one digit, one lowercase letter, one uppercase letter and one special character."


def password_is_complex(password: str) -> bool:
    return all(rule.search(password) for rule, _ in _RULES)


class ComplexityValidator:
    """For Django's password validation (admin, ``changepassword``)."""

    def validate(self, password: str, user: Any = None) -> None:
        if not password_is_complex(password):
            raise ValidationError(MESSAGE, code="password_too_simple")

    def get_help_text(self) -> str:
        return MESSAGE
