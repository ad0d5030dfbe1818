"""The User API answers with DRF's very bytes and headers while orjson writes its bodies
and no ``Accept`` header is parsed (core/api.py ``PlainJSONRenderer``,
``ContentNegotiation``): every answer, whatever ``Accept`` asks, is compared with the one
DRF's own negotiation and renderer give for the same request sent without one (the
interface answers JSON only; DRF's own answered ``text/html`` with a 406 and indented
for ``indent=2``)."""

import pytest
from rest_framework.negotiation import DefaultContentNegotiation

from core.api import JSONRenderer
from users.apis import UserApi

pytestmark = pytest.mark.django_db

TEXTS = {
    "firstName": "Zo\u2028\u00eb\u2029y",
    "lastName": 'O"Brien \\ \U0001f697',
    # The controls a bio may hold (the others are refused: CONTRACT.md "Common").
    "bio": "tab\t line\n cr\r \u00e9t\u00e9 </script> \u2028.",
}
ACCEPTS = [
    None,
    "*/*",
    "application/json",
    "application/json; indent=2",
    "application/*",
    "text/html, */*;q=0.8",
    "text/html",
]


def answer(response) -> tuple[int, dict[str, str], bytes]:
    return response.status_code, dict(response.items()), response.content


@pytest.fixture
def drf_own(monkeypatch):
    """Answers as DRF's own negotiation and JSON renderer give them."""

    def answered(send):
        monkeypatch.setattr(UserApi, "renderer_classes", [JSONRenderer])
        monkeypatch.setattr(
            UserApi, "content_negotiation_class", DefaultContentNegotiation
        )
        try:
            return send()
        finally:
            monkeypatch.undo()

    return answered


@pytest.mark.parametrize("accept", ACCEPTS)
def test_answers_are_drfs_own_bytes_and_headers(tenant, drf_own, accept):
    client = tenant.client()
    created = client.post(
        "/api/users",
        {
            "organizationId": tenant.organization.pk,
            "emailAddress": "zoe@example.com",
            "accountIds": [tenant.account.pk],
            **TEXTS,
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    user_id = created.json()["user"]["id"]
    asked = {} if accept is None else {"HTTP_ACCEPT": accept}
    requests = [
        lambda **headers: client.get(f"/api/users/{user_id}", **headers),
        lambda **headers: client.get(f"/api/users/{user_id + 1000}", **headers),  # 404
        lambda **headers: client.get(
            f"/api/users/find/email?organizationId={tenant.organization.pk}"
            "&emailAddress=zoe@example.com",
            **headers,
        ),
        lambda **headers: client.get(f"/api/users/{user_id}?format=json", **headers),
        lambda **headers: client.put(
            f"/api/users/{user_id}", {"bio": None}, format="json", **headers
        ),
    ]

    for send in requests:
        ours = answer(send(**asked))
        assert ours == answer(drf_own(send))
    if accept in (None, "*/*", "application/json"):
        response = client.get(f"/api/users/{user_id}", **asked)
        assert response["Content-Type"] == "application/json; charset=utf-8"
        assert response.json()["user"]["bio"] is None


def test_a_body_drf_would_write_otherwise_goes_to_drfs_rendering():
    from datetime import UTC, datetime

    from core.api import PlainJSONRenderer

    data = {"at": datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC), "n": 2**70}
    for value in (data, {"at": data["at"]}, {"n": data["n"]}, {1: "key"}):
        assert PlainJSONRenderer().render(
            value, "application/json"
        ) == JSONRenderer().render(value, "application/json")
