"""core/compiled.py's writes: a compiled INSERT runs the statement ``create`` runs, writes
the same row and builds the same instance; a compiled UPDATE runs the ORM's own
statement with the values given, and both take the ORM's path where they cannot."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest.mock import patch

import pytest
from django.db import connection, transaction
from django.db.models import F, Model, QuerySet, Value
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from calls.models import Call, CallOrigin, CallStatus
from core.compiled import CompiledInsert, CompiledUpdate
from leads.models import Lead, Outcome
from tests.accounts.factories import (
    AccountFactory,
    TeamFactory,
    issue_credential,
)
from tests.leads.factories import catch_all_rule

pytestmark = pytest.mark.django_db

MOMENT = datetime(2026, 11, 26, 17, 30, 12, 345678, tzinfo=UTC)
LEADS = CompiledInsert(Lead)
CALLS = CompiledInsert(Call)
OUTCOME_FIELDS = [
    "parsed",
    "vendor_id",
    "account",
    "matched_rule",
    "dedupe_key",
    "duplicate_of",
    "call",
    "outcome",
    "reason",
    "response_status",
    "response_body",
    "processed_at",
    "processing_ms",
    "is_test",
]
OUTCOME = CompiledUpdate(
    lambda lead_id: Lead.objects.filter(pk=lead_id, dedupe_key__isnull=True),
    OUTCOME_FIELDS,
    "lead_id",
)


@pytest.fixture(autouse=True)
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto_now_add`` stamps the same moment on both rows compared."""
    monkeypatch.setattr(timezone, "now", lambda: MOMENT)


@pytest.fixture
def world() -> dict[str, Any]:
    account = AccountFactory()
    credential, _ = issue_credential(account.organization)
    return {
        "account": account,
        "credential": credential,
        "team": TeamFactory(account=account, name="Sales"),
        "rule": catch_all_rule(account),
    }


def _columns(model: type[Model], pk: int) -> dict[str, Any]:
    row = model._default_manager.filter(pk=pk).values().get()  # type: ignore[attr-defined]
    del row["id"]
    return dict(row)


def _instance(obj: Model) -> dict[str, Any]:
    """What the instance holds: every attribute but its id, the related objects it
    caches, and its state."""
    held = {k: v for k, v in obj.__dict__.items() if k not in ("_state", "id")}
    return {
        **held,
        "cached": sorted(obj._state.fields_cache),
        "adding": obj._state.adding,
        "db": obj._state.db,
        "has_id": obj.pk is not None,
    }


@contextmanager
def _orm_refused() -> Iterator[None]:
    """Inside: the ORM's own save and update fail, so what runs is the compiled path."""

    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the ORM's own path ran")

    with (
        patch.object(Model, "save", refused),
        patch.object(QuerySet, "update", refused),
    ):
        yield


def _both(
    model: type[Model], create: Callable[..., Model], values: dict[str, Any]
) -> tuple[Any, Any]:
    """(statements, row, instance) of the compiled create and of the ORM's, each in a
    savepoint rolled back, so the two rows never meet a unique constraint."""
    results = []
    for run, path in (
        (create, _orm_refused),
        (model._default_manager.create, nullcontext),  # type: ignore[attr-defined]
    ):
        with transaction.atomic():
            with CaptureQueriesContext(connection) as queries, path():
                obj = run(**values)
            assert obj.pk is not None
            results.append(
                (
                    [q["sql"] for q in queries.captured_queries],
                    _columns(model, obj.pk),
                    _instance(obj),
                )
            )
            transaction.set_rollback(True)
    return results[0], results[1]


