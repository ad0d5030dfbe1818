"""Sign-in, sign-out, password change and reset by email for the pages; failed sign-ins are
throttled per address and per username as the admin's are."""

from __future__ import annotations

import re

import pytest
from django.core import mail
from django.urls import reverse

from tests.pages.conftest import PASSWORD

pytestmark = pytest.mark.django_db


def sign_in(client, username, password, **extra):
    return client.post(
        reverse("auth:login"), {"username": username, "password": password}, **extra
    )


def test_signing_in_opens_the_page_asked_for_and_signing_out_ends_the_session(
    client, world
):
    client.get(reverse("pages:call-list"))
    response = client.post(
        reverse("auth:login") + "?next=/calls/",
        {"username": world.manager.username, "password": PASSWORD, "next": "/calls/"},
    )
    assert response["Location"] == "/calls/"
    assert client.get("/calls/").status_code == 200
    assert client.post(reverse("auth:logout"))["Location"] == reverse("auth:login")
    assert client.get("/calls/").status_code == 302


def test_a_wrong_password_is_refused_on_the_page(client, world):
    response = sign_in(client, world.manager.username, "wrong")
    assert response.status_code == 200
    assert "Please enter a correct username and password" in response.content.decode()


def test_failed_sign_ins_are_throttled_per_address(client, world, settings, one_window):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = "3/min"
    for _ in range(3):
        sign_in(client, world.manager.username, "wrong")
    refused = sign_in(client, world.manager.username, PASSWORD)
    assert (
        "Too many failed sign-in attempts. Please wait 20 seconds"
        in refused.content.decode()
    )
    assert "_auth_user_id" not in client.session
    # Another address may still try the same username once: its owner can sign in.
    other = sign_in(
        client.__class__(), world.manager.username, PASSWORD, REMOTE_ADDR="10.0.0.9"
    )
    assert other.status_code == 302


def test_failed_sign_ins_against_one_username_are_throttled_from_any_address(
    client, world, settings, one_window
):
    settings.ADMIN_LOGIN_FAILURE_LIMIT = "3/min"
    for n in range(3):
        sign_in(
            client.__class__(),
            world.manager.username,
            "wrong",
            REMOTE_ADDR=f"10.0.1.{n}",
        )
    attacker = client.__class__()
    sign_in(attacker, "someone-else", "wrong", REMOTE_ADDR="10.0.2.1")
    refused = sign_in(
        attacker, world.manager.username, PASSWORD, REMOTE_ADDR="10.0.2.1"
    )
    assert "Too many failed sign-in attempts" in refused.content.decode()


def test_a_signed_in_user_changes_their_password(client, world):
    client.force_login(world.agent)
    response = client.post(
        reverse("auth:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "New-pass-2!",
            "new_password2": "New-pass-2!",
        },
    )
    assert response["Location"] == reverse("auth:password_change_done")
    world.agent.refresh_from_db()
    assert world.agent.check_password("New-pass-2!")


def test_a_new_password_must_follow_the_password_rule(client, world):
    client.force_login(world.agent)
    response = client.post(
        reverse("auth:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "simple77",
            "new_password2": "simple77",
        },
    )
    assert response.status_code == 200
    assert "at least one digit, one lowercase letter" in response.content.decode()


def test_a_password_is_reset_by_the_link_mailed(client, world):
    world.manager.email = "morgan@example.com"
    world.manager.save(update_fields=["email"])
    response = client.post(
        reverse("auth:password_reset"), {"email": "morgan@example.com"}
    )
    assert response["Location"] == reverse("auth:password_reset_done")
    assert len(mail.outbox) == 1
    body = mail.outbox[0].body
    assert isinstance(body, str)
    found = re.search(r"http://testserver(/password/reset/\S+/)", body)
    assert found is not None, body
    link = found.group(1)
    form_page = client.get(link, follow=True)
    assert form_page.status_code == 200
    set_url = form_page.redirect_chain[-1][0]
    done = client.post(
        set_url, {"new_password1": "Fresh-pass-3!", "new_password2": "Fresh-pass-3!"}
    )
    assert done["Location"] == reverse("auth:password_reset_complete")
    world.manager.refresh_from_db()
    assert world.manager.check_password("Fresh-pass-3!")
    assert "This link has been used" in client.get(link, follow=True).content.decode()


def test_an_unknown_address_gets_the_same_answer_and_no_mail(client, world):
    response = client.post(
        reverse("auth:password_reset"), {"email": "nobody@example.com"}
    )
    assert response["Location"] == reverse("auth:password_reset_done")
    assert mail.outbox == []


def test_production_sessions_are_secure_short_and_end_with_the_browser():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "from django.conf import settings as s; print(s.SESSION_COOKIE_SECURE, "
        "s.SESSION_COOKIE_HTTPONLY, s.SESSION_COOKIE_SAMESITE, s.SESSION_EXPIRE_AT_BROWSER_CLOSE, "
        "s.SESSION_COOKIE_AGE, s.CSRF_COOKIE_SECURE, s.EMAIL_BACKEND)"
    )
    result = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=Path(__file__).resolve().parents[2],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": "s" * 60,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.split() == [
        "True",
        "True",
        "Lax",
        "True",
        "36000",
        "True",
        "django.core.mail.backends.smtp.EmailBackend",
    ], result.stderr
