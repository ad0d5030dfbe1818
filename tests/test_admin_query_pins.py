"""Query counts pinned for the admin pages support staff use most (issue 22): every
model's change form, the changelists not pinned in their apps' modules, the key, rule and
webhook tools, the app index and the password form. Each page, for a superuser, costs an
exact number of queries with two organizations of everything and the same with six (most
changelists then hold 20 rows or more), so an N+1 fails here."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.contrib.contenttypes.models import ContentType
from django.db.models import Model
from django.urls import reverse
from django.utils import timezone

from accounts.services import api_key_rotate
from calls.models import DialingSettings
from handoffs.models import HandoffKind
from handoffs.services import handoff_open
from insights.models import Transcription
from leads.services import lead_receive
from notify.models import AlertKind, AlertSubscription, Channel, Message, MessageKind
from scoring.services import score_save
from tests.accounts.factories import (
    AccountFactory,
    OrganizationFactory,
    TeamFactory,
    issue_credential,
    issue_scored_data_key,
)
from tests.leads.factories import VendorRegistrationFactory, adf, rule_with
from tests.scoring.factories import answered_call, in_role
from tests.texting.factories import text_in_thread, texting_on
from tests.users.factories import agent
from texting.models import Direction, OptOut
from webhooks.emission import webhook_event_emit
from webhooks.endpoints import webhook_endpoint_create

pytestmark = pytest.mark.django_db

SCORED = {"cat1": True, "call_end": "Appointment set", "appointment_date": "2026-12-01"}


def organization_of_everything(n: int) -> None:
    """One organization as support meets it: two accounts with teams, agents on a
    schedule, a manager and a scorer, a narrowed credential with a rotated key,
    scored-data keys, a vendor and a rule, a lead, calls with both legs, a score and a
    transcription, texts and an opt-out, alerts, a handoff, and a webhook endpoint with a
    delivery."""
    organization = OrganizationFactory()
    accounts = [AccountFactory(organization=organization) for _ in range(2)]
    credential, _ = issue_credential(organization, accounts=accounts[:1])
    api_key_rotate(credential=credential)
    endpoint, _ = webhook_endpoint_create(
        organization=organization,
        url=f"https://127.0.0.1:9/hook/{n}",
        accounts=accounts,
    )
    for a, account in enumerate(accounts):
        teams = [
            TeamFactory(account=account, name=name) for name in ("Sales", "Service")
        ]
        issue_scored_data_key(account)
        DialingSettings.objects.create(account=account)
        texting_on(account, sender=f"+1720555{n:02d}{a:02d}")
        agents = [
            agent(account, phone=f"+1303555{n:02d}{a}{i}", teams=teams)
            for i in range(2)
        ]
        manager = in_role("Manager", accounts=[account])
        scorer = in_role("Scorer", accounts=[account])
        registration = VendorRegistrationFactory(account=account)
        rule_with(
            account,
            ("prospect/requesttype", "equals", "sales"),
            ("vendor/vendorname", "contains", "Vendor"),
            team=teams[0],
        )
        lead_receive(
            credential=credential,
            raw_xml=adf(prospect_id=f"P-{n}-{a}", vendor_id=registration.vendor_id),
        )
        for person in agents:
            call = answered_call(person, account=account, team=teams[0])
            score_save(call=call, scorer=scorer, values=SCORED)
            Transcription.objects.create(call=call)
            for direction in (Direction.OUT, Direction.IN):
                text_in_thread(
                    account,
                    call.phone,
                    at=call.received_at,
                    body="Still interested?",
                    direction=direction,
                    call=call,
                    sent_by=manager if direction == Direction.OUT else None,
                )
            Message.objects.create(
                key=f"alert:{call.pk}",
                kind=MessageKind.ALERT,
                channel=Channel.EMAIL,
                account=account,
                call=call,
                user=manager,
                alert=AlertKind.NOT_REACHED,
                to=manager.email,
                subject="Not reached",
                text="The lead was not reached.",
                due_at=timezone.now(),
            )
            webhook_event_emit(
                type="call_completed",
                organization_id=organization.pk,
                account=account,
                objects={"call": {"id": call.pk}},
            )
        OptOut.objects.create(
            account=account,
            phone=f"+1720555{n:02d}9{a}",
            opted_out_at=timezone.now() - timedelta(days=1),
            message="STOP",
        )
        AlertSubscription.objects.create(
            user=manager, account=account, kind=AlertKind.NOT_REACHED
        )
        handoff_open(
            account_id=account.pk,
            phone=call.phone,
            kind=HandoffKind.REPLY,
            opened_by="text 1",
            call=call,
        )
    assert endpoint.deliveries.exists()


def admin_url(model: str, view: str, *args: Any) -> str:
    app = {
        "group": "auth",
        "apikey": "accounts",
        "scoreddatakey": "accounts",
        "apicredential": "accounts",
        "organization": "accounts",
        "team": "accounts",
        "account": "accounts",
        "user": "users",
        "vendorregistration": "leads",
        "parsingrule": "leads",
        "lead": "leads",
        "dialingsettings": "calls",
        "call": "calls",
        "scorecard": "scoring",
        "score": "scoring",
        "webhookendpoint": "webhooks",
        "webhookdelivery": "webhooks",
        "transcription": "insights",
        "textingsettings": "texting",
        "text": "texting",
        "optout": "texting",
        "alertsubscription": "notify",
        "message": "notify",
        "handoff": "handoffs",
    }[model]
    return reverse(f"admin:{app}_{model}_{view}", args=args)


def latest(model: str) -> Model:
    """The model's newest row (a group: the Manager template)."""
    from django.apps import apps

    if model == "group":
        return Group.objects.get(name="Manager")
    app = admin_url(model, "changelist").split("/")[2]
    return apps.get_model(app, model).objects.order_by("-pk")[0]


