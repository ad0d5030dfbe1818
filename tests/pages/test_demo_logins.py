"""seed_demo gives the pages a login per role, with the password the README shows."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from demo.management.commands.seed_demo import ORGANIZATIONS
from demo.pages import GLOBAL_MANAGER, PASSWORD

pytestmark = pytest.mark.django_db

LOGINS = {
    ORGANIZATIONS[0].scorer.email: "pages:scoring-home",
    GLOBAL_MANAGER: "pages:dashboard",
    "morgan.reyes@north.demo-motors.example": "pages:dashboard",
    "avery.lopez@north.demo-motors.example": "pages:agent-home",
}


def test_each_demo_login_signs_in_to_its_roles_first_page(client):
    err = StringIO()
    call_command("seed_demo", stdout=StringIO(), stderr=err)
    again = StringIO()
    call_command("seed_demo", stdout=StringIO(), stderr=again)  # safe to run again
    assert "password" not in again.getvalue()  # printed once, as the admin's
    assert f"password {PASSWORD}" in err.getvalue()
    for username, first_page in LOGINS.items():
        assert username in err.getvalue()
        assert client.login(username=username, password=PASSWORD), username
        assert client.get(reverse("pages:home"))["Location"] == reverse(first_page), (
            username
        )
        client.logout()
