"""What the admin pages of several apps share."""

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.http import HttpRequest
from django.utils import timezone


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
