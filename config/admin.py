"""What the admin pages of several apps share."""

import math
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpRequest
from django.utils import timezone

from config.throttling import login_failed, login_refused


def zoned(at: datetime | None, zone: str | None = None) -> str:
    """A moment to the second in ``zone`` (an account's timezone) or, without one, the active
    timezone (the signed-in user's), labelled with the zone: "2026-11-22 09:14:03 MST"."""
    if at is None:
        return "—"
    try:
        tzinfo: Any = ZoneInfo(zone) if zone else timezone.get_current_timezone()
    except (ZoneInfoNotFoundError, ValueError):
        tzinfo = timezone.get_current_timezone()
    return f"{at.astimezone(tzinfo):%Y-%m-%d %H:%M:%S %Z}"


class ReadOnlyAdminMixin:
    """Rows that a workflow owns (leads, calls): support looks, and acts only through actions."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class AdminLoginForm(AdminAuthenticationForm):
    """The admin sign-in, refused for the rest of the minute after too many failures from
    one address or against one username (``ADMIN_LOGIN_FAILURE_LIMIT``, config/throttling.py)."""

    error_messages = {
        **AdminAuthenticationForm.error_messages,
        "throttled": "Too many failed sign-in attempts. Please wait %(seconds)s seconds and try again.",
    }

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        if self.request is not None:
            wait = login_refused(self.request, username)
            if wait is not None:
                raise ValidationError(
                    self.error_messages["throttled"],
                    code="throttled",
                    params={"seconds": math.ceil(wait)},
                )
        try:
            return super().clean()
        except ValidationError:
            if self.request is not None:
                login_failed(self.request, username)
            raise
