"""Who opens which page: sign-in is required everywhere, a role's pages are refused to the
others, and a call the user may not see is not found (404) for every role."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db

PAGES = [
    "pages:home",
    "pages:call-list",
    "pages:call-export",
    "pages:scoring-home",
    "pages:dashboard",
    "pages:coaching",
    "pages:suggestion-accuracy",
    "pages:agent-home",
    "pages:appointments",
]


@pytest.mark.parametrize("name", PAGES)
def test_every_page_sends_a_stranger_to_sign_in(client, name):
    response = client.get(reverse(name))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("auth:login") + "?next=")


def test_call_pages_send_a_stranger_to_sign_in(client, world):
    for url in (
        reverse("pages:call-detail", args=[world.agent_call.pk]),
        reverse("pages:scoring-call", args=[world.agent_call.pk]),
    ):
        assert client.get(url).status_code == 302


@pytest.mark.parametrize(
    ("role", "foreign"),
    [
        ("agent", "other_agent_call"),  # a colleague's call in the same account
        ("agent", "south_call"),
        ("manager", "south_call"),  # an account of the organization they do not manage
        ("manager", "foreign_call"),
        ("global_manager", "foreign_call"),  # another organization
        ("scorer", "south_call"),
        ("scorer", "foreign_call"),
        ("foreign_manager", "agent_call"),
    ],
)
def test_a_foreign_call_is_not_found_for_each_role(world, signed_in, role, foreign):
    client = signed_in(world.users()[role])
    call = getattr(world, foreign)
    assert client.get(reverse("pages:call-detail", args=[call.pk])).status_code == 404
    assert (
        client.post(
            reverse("pages:call-coach", args=[call.pk]), {"notes": "x"}
        ).status_code
        == 404
    )
    assert (
        client.post(reverse("pages:call-coaching-read", args=[call.pk])).status_code
        == 404
    )
    assert (
        client.post(
            reverse("pages:call-appointment-set", args=[call.pk]),
            {"appointment-date": "2027-01-15", "appointment-time": "10:30"},
        ).status_code
        == 404
    )
    listed = client.get(reverse("pages:call-list"))
    assert f'href="/calls/{call.pk}/"' not in listed.content.decode()
    exported = b"".join(
        client.get(reverse("pages:call-export")).streaming_content
    ).decode()
    assert f"\n{call.pk}," not in exported


@pytest.mark.parametrize(
    ("role", "own"),
    [
        ("agent", "agent_call"),
        ("manager", "other_agent_call"),
        ("global_manager", "south_call"),
        ("scorer", "other_agent_call"),
        ("staff", "foreign_call"),
        ("foreign_manager", "foreign_call"),
    ],
)
def test_each_role_opens_the_calls_it_reaches(world, signed_in, role, own):
    client = signed_in(world.users()[role])
    assert (
        client.get(
            reverse("pages:call-detail", args=[getattr(world, own).pk])
        ).status_code
        == 200
    )


def test_only_scorers_and_staff_open_the_scoring_pages(world, signed_in):
    call = world.other_agent_call
    for role in ("agent", "manager", "global_manager", "foreign_manager"):
        client = signed_in(world.users()[role])
        assert client.get(reverse("pages:scoring-home")).status_code == 403, role
        assert (
            client.get(reverse("pages:scoring-call", args=[call.pk])).status_code == 403
        )
        assert client.post(reverse("pages:scoring-next")).status_code == 403
    assert signed_in(world.scorer).get(reverse("pages:scoring-home")).status_code == 200
    assert signed_in(world.staff).get(reverse("pages:scoring-home")).status_code == 200


def test_a_scorer_cannot_score_a_call_of_an_account_not_assigned(world, signed_in):
    client = signed_in(world.scorer)
    for call in (world.south_call, world.foreign_call):
        assert (
            client.get(reverse("pages:scoring-call", args=[call.pk])).status_code == 404
        )
        assert (
            client.post(
                reverse("pages:scoring-call", args=[call.pk]), {"wow": "on"}
            ).status_code
            == 404
        )
        assert (
            client.post(reverse("pages:scoring-skip", args=[call.pk])).status_code
            == 404
        )


def test_only_managers_and_staff_open_the_dashboard(world, signed_in):
    for role in ("agent", "scorer"):
        assert (
            signed_in(world.users()[role]).get(reverse("pages:dashboard")).status_code
            == 403
        )
    for role in ("manager", "global_manager", "staff"):
        assert (
            signed_in(world.users()[role]).get(reverse("pages:dashboard")).status_code
            == 200
        )


@pytest.mark.parametrize(
    ("role", "first_page"),
    [
        ("agent", "pages:agent-home"),
        ("manager", "pages:dashboard"),
        ("global_manager", "pages:dashboard"),
        ("scorer", "pages:scoring-home"),
        ("staff", "pages:dashboard"),
    ],
)
def test_home_opens_each_roles_first_page(world, signed_in, role, first_page):
    response = signed_in(world.users()[role]).get(reverse("pages:home"))
    assert response.status_code == 302
    assert response["Location"] == reverse(first_page)
