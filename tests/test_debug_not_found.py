"""``make run`` (DEBUG on) answers "not found" as production does: an ``/api/`` path that
names no endpoint gets the interface's JSON 404, and a page the styled "Not found" page,
never Django's technical 404 page. Django's test runner turns DEBUG off, so each test
turns it on itself."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.accounts.factories import AccountFactory
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

ENVELOPE_404 = b'{"success":false,"message":"Not found."}'


def answer(client, path: str) -> tuple[int, str, bytes]:
    response = client.post(path) if path == "/api/nl/" else client.get(path)
    return response.status_code, response["Content-Type"], response.content


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/nosuch", ENVELOPE_404),
        ("/api/users/", ENVELOPE_404),
        ("/api/users/find/nickname", ENVELOPE_404),
        ("/api/nl/", b'{"reason":"Not found."}'),
        ("/api/scoreddata/", ENVELOPE_404),
        ("/api/clicktocallv2/nosuch", ENVELOPE_404),
    ],
)
def test_an_api_path_naming_no_endpoint_answers_the_same_json_404_with_debug_on(
    client, settings, path, body
):
    settings.DEBUG = False
    production = answer(client, path)
    settings.DEBUG = True
    debug = answer(client, path)

    assert debug == production == (404, "application/json; charset=utf-8", body)


def styled_not_found(response) -> bool:
    """The project's "Not found" page (templates/404.html in the site's layout)."""
    content = response.content.decode()
    return (
        response.status_code == 404
        and response["Content-Type"] == "text/html; charset=utf-8"
        and "404.html" in [template.name for template in response.templates]
        and "<h1>Not found</h1>" in content
        and "Lead-to-call</title>" in content
        and "URLconf" not in content  # Django's technical page lists the URLconf
    )


@pytest.mark.parametrize("debug", [False, True])
def test_a_page_naming_nothing_is_the_styled_not_found_page(client, settings, debug):
    settings.DEBUG = debug

    assert styled_not_found(client.get("/nosuch-page"))


@pytest.mark.parametrize("debug", [False, True])
def test_a_page_of_nothing_the_user_may_see_is_the_styled_not_found_page(
    client, settings, debug
):
    settings.DEBUG = debug
    client.force_login(agent(AccountFactory(), phone="+13035550140"))

    response = client.get(reverse("pages:call-detail", args=[2**40]))

    assert styled_not_found(response)


def test_a_path_missing_only_its_slash_is_still_redirected_with_debug_on(
    client, settings
):
    settings.DEBUG = True

    response = client.get("/admin")

    assert (response.status_code, response["Location"]) == (301, "/admin/")
