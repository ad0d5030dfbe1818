"""Pages speak the signed-in user's time: their ``timezone`` is active for the request."""

from collections.abc import Callable
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.http import HttpRequest, HttpResponse
from django.utils import timezone


class UserTimezoneMiddleware:
    """Activate the signed-in user's timezone (``User.timezone``) for the request; anyone
    else, and the APIs, get UTC (``TIME_ZONE``). The APIs are left alone because an
    integrator's answers must not change with a browser session that happens to come along."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        zone = None if request.path_info.startswith("/api/") else _user_zone(request)
        if zone is None:
            timezone.deactivate()
        else:
            timezone.activate(zone)
        try:
            return self.get_response(request)
        finally:
            timezone.deactivate()


def _user_zone(request: HttpRequest) -> ZoneInfo | None:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return None
    try:
        return ZoneInfo(str(getattr(user, "timezone", "") or ""))
    except (ZoneInfoNotFoundError, ValueError):
        return None