@dataclass(frozen=True)
class AdminPage:
    id: str
    path: Callable[[], str]
    queries: int


def changelist(model: str, queries: int) -> AdminPage:
    return AdminPage(f"{model} list", lambda: admin_url(model, "changelist"), queries)


def change_form(model: str, queries: int) -> AdminPage:
    return AdminPage(
        f"{model} form", lambda: admin_url(model, "change", latest(model).pk), queries
    )


def tool(model: str, view: str, queries: int) -> AdminPage:
    return AdminPage(
        f"{model} {view}", lambda: admin_url(model, view, latest(model).pk), queries
    )


# The apps' own modules pin the other changelists (accounts, users, leads, calls).
PAGES = [
    changelist("group", 5),
    changelist("scorecard", 7),
    changelist("score", 8),
    changelist("webhookendpoint", 6),
    changelist("webhookdelivery", 8),
    changelist("transcription", 6),
    changelist("textingsettings", 6),
    changelist("text", 8),
    changelist("optout", 7),
    changelist("alertsubscription", 6),
    changelist("message", 8),
    changelist("handoff", 6),
    change_form("group", 6),
    change_form("organization", 6),
    change_form("account", 22),  # with the handoff limit
    change_form("team", 5),
    change_form("apicredential", 8),
    change_form("apikey", 5),
    change_form("scoreddatakey", 5),
    change_form("user", 23),
    change_form("vendorregistration", 6),
    change_form("parsingrule", 7),
    change_form("lead", 4),
    change_form("dialingsettings", 5),
    change_form("call", 11),  # its appointments inline: one query
    change_form("scorecard", 8),
    change_form("score", 5),
    change_form("webhookendpoint", 7),
    change_form("webhookdelivery", 6),
    change_form("transcription", 5),
    change_form("textingsettings", 5),
    change_form("text", 6),
    change_form("optout", 5),
    change_form("alertsubscription", 8),
    change_form("message", 8),
    tool("apicredential", "issue_key", 5),  # whether a working key exists
    tool("apicredential", "revoke_keys", 4),
    tool("account", "issue_key", 4),  # whether a working key exists
    tool("account", "revoke_keys", 3),
    tool("webhookendpoint", "send_test", 3),
    tool("webhookendpoint", "replay", 3),
    tool("webhookendpoint", "rotate", 3),
    AdminPage("rule tester", lambda: reverse("admin:leads_parsingrule_tester"), 4),
    AdminPage("accounts app", lambda: reverse("admin:app_list", args=["accounts"]), 2),
    AdminPage("password form", lambda: reverse("admin:password_change"), 2),
]


# Two organizations of everything, then six: the same count for both.
SIZES = [2, 6]


@pytest.mark.parametrize("organizations", SIZES)
@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.id)
def test_the_admin_page_costs_the_same_exact_queries_however_much_data(
    admin_client,
    settings,
    django_assert_num_queries,
    django_capture_on_commit_callbacks,
    page,
    organizations,
):
    settings.WEBHOOK_ALLOWED_ADDRESSES = ["127.0.0.1"]
    with django_capture_on_commit_callbacks():  # nothing is handed to the broker
        for n in range(organizations):
            organization_of_everything(n)
    path = page.path()
    # Django keeps content types in a per-process cache, warm or not depending on the
    # tests this process ran before: each page is pinned with it cold.
    ContentType.objects.clear_cache()
    with django_assert_num_queries(page.queries):
        response = admin_client.get(path)
    assert response.status_code == 200
