"""core/compiled.py: a query compiled once runs the ORM's own SQL with new ids and reads
the same models back, select_related included."""

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.db.models import Q
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from calls.models import Call, CallAttempt, DialingSettings, Leg
from calls.pipeline.events import LOCKED_CALL_OF_LEG
from core.compiled import CompiledQuery
from tests.accounts.factories import AccountFactory

pytestmark = pytest.mark.django_db

LEGS_OF_CALL = CompiledQuery(
    lambda call_id: CallAttempt.objects.filter(call_id=call_id, leg=Leg.AGENT),
    "call_id",
)


def _call_with_legs(legs: int = 1) -> tuple[Call, list[CallAttempt]]:
    account = AccountFactory()
    DialingSettings.objects.create(account=account, agent_ring_seconds=17)
    call = Call.objects.create(
        account=account, phone="+13035550123", received_at=timezone.now()
    )
    attempts = [
        CallAttempt.objects.create(call=call, leg=Leg.AGENT, number=f"+1303555014{n}")
        for n in range(legs)
    ]
    return call, attempts


def test_a_compiled_get_runs_the_orms_sql_and_reads_the_same_call_and_relations():
    call, (leg,) = _call_with_legs()
    _call_with_legs()  # another call, so the id given is what picks the row

    with transaction.atomic(), CaptureQueriesContext(connection) as context:
        found = LOCKED_CALL_OF_LEG.get(attempt_id=leg.pk)
        ring_seconds = found.account.dialing_settings.agent_ring_seconds
    with transaction.atomic(), CaptureQueriesContext(connection) as orm:
        expected = (
            Call.objects.select_for_update(of=("self",))
            .select_related("account__dialing_settings")
            .get(attempts_log=leg.pk)
        )

    assert [q["sql"] for q in context.captured_queries] == [
        q["sql"] for q in orm.captured_queries
    ]
    assert found == expected == call
    assert found.phone == call.phone
    assert found._state.db == "default"
    assert found.account == call.account
    assert ring_seconds == 17


def test_a_compiled_get_of_nothing_raises_does_not_exist_and_first_gives_none():
    _, (leg,) = _call_with_legs()

    with transaction.atomic(), pytest.raises(Call.DoesNotExist):
        LOCKED_CALL_OF_LEG.get(attempt_id=leg.pk + 1000)
    assert LEGS_OF_CALL.first(call_id=leg.call_id + 1000) is None


def test_a_compiled_get_of_two_rows_raises_multiple_objects_returned():
    call, _ = _call_with_legs(legs=2)

    with pytest.raises(CallAttempt.MultipleObjectsReturned):
        LEGS_OF_CALL.get(call_id=call.pk)


def test_a_compiled_first_keeps_the_models_ordering():
    call, legs = _call_with_legs(legs=3)

    assert LEGS_OF_CALL.first(call_id=call.pk) == legs[0]


def test_a_compiled_locking_read_outside_a_transaction_is_refused(monkeypatch):
    _, (leg,) = _call_with_legs()
    with transaction.atomic():
        LOCKED_CALL_OF_LEG.get(attempt_id=leg.pk)  # compiled
    # The test runs in a transaction: as if it did not.
    monkeypatch.setattr(connection, "get_autocommit", lambda: True)

    with pytest.raises(TransactionManagementError):
        LOCKED_CALL_OF_LEG.get(attempt_id=leg.pk)


def test_a_query_whose_id_is_not_a_parameter_is_refused():
    compiled = CompiledQuery(
        lambda call_id: CallAttempt.objects.filter(leg=Leg.AGENT), "call_id"
    )

    with pytest.raises(ValueError, match="not every id"):
        compiled.first(call_id=1)


def _sql_of(run) -> tuple[list[str], Any]:
    with CaptureQueriesContext(connection) as context:
        found = run()
    return [q["sql"] for q in context.captured_queries], found


@pytest.mark.parametrize("team", [False, True])
def test_a_compiled_exists_with_a_moment_runs_the_orms_own_exists(team):
    from accounts.models import Team
    from calls.routing import _waiting_before, calls_waiting_before

    account = AccountFactory()
    crew = Team.objects.create(account=account, name="Sales") if team else None
    now = timezone.now()
    older = Call.objects.create(
        account=account, phone="+13035550123", received_at=now, team=crew
    )
    newer = Call.objects.create(
        account=account,
        phone="+13035550124",
        received_at=now + timedelta(seconds=1),
        team=crew,
    )
    shape = Q(team_id=crew.pk) if crew else Q(team__isnull=True)

    def orm(call: Call) -> bool:
        return _waiting_before(call.account_id, call.received_at, shape).exists()

    assert _sql_of(lambda: calls_waiting_before(call=newer)) == _sql_of(
        lambda: orm(newer)
    )
    assert calls_waiting_before(call=newer) is False  # the older one waits for nobody
    Call.objects.filter(pk=older.pk).update(waiting_since=now)
    assert _sql_of(lambda: calls_waiting_before(call=newer)) == (
        _sql_of(lambda: orm(newer))[0],
        True,
    )
    assert calls_waiting_before(call=older) is False


@pytest.mark.parametrize("shape", ["account", "team", "agent"])
def test_a_compiled_slice_runs_the_orms_own_slice_and_reads_the_same_agents(shape):
    from accounts.models import Team
    from calls.routing import _free, _free_batch
    from tests.users.factories import agent

    account = AccountFactory()
    crew = Team.objects.create(account=account, name="Sales")
    agents = [agent(account, phone=f"+130355501{n:02d}") for n in range(12)]
    for member in agents[::2]:
        member.teams.add(crew)
    call = Call.objects.create(
        account=account,
        phone="+13035550123",
        received_at=timezone.now(),
        team=crew if shape == "team" else None,
        requested_agent=agents[3] if shape == "agent" else None,
    )

    for start, stop in [(0, 8), (8, 24)]:
        compiled = _sql_of(lambda a=start, b=stop: _free_batch(call, frozenset(), a, b))
        orm = _sql_of(lambda a=start, b=stop: list(_free(call, frozenset())[a:b]))
        assert compiled == orm
        assert [a.phone_number for a in compiled[1]] == [a.phone_number for a in orm[1]]
    assert _free_batch(call, frozenset(), 0, 8)


def test_a_compiled_claim_locks_an_agent_once_free_and_not_while_on_a_leg():
    from calls.routing import _claim_one, agents_claim
    from tests.users.factories import agent

    account = AccountFactory()
    taker = agent(account, phone="+13035550140")
    call, _ = _call_with_legs(legs=0)

    with transaction.atomic():
        assert _claim_one(taker.pk) is True
        assert agents_claim([taker], at=timezone.now()) == [taker]
    CallAttempt.objects.create(
        call=call, leg=Leg.AGENT, agent=taker, number=taker.phone_number
    )
    with transaction.atomic():
        assert _claim_one(taker.pk) is False
        assert agents_claim([taker], at=timezone.now()) == []
