"""No query string makes a page answer 5xx: a property-based search over every page route
(pages/urls.py, users/page_urls.py), as each role and as a stranger.

Each example opens one page with generated parameters: the pages' own filter names (the
call browser's and the dashboard's) far more often than made-up ones, days with the
calendar's ends in them, real and foreign ids, numbers past any column's range, text,
repeated names and percent-escapes that are not UTF-8; the call pages get real, foreign
and huge ids. A streamed answer (the CSV export) is read to its end, so a failure inside
the stream fails the example too. Bounded and derandomized: the same examples every run.
A search may miss a rare input, so the ends of the calendar are also tried pair by pair
on every page that takes dates.
"""

from __future__ import annotations

import itertools
from datetime import date
from urllib.parse import quote, urlencode

import pytest
from django.http import HttpResponseBase, StreamingHttpResponse
from django.test import Client
from django.urls import URLPattern, reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calls.models import CallStatus
from pages import urls as staff_pages
from pages.filters import CallFilter
from pages.forms import DashboardForm
from tests.accounts.factories import AccountFactory
from tests.scoring.factories import CallFactory
from tests.strategies import EDGE_DAYS, day_text
from users import page_urls as user_pages

pytestmark = pytest.mark.django_db

ROUTES: dict[str, URLPattern] = {
    f"{module.app_name}:{pattern.name}": pattern
    for module in (staff_pages, user_pages)
    for pattern in module.urlpatterns
    if isinstance(pattern, URLPattern) and pattern.name
}
# The pages that take a date: searched longer.
DATED = {"pages:call-list", "pages:call-export", "pages:dashboard"}
EXAMPLES = 60
OTHER_EXAMPLES = 12
ROLES = [
    "agent",
    "manager",
    "global_manager",
    "scorer",
    "staff",
    "foreign_manager",
    None,
]

FILTER_NAMES = sorted(
    {*CallFilter.base_filters, *DashboardForm.base_fields, "page", "next"}
)
DATE_NAMES = {"date_from", "date_to"}
CHOICES = sorted(
    {
        *CallStatus.values,
        "yes",
        "no",
        "1",
        "10",
        "11",
        "0",
        "-1",
        "received",
        "-received",
        "response",
        "-lead",
        "agent,-status",
    }
)
text = st.text(st.characters(codec="utf-8"), max_size=20)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**31, 2**63, -(2**63) - 1, 10**30]),
).map(str)
RANGES = [(), ("date_from",), ("date_to",), ("date_from", "date_to")]
range_day = st.one_of(
    st.sampled_from([date.min, date.max]).map(date.isoformat),
    st.sampled_from(EDGE_DAYS).map(date.isoformat),
    day_text,
)
# Appended as written: names without values, empty names, escapes that are not UTF-8.
RAW = st.sampled_from(
    ["", "&", "=&=", "date_to", "date_to=", "%ff%fe=%ff", "page=%00", "q=%00", "a=%zz"]
)


@pytest.fixture
def pages(world):
    """The world, with an account 14 hours ahead of UTC: its days start a day earlier in
    UTC than the Americas' do."""
    east = AccountFactory(
        organization=world.north.organization,
        name="Line Islands",
        timezone="Pacific/Kiritimati",
    )
    CallFactory(account=east, last_name="East", status=CallStatus.ANSWER)
    world.global_manager.accounts.add(east)
    ids = [
        str(pk)
        for pk in (
            world.north.pk,
            world.south.pk,
            world.foreign.pk,
            east.pk,
            world.agent.pk,
            world.other_agent.pk,
            world.foreign_manager.pk,
            *world.north.teams.values_list("pk", flat=True),
        )
    ]
    calls = [
        world.agent_call.pk,
        world.other_agent_call.pk,
        world.south_call.pk,
        world.foreign_call.pk,
    ]
    return world, ids, calls


def _value(name: str, ids: list[str]) -> st.SearchStrategy[str]:
    if name in DATE_NAMES:
        return st.one_of(day_text, day_text, day_text, text)
    return st.one_of(st.sampled_from(ids), st.sampled_from(CHOICES), numbers, text)


