"""Texting in the admin: the settings page validates what a dealer would get wrong, the
account page offers them, and texts and opt-outs are read-only records."""

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.accounts.factories import AccountFactory, OrganizationFactory
from tests.admin_pages import text_of
from texting.models import Direction, OptOut, Purpose, Text, TextingSettings

pytestmark = pytest.mark.django_db


def url(model, action, *args):
    return reverse(f"admin:texting_{model}_{action}", args=args)


def settings_post(account, **fields):
    defaults = TextingSettings()
    return {
        "account": str(account.pk),
        "enabled": "on",
        "sender": "+13035550999",
        "quiet_start": "08:00",
        "quiet_end": "21:00",
        "automatic_limit": "3",
        "not_reached_template": defaults.not_reached_template,
        "no_agent_template": defaults.no_agent_template,
        "waiting_template": defaults.waiting_template,
        "instant_template": defaults.instant_template,
        "help_template": defaults.help_template,
        "call_me_keywords": defaults.call_me_keywords,
        **fields,
    }


def test_the_defaults_save_as_they_are(admin_client):
    account = AccountFactory()

    response = admin_client.post(url("textingsettings", "add"), settings_post(account))

    assert response.status_code == 302
    saved = TextingSettings.objects.get(account=account)
    assert saved.enabled
    assert saved.not_reached_template == TextingSettings().not_reached_template


@pytest.mark.parametrize(
    ("fields", "field", "message"),
    [
        (
            {"not_reached_template": "Hi {name}"},
            "not_reached_template",
            "Unknown placeholder {name}: use {first_name}, {vehicle}, {dealer}, {agent}, {opening}.",
        ),
        (
            {"help_template": "Hi {first_name"},
            "help_template",
            "A brace is left open: write {first_name}, etc.",
        ),
        (
            {"sender": "303-555-0999"},
            "sender",
            "Give a number in E.164 (+13035550100) or a Twilio Messaging Service SID (MG followed by 32 hexadecimal digits).",
        ),
        (
            {"quiet_start": "21:00", "quiet_end": "08:00"},
            "quiet_end",
            "Texts may go until a time after they may start.",
        ),
    ],
)
def test_settings_refuse_what_would_go_wrong(admin_client, fields, field, message):
    account = AccountFactory()

    response = admin_client.post(
        url("textingsettings", "add"), settings_post(account, **fields)
    )

    assert response.status_code == 200
    assert response.context["adminform"].form.errors[field] == [message]
    assert not TextingSettings.objects.exists()


def test_texting_needs_a_sending_number_or_a_caller_id(admin_client):
    account = AccountFactory(caller_id="")

    response = admin_client.post(
        url("textingsettings", "add"), settings_post(account, sender="")
    )

    assert response.context["adminform"].form.errors["sender"] == [
        "Texting needs a sending number: give one, or the account a caller ID."
    ]


def test_two_organizations_never_share_a_sending_number(admin_client):
    TextingSettings.objects.create(account=AccountFactory(), sender="+13035550999")
    sibling_org = OrganizationFactory()
    other = AccountFactory(organization=sibling_org)

    refused = admin_client.post(url("textingsettings", "add"), settings_post(other))

    assert refused.status_code == 200
    assert (
        "+13035550999 is already a number of another organization."
        in (refused.context["adminform"].form.errors["sender"][0])
    )
    assert TextingSettings.objects.count() == 1


def test_the_account_page_offers_the_texting_settings(admin_client):
    account = AccountFactory()

    response = admin_client.get(
        reverse("admin:accounts_account_change", args=[account.pk])
    )

    assert response.status_code == 200
    assert "Texting settings" in text_of(response)
    assert 'name="texting_settings-0-sender"' in response.content.decode()


def test_texts_and_opt_outs_are_listed_and_read_only(admin_client):
    account = AccountFactory(name="Demo Motors North")
    Text.objects.create(
        account=account,
        lead_phone="+13035550147",
        direction=Direction.OUT,
        purpose=Purpose.NOT_REACHED,
        to_number="+13035550147",
        body="We just tried to call you",
        status="failed",
        error="Twilio error 30006",
        due_at=timezone.now(),
    )
    OptOut.objects.create(
        account=account,
        phone="+13035550147",
        opted_out_at=timezone.now(),
        message="STOP",
    )

    texts = admin_client.get(url("text", "changelist"))
    opt_outs = admin_client.get(url("optout", "changelist"))

    assert "We just tried to call you" in text_of(texts)
    assert "Twilio error 30006" in text_of(texts)
    assert "+13035550147" in text_of(opt_outs)
    assert admin_client.get(url("text", "add")).status_code == 403
