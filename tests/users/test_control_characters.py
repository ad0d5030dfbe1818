"""Control characters stop at the door (CONTRACT.md "Common"): a C0 control or DEL in a
single-line member of the User API is a 422 in the validation shape and changes nothing;
``bio`` and ``companyRole`` may hold TAB, LF and CR and nothing else of the kind."""

from __future__ import annotations

import pytest

from tests.users.test_user_api import created, post_user
from users.models import User

pytestmark = pytest.mark.django_db

CONTROL = "The {} field must not contain control characters."


@pytest.mark.parametrize(
    ("member", "value", "attribute"),
    [
        ("firstName", "Ctl\u0001\u000bchar", "first name"),
        ("lastName", "Agent\u0001Ctl", "last name"),
        ("lastName", "Eve\r\nBcc: evil@example.com", "last name"),
        ("username", "jane\tlee", "username"),
        ("phoneNumber", "+1303555\u007f0123", "phone number"),
        ("bio", "Sells\u0007trucks", "bio"),
        ("companyRole", "Sales\u001b[31m", "company role"),
    ],
)
def test_a_control_character_is_refused_and_nothing_is_stored(
    tenant, member, value, attribute
):
    response = post_user(tenant, **{member: value})

    assert response.status_code == 422
    assert response.json() == {
        "message": "The given data was invalid.",
        "errors": {member: [CONTROL.format(attribute)]},
    }
    assert not User.objects.exists()


def test_an_update_with_a_control_character_changes_nothing(tenant):
    user = created(tenant)

    response = tenant.client().put(
        f"/api/users/{user['id']}", {"lastName": "Agent\u0001Ctl"}, format="json"
    )

    assert response.status_code == 422
    assert response.json()["errors"] == {"lastName": [CONTROL.format("last name")]}
    assert User.objects.get(pk=user["id"]).last_name == "Doe"


def test_bio_and_company_role_keep_tab_lf_and_cr(tenant):
    response = post_user(
        tenant, bio="Line one\r\nLine two\tend", companyRole="Sales\nFinance"
    )

    assert response.status_code == 201
    assert response.json()["user"]["bio"] == "Line one\r\nLine two\tend"
    stored = User.objects.get()
    assert (stored.bio, stored.company_role) == (
        "Line one\r\nLine two\tend",
        "Sales\nFinance",
    )