def _lead_shapes(world: dict[str, Any]) -> list[dict[str, Any]]:
    account, credential = world["account"], world["credential"]
    first = Lead.objects.create(
        organization_id=account.organization_id, credential=credential, raw_xml="<a/>"
    )
    return [
        # As intake stores a lead first: the document only.
        {
            "organization_id": account.organization_id,
            "credential": credential,
            "raw_xml": '<?xml version="1.0"?><adf><prospect/></adf>',
        },
        # No credential (the sweep's and the admin's leads), text PostgreSQL must escape.
        {
            "organization": account.organization,
            "credential": None,
            "raw_xml": 'O\'Brien \\ \ufffd \u00e9\u00e8 "quoted" %s %(x)s\n\t',
        },
        # A document's other prospect.
        {
            "organization_id": account.organization_id,
            "credential_id": credential.pk,
            "raw_xml": "<adf/>",
            "prospect_index": 3,
            "document": first,
        },
        # Every column set: JSON with nesting, nulls and unicode, moments, a float.
        {
            "organization_id": account.organization_id,
            "credential": credential,
            "raw_xml": "<adf/>",
            "outcome": Outcome.ACCEPTED,
            "reason": "Lead received successfully.",
            "parsed": {
                "customer": {"phones": [{"number": "303-555-0123", "type": None}]},
                "vendor": {"id": "V-1", "name": "Caf\u00e9 \u2603"},
                "empty": [],
                "n": 1.5,
                "flag": False,
            },
            "account": account,
            "matched_rule": world["rule"],
            "vendor_id": "V-1",
            "vendor_name": "Front Range",
            "prospect_id": "P-1",
            "prospect_source": "CRM",
            "whisper": "Sales lead.",
            "call_notes": "Request type: sales\nVendor: Front Range",
            "is_test": True,
            "dedupe_key": "ab" * 32,
            "duplicate_of": first,
            "response_status": 200,
            "response_body": {"result": "Success", "leadId": 7, "duplicate": True},
            "processed_at": MOMENT + timedelta(milliseconds=5),
            "processing_ms": 4.25,
        },
        # JSON that is not an object, and an empty one.
        {
            "organization_id": account.organization_id,
            "raw_xml": "",
            "parsed": ["a", None, 2],
            "response_body": {},
        },
    ]


def test_a_compiled_lead_insert_runs_creates_statement_and_writes_its_row(world):
    for values in _lead_shapes(world):
        compiled, orm = _both(Lead, LEADS.create, values)

        assert compiled == orm
        assert len(compiled[0]) == 1


def test_a_compiled_call_insert_writes_the_row_create_writes(world):
    account = world["account"]
    shapes = [
        {"account": account, "phone": "+13035550123", "received_at": MOMENT},
        {
            "account": account,
            "phone": "+13035550147",
            "received_at": MOMENT - timedelta(seconds=3),
            "origin": CallOrigin.LEAD,
            "team": world["team"],
            "requested_agent": None,
            "vendor_agent_id": "",
            "agent_number": "",
            "is_test": account.is_test,
            "setup_dispatched_at": MOMENT,
            "altid": "P-1",
            "source": "Web Form",
            "first_name": "Mar\u00eda",
            "last_name": "L\u00f3pez",
            "email": "maria@example.com",
            "call_notes": "Request type: sales",
            "whisper": "Sales lead.",
            "lead_type": "New",
            "called_on_make": "Toyota",
        },
    ]
    for values in shapes:
        compiled, orm = _both(Call, CALLS.create, values)

        assert compiled == orm
        assert compiled[1]["status"] == CallStatus.QUEUED  # the model's defaults


def test_a_compiled_insert_sends_save_signals_and_writes_what_pre_save_changed(world):
    heard: list[tuple[str, bool, bool]] = []

    def before(sender, instance, **kwargs):
        instance.reason = "set by a receiver"

    def after(sender, instance, created, **kwargs):
        heard.append((instance.reason, created, instance.pk is not None))

    values = _lead_shapes(world)[0]
    pre_save.connect(before, sender=Lead, dispatch_uid="test-before")
    post_save.connect(after, sender=Lead, dispatch_uid="test-after")
    try:
        compiled, orm = _both(Lead, LEADS.create, values)
    finally:
        pre_save.disconnect(sender=Lead, dispatch_uid="test-before")
        post_save.disconnect(sender=Lead, dispatch_uid="test-after")

    assert compiled == orm
    assert compiled[1]["reason"] == "set by a receiver"
    assert heard == [("set by a receiver", True, True)] * 2


def test_a_compiled_insert_takes_the_orms_path_for_an_id_or_an_expression(world):
    organization_id = world["account"].organization_id
    taken = Lead.objects.create(organization_id=organization_id, raw_xml="x").pk

    given = LEADS.create(organization_id=organization_id, raw_xml="y", id=taken + 100)
    expression = LEADS.create(organization_id=organization_id, raw_xml=Value("z"))

    assert given.pk == taken + 100
    assert _columns(Lead, given.pk)["raw_xml"] == "y"
    assert _columns(Lead, expression.pk)["raw_xml"] == "z"


