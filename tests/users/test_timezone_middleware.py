from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import lxml.html
import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse
from django.utils import timezone
from django.utils.formats import date_format

from accounts.models import Account
from tests.accounts.factories import AccountFactory
from tests.admin_pages import sign_in_support
from users.middleware import UserTimezoneMiddleware
from users.models import User

pytestmark = pytest.mark.django_db

MOMENT = datetime(2026, 11, 22, 16, 14, 3, tzinfo=UTC)


def test_admin_shows_other_times_in_the_signed_in_users_timezone(client):
    sign_in_support(client, tz="Asia/Tokyo")
    account = AccountFactory()
    Account.objects.filter(pk=account.pk).update(created_at=MOMENT)

    page = client.get(reverse("admin:accounts_account_change", args=[account.pk]))

    row = lxml.html.fromstring(page.content.decode()).find_class("field-created_at")[0]
    shown = " ".join(row.find_class("readonly")[0].text_content().split())
    # 01:14 the next day in Tokyo; 16:14 would be UTC.
    assert shown == date_format(
        MOMENT.astimezone(ZoneInfo("Asia/Tokyo")), "DATETIME_FORMAT"
    )
    assert shown == "Nov. 23, 2026, 1:14 a.m."


def zone_seen(path: str, user) -> str:
    """The timezone active while a request to ``path`` by ``user`` is handled."""
    seen = []

    def view(request):
        seen.append(timezone.get_current_timezone_name())
        return HttpResponse()

    request = RequestFactory().get(path)
    request.user = user
    UserTimezoneMiddleware(view)(request)
    return seen[0]


@pytest.mark.parametrize(
    ("path", "tz", "expected"),
    [
        ("/admin/", "America/Denver", "America/Denver"),
        ("/calls/1/", "Asia/Tokyo", "Asia/Tokyo"),
        # An integrator's answers never depend on a browser session that came along.
        ("/api/users", "America/Denver", "UTC"),
        ("/admin/", "Mars/Olympus", "UTC"),
    ],
)
def test_middleware_activates_the_users_timezone_except_on_the_apis(path, tz, expected):
    user = User(username="someone", timezone=tz)

    assert zone_seen(path, user) == expected


def test_middleware_leaves_anonymous_visitors_in_utc_and_nothing_active_after():
    timezone.activate(ZoneInfo("Asia/Tokyo"))

    assert zone_seen("/admin/login/", AnonymousUser()) == "UTC"
    assert timezone.get_current_timezone_name() == "UTC"