def _query(data, ids: list[str]) -> str:
    pairs = []
    for _ in range(data.draw(st.integers(0, 6), label="parameters")):
        name = data.draw(
            st.one_of(
                st.sampled_from(FILTER_NAMES), st.sampled_from(FILTER_NAMES), text
            ),
            label="name",
        )
        pairs.append((name, data.draw(_value(name, ids), label=name)))
    # And a range, open at either end or not, its days often the calendar's ends.
    pairs.extend(
        (name, data.draw(range_day, label=name))
        for name in data.draw(st.sampled_from(RANGES), label="range")
    )
    raw = data.draw(RAW, label="raw")
    return "&".join(part for part in (urlencode(pairs), raw) if part)


def _path(name: str, data, calls: list[int]) -> str:
    pattern = ROUTES[name]
    kwargs: dict[str, object] = {}
    for key in pattern.pattern.converters:
        if key == "call_id":
            kwargs[key] = data.draw(
                st.one_of(st.sampled_from(calls), st.integers(0, 2**80)), label=key
            )
        else:  # the password-reset link's uidb64 and token
            kwargs[key] = quote(
                data.draw(st.text(st.characters(codec="utf-8"), min_size=1)), safe=""
            )
    if not kwargs:
        return reverse(name)
    # reverse() would refuse a made-up uidb64 that its converter accepts: build it.
    route = str(pattern.pattern)
    for key, value in kwargs.items():
        route = route.replace(f"<int:{key}>", str(value)).replace(
            f"<{key}>", str(value)
        )
    return "/" + route


def _searched(examples: int):
    return settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[
            HealthCheck.function_scoped_fixture,
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
        ],
    )


def _open(pages, name: str, data) -> None:
    world, ids, calls = pages
    role = data.draw(st.sampled_from(ROLES), label="role")
    client = Client()  # a view's exception is raised here, a 5xx fails below
    if role is not None:
        client.force_login(world.users()[role])
    headers = {}
    if data.draw(st.booleans(), label="htmx asks for the table"):
        headers = {"HX-Request": "true", "HX-Target": "results"}
    url = _path(name, data, calls)
    query = _query(data, ids)

    response = client.get(f"{url}?{query}" if query else url, headers=headers)

    if response.streaming:
        _read_stream(response)  # a failure inside the stream, too
    assert response.status_code < 500, (url, query, response.status_code)


def _read_stream(response: HttpResponseBase) -> bytes:
    """A streamed body, read through (what ``b"".join(streaming_content)`` reads)."""
    assert isinstance(response, StreamingHttpResponse)
    return response.getvalue()


@pytest.mark.parametrize("name", sorted(DATED))
@given(data=st.data())
@_searched(EXAMPLES)
def test_no_query_string_makes_a_dated_page_answer_a_server_error(pages, name, data):
    _open(pages, name, data)


@pytest.mark.parametrize("name", sorted(set(ROUTES) - DATED))
@given(data=st.data())
@_searched(OTHER_EXAMPLES)
def test_no_query_string_makes_any_other_page_answer_a_server_error(pages, name, data):
    _open(pages, name, data)


@pytest.mark.parametrize("name", sorted(DATED))
def test_every_pair_of_edge_days_is_answered_without_a_server_error(pages, name):
    """Not left to chance: each pair of the calendar's and the accepted range's ends (and
    an open end) on each page that takes dates, as staff, who reach every timezone."""
    world = pages[0]
    client = Client(raise_request_exception=False)
    client.force_login(world.staff)
    failed: list[tuple[dict[str, str], str | int]] = []
    for first, last in itertools.product([None, *EDGE_DAYS], repeat=2):
        query = {
            key: day.isoformat()
            for key, day in (("date_from", first), ("date_to", last))
            if day is not None
        }
        response = client.get(reverse(name), query)
        try:
            if response.streaming:
                _read_stream(response)
        except Exception as error:  # each failure is collected, all shown at once
            failed.append((query, repr(error)))
            continue
        if response.status_code >= 500:
            failed.append((query, response.status_code))
    assert failed == []


def test_the_search_covers_every_page_route_and_filter():
    """A new page, or a new filter of a page that takes dates, is searched as soon as it
    is routed or declared, or this fails."""
    assert set(ROUTES) >= {
        "pages:home",
        "pages:call-list",
        "pages:call-export",
        "pages:call-detail",
        "pages:scoring-home",
        "pages:scoring-call",
        "pages:dashboard",
        "auth:login",
        "auth:password_reset_confirm",
    }
    assert len(ROUTES) == len(staff_pages.urlpatterns) + len(user_pages.urlpatterns)
    assert {"date_from", "date_to", "account", "q", "sort"} <= set(FILTER_NAMES)