def test_a_compiled_insert_refuses_an_unsaved_related_object_as_create_does(world):
    unsaved = Lead(organization_id=world["account"].organization_id, raw_xml="x")

    with pytest.raises(ValueError, match="unsaved related object") as compiled:
        LEADS.create(
            organization_id=unsaved.organization_id, raw_xml="y", document=unsaved
        )
    with pytest.raises(ValueError, match="unsaved related object") as orm:
        Lead.objects.create(
            organization_id=unsaved.organization_id, raw_xml="y", document=unsaved
        )

    assert str(compiled.value) == str(orm.value)
    assert not Lead.objects.filter(raw_xml="y").exists()


def _outcome(world: dict[str, Any], lead: Lead) -> dict[str, Any]:
    return {
        "parsed": {"customer": {"first_name": "Mar\u00eda", "phones": []}},
        "vendor_id": "V-1",
        "account": world["account"],
        "matched_rule": world["rule"],
        "dedupe_key": f"key-{lead.pk}",
        "duplicate_of": None,
        "call": None,
        "outcome": Outcome.ACCEPTED,
        "reason": "Lead received successfully.",
        "response_status": 200,
        "response_body": {"result": "Success", "leadId": lead.pk},
        "processed_at": MOMENT,
        "processing_ms": 3.5,
        "is_test": False,
    }


def test_a_compiled_update_runs_the_orms_statement_and_writes_the_same_row(world):
    organization_id = world["account"].organization_id
    leads = [
        Lead.objects.create(organization_id=organization_id, raw_xml=f"<{n}/>")
        for n in range(2)
    ]
    call = Call.objects.create(
        account=world["account"], phone="+13035550123", received_at=MOMENT
    )
    shapes = [
        _outcome(world, leads[0]),
        # Related objects and SQL NULL where the first had values, JSON null inside.
        {
            **_outcome(world, leads[0]),
            "account": None,
            "matched_rule": None,
            "duplicate_of": leads[1],
            "call": call,
            "parsed": None,
            "response_body": {"reason": None},
            "processing_ms": None,
        },
    ]
    for values in shapes:
        results = []
        for run, path in (
            (lambda v=values: OUTCOME.update(v, lead_id=leads[0].pk), _orm_refused),
            (
                lambda v=values: Lead.objects.filter(
                    pk=leads[0].pk, dedupe_key__isnull=True
                ).update(**v),
                nullcontext,
            ),
        ):
            with transaction.atomic():
                with CaptureQueriesContext(connection) as queries, path():
                    count = run()
                results.append(
                    (
                        [q["sql"] for q in queries.captured_queries],
                        count,
                        _columns(Lead, leads[0].pk),
                    )
                )
                transaction.set_rollback(True)

        assert results[0] == results[1]
        assert results[0][1] == 1


def test_a_compiled_update_of_a_row_its_filter_leaves_out_updates_nothing(world):
    lead = Lead.objects.create(
        organization_id=world["account"].organization_id, raw_xml="x"
    )
    values = _outcome(world, lead)
    assert OUTCOME.update(values, lead_id=lead.pk) == 1

    assert OUTCOME.update({**values, "reason": "again"}, lead_id=lead.pk) == 0
    assert OUTCOME.update(values, lead_id=lead.pk + 1000) == 0
    assert Lead.objects.get(pk=lead.pk).reason == "Lead received successfully."


def test_a_compiled_update_takes_the_orms_path_for_an_expression(world):
    lead = Lead.objects.create(
        organization_id=world["account"].organization_id, raw_xml="x"
    )
    values = {**_outcome(world, lead), "vendor_id": F("raw_xml")}

    assert OUTCOME.update(values, lead_id=lead.pk) == 1
    assert Lead.objects.get(pk=lead.pk).vendor_id == "x"


def test_a_compiled_update_wants_every_field_it_was_built_for(world):
    with pytest.raises(ValueError, match="values must name exactly"):
        OUTCOME.update({"reason": "x"}, lead_id=1)


def test_a_compiled_update_whose_id_is_not_a_parameter_is_refused():
    update = CompiledUpdate(
        lambda lead_id: Lead.objects.filter(dedupe_key__isnull=True),
        ["reason"],
        "lead_id",
    )

    with pytest.raises(ValueError, match="not every id"):
        update.update({"reason": "x"}, lead_id=1)
