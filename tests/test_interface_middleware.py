"""The pages' own middleware (sessions, the signed-in user, messages) is for pages:
an interface's request goes straight past it, even with a signed-in browser session
along, and answers as before; the pages and the API's documentation keep all of it."""

from __future__ import annotations

import pytest

from tests.admin_pages import sign_in_support
from tests.users.factories import agent

pytestmark = pytest.mark.django_db

PAGE_ONLY = ("session", "_messages")


def test_an_interface_request_goes_past_the_pages_middleware(client, tenant):
    sign_in_support(client)  # a browser session and its CSRF cookie come along
    client.get("/admin/")
    person = agent(tenant.account, phone="+13035550100")

    response = client.get(f"/api/users/{person.pk}", headers=tenant.headers)

    assert response.status_code == 200
    assert response.json()["user"]["id"] == person.pk
    request = response.wsgi_request
    assert [name for name in PAGE_ONLY if hasattr(request, name)] == []
    assert request.user.is_anonymous  # the key's (DRF's), not the session's
    assert "Vary" not in response.headers
    assert response.cookies == {}


def test_an_interface_post_with_a_session_needs_no_csrf_token(client, tenant):
    sign_in_support(client)
    client.get("/admin/")
    client.handler.enforce_csrf_checks = True

    response = client.get("/api/users/0", headers=tenant.headers)
    refused = client.post(
        "/api/users", {}, content_type="application/json", headers=tenant.headers
    )

    assert response.status_code == 404
    assert response.json() == {"success": False, "message": "User not found"}
    assert refused.status_code == 422  # validated, not refused for a missing CSRF token


@pytest.mark.parametrize("path", ["/admin/", "/api/docs/"])
def test_pages_and_the_api_docs_keep_sessions_and_the_signed_in_user(client, path):
    user = sign_in_support(client)

    response = client.get(path)

    assert response.status_code == 200
    request = response.wsgi_request
    assert [name for name in PAGE_ONLY if not hasattr(request, name)] == []
    assert request.session["_auth_user_id"] == str(user.pk)
