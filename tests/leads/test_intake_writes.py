"""Intake's compiled writes (the lead's INSERT and its outcome's UPDATE, core/compiled.py)
through ``POST /api/nl``: each kind of lead is answered, and leaves the leads and calls,
exactly as the ORM's own writes answer and leave them."""

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from calls.models import Call
from leads import services
from leads.models import Lead, Outcome, RuleAction
from tests.leads.factories import (
    VendorRegistrationFactory,
    adf,
    adf_many,
    catch_all_rule,
)

pytestmark = pytest.mark.django_db

MOMENT = datetime(2026, 11, 26, 17, 30, 12, 345678, tzinfo=UTC)
VENDOR_ID = "DLR-42"


@pytest.fixture
def intake(tenant, monkeypatch):
    """The tenant's account takes the vendor's leads, routed to Sales; every moment and
    every lead's processing time is the same in both runs compared."""
    VendorRegistrationFactory(
        account=tenant.account, vendor_id=VENDOR_ID, vendor_name="Front Range"
    )
    tenant.rule = catch_all_rule(tenant.account, team=tenant.teams[0])
    monkeypatch.setattr(timezone, "now", lambda: MOMENT)
    monkeypatch.setattr(services, "time", SimpleNamespace(perf_counter=lambda: 1.0))
    return tenant


def _lead(prospect_id: str = "P-1", **overrides: Any) -> str:
    return adf(prospect_id=prospect_id, vendor_id=VENDOR_ID, **overrides)


# Where a lead's id stands: in a lead's row, in an answer and in a stored answer.
LEAD_ID_KEYS = ("id", "document_id", "duplicate_of_id", "leadId", "leadIds")


def _renumbered(
    ids: list[int], value: Any, keys: tuple[str, ...] = LEAD_ID_KEYS
) -> Any:
    """``value`` with each id under one of ``keys`` (in objects at any depth) replaced
    by its place in ``ids``: the two runs' rows have their own ids, and any other
    number (an organization's id that equals a lead's in one run) stays as it is."""
    if isinstance(value, list):
        return [_renumbered(ids, each, keys) for each in value]
    if isinstance(value, dict):
        return {
            key: _placed(ids, each) if key in keys else _renumbered(ids, each, keys)
            for key, each in value.items()
        }
    return value


def _placed(ids: list[int], value: Any) -> Any:
    if isinstance(value, list):
        return [_placed(ids, each) for each in value]
    return f"#{ids.index(value)}" if value in ids else value


def _posted(tenant, documents: list[str], *, compiled: bool) -> Any:
    """The answers to ``documents`` posted in turn, and every lead and call they left,
    in a savepoint rolled back after; ``compiled=False`` takes the ORM's own writes."""
    paths: tuple[Any, ...] = (services._LEAD_INSERT, services._OUTCOME_UPDATE)
    saved = [dict(path._compiled) for path in paths]
    if not compiled:
        for path in paths:
            path._compiled = {"default": None}
    try:
        with transaction.atomic():
            answers = [
                APIClient().post("/api/nl", {"xml": xml, **tenant.headers})
                for xml in documents
            ]
            leads = list(Lead.objects.order_by("id").values())
            calls = list(Call.objects.order_by("id").values())
            transaction.set_rollback(True)
    finally:
        for path, was in zip(paths, saved, strict=True):
            path._compiled = was
    lead_ids = [lead["id"] for lead in leads]
    call_ids = [call["id"] for call in calls]
    for lead in leads:
        lead["call_id"] = _placed(call_ids, lead["call_id"])
    return (
        [(a.status_code, _renumbered(lead_ids, a.json())) for a in answers],
        _renumbered(lead_ids, leads),
        _renumbered(call_ids, calls, ("id",)),
    )


SCENARIOS = {
    "accepted": [_lead()],
    "accepted, then its duplicate": [_lead(), _lead()],
    "no phone": [_lead(phone="")],
    "three prospects": [
        adf_many(_lead("P-1"), _lead("P-2", phone=""), _lead("P-3", request_type="x"))
    ],
    "no vendor": [adf(prospect_id="P-1", vendor_id="nobody", vendor_name="nobody")],
    "malformed": ["<adf><prospect>"],
}


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_intake_answers_and_stores_what_the_orms_own_writes_do(intake, scenario):
    documents = SCENARIOS[scenario]

    compiled = _posted(intake, documents, compiled=True)
    orm = _posted(intake, documents, compiled=False)

    assert compiled == orm
    answers, leads, _ = compiled
    assert answers[0][0] in (200, 400, 422)
    assert all(lead["outcome"] != Outcome.RECEIVED for lead in leads)


def test_a_do_not_process_lead_is_stored_as_the_orms_own_writes_store_it(intake):
    intake.rule.action = RuleAction.DO_NOT_PROCESS
    intake.rule.save()

    compiled = _posted(intake, [_lead()], compiled=True)
    orm = _posted(intake, [_lead()], compiled=False)

    assert compiled == orm
    assert compiled[1][0]["outcome"] == Outcome.DO_NOT_PROCESS


def test_a_leads_writes_are_prepared_once_per_connection_and_then_only_run(
    intake, prepared_statements
):
    """The lead's INSERT, its call's and its outcome's UPDATE are bound and prepared on
    the server (core.db ``prepared_cursor``): planned at their first lead in a
    connection, then only run."""

    def writes() -> dict[str, int]:
        return {
            statement: runs
            for statement, runs in prepared_statements().items()
            if statement.startswith(
                (
                    'INSERT INTO "leads_lead"',
                    'INSERT INTO "calls_call"',
                    'UPDATE "leads_lead"',
                )
            )
        }

    before = writes()
    for n in range(3):
        response = APIClient().post(
            "/api/nl", {"xml": _lead(f"P-{n}"), **intake.headers}
        )
        assert response.status_code == 200, response.content

    after = writes()
    assert {statement.split(" (")[0].split(" SET")[0] for statement in after} == {
        'INSERT INTO "leads_lead"',
        'INSERT INTO "calls_call"',
        'UPDATE "leads_lead"',
    }
    for statement, runs in after.items():
        assert runs == before.get(statement, 0) + 3, statement
    assert Lead.objects.filter(outcome=Outcome.ACCEPTED).count() == 3
