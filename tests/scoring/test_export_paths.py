"""The range export written by PostgreSQL (scoring/exports.py) is byte for byte the
export built row by row in Python (scoring/records.py, the path of every other database),
in JSON and XML, over calls that exercise every quirk of part 2.3."""

import json
import re
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from calls.models import CallStatus
from scoring import exports
from scoring.models import Score, ScorecardCategory
from scoring.services import coaching_save, score_save
from tests.accounts.factories import AccountFactory, issue_scored_data_key
from tests.scoring.factories import CALL_TEXTS, CallFactory, in_role
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

DENVER = ZoneInfo("America/Denver")
URL = "/api/scoreddata"
# Markup, quotes, whitespace XML keeps, characters it cannot carry, beyond ASCII, and
# what a template or a query parameter would take for its own ({0}, {}, %s).
HOSTILE = (
    "<b>&amp;\"'</b>]]>\x01\x08\x0b\x1f\ufffe\uffff \t\r\n\\ é 😀 \u2028 {0}{}}%s%%"
)
CONTROL_ONLY = "\x01\x1f\ufffe"


def at(day: str, clock: str) -> datetime:
    return datetime.combine(
        date.fromisoformat(day), time.fromisoformat(clock), tzinfo=DENVER
    )


@pytest.fixture
def account():
    return AccountFactory(
        name="Demo & <Motors> \"North\" 'é' {0} {dealer} %s",
        timezone="America/Denver",
        postal_code="",
        address="1 Main St\n& Co",
        city=CONTROL_ONLY,
    )


@pytest.fixture
def key(account):
    return issue_scored_data_key(account)


@pytest.fixture
def calls(account):
    """Calls of every kind, received across a daylight-saving change."""
    scorer = in_role("Scorer", accounts=[account], first_name="<Robin>", last_name="&")
    coach = in_role("Manager", accounts=[account], first_name="Dana", last_name="Cole")
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=2).update(
        name='Said "hi"\tand\r\nwaved & <smiled> 100%s {0}'
    )
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=9).update(
        name=""
    )
    user_agent = UserFactory(account=account, first_name="\u2003Alex\t", last_name="")
    made = []

    def call(clock, **kwargs):
        made.append(CallFactory(account=account, received_at=clock, **kwargs))
        return made[-1]

    # Every text member hostile, scored with every member set, then coached.
    hostile = call(
        at("2026-11-01", "00:30:00"),
        **dict.fromkeys(CALL_TEXTS, HOSTILE),
        agent=user_agent,
    )
    score_save(
        call=hostile,
        scorer=scorer,
        values={
            **{f"cat{slot}": slot in (3, 6, 10) for slot in range(1, 11)},
            "wow": True,
            "first_name": "Sam",
            "alt_phone": "303-555-0199",
            "email": "sam@example.org",
            "department": "Sales",
            "notes": HOSTILE,
            "appointment_date": "2026-11-24",
            "appointment_time": "15:30",
            "call_end": "Appointment set",
            "alert": "Hot lead",
            "current_make": "Honda",
            "current_model": "Civic",
            "current_year": "2015",
            "current_registration": "ABC-123",
            "current_summary": "Dent.",
            "called_on_make": "Toyota",
            "called_on_model": "RAV4",
            "called_on_year": "2025",
            "called_on_registration": "",
            "called_on_summary": "Blue.",
            "lead_type": "New",
        },
    )
    # What the form refuses, the database still holds (an import, an older release).
    Score.objects.filter(call=hostile).update(
        first_name=HOSTILE[:45],
        last_name=CONTROL_ONLY,
        current_registration=HOSTILE,
        current_summary=HOSTILE,
        called_on_summary=CONTROL_ONLY + "Blue.",
        scorer_name="<Robin> &",
    )
    coaching_save(call=hostile, coach=coach, notes=HOSTILE)
    # Not scored: nulls, empty texts, no agent, a control character only.
    call(
        at("2026-11-01", "23:30:00"),
        status=CallStatus.NOANSWER,
        altid="",
        email="",
        call_notes=CONTROL_ONLY,
        duration=None,
        response_time=None,
        recording_url="",
    )
    # Agents who are not users: the vendor's id, else the number rung.
    call(
        at("2026-11-02", "08:00:00"),
        agent_number="+13035550111",
        vendor_agent_id="V-7 <x>",
    )
    call(at("2026-11-02", "08:00:00"), agent_number="+13035550112")
    # Scored with no appointment; then the scorecard changes (the score keeps its names).
    renamed = call(at("2026-11-02", "09:00:00"), update_notes="Called back.")
    score_save(call=renamed, scorer=scorer, values={"cat1": True})
    # Scored under names that are gone: a score without names takes the current ones.
    nameless = call(at("2026-11-02", "10:00:00"))
    score_save(call=nameless, scorer=scorer, values={"cat2": True, "wow": False})
    Score.objects.filter(call=nameless).update(category_names=[])
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=1).update(
        name="Said hello <again> & \"then\" 'some' %"
    )
    # Received in spring, across the other daylight-saving change, and at midnight.
    call(at("2026-03-08", "01:59:59"))
    call(at("2026-03-08", "03:00:00"), first_name="Zoë", last_name="Ñúñez 漢字")
    call(at("2026-11-03", "00:00:00"))
    # Another account's call in the same days: never in this account's export.
    CallFactory(
        account=AccountFactory(organization=account.organization),
        received_at=at("2026-11-01", "12:00:00"),
    )
    return made


def export(client, key, return_type, *, python_only, monkeypatch):
    with monkeypatch.context() as patch:
        if python_only:
            patch.setattr(exports, "sql_path_available", lambda calls: False)
        response = client.get(
            URL,
            {
                "apikey": key,
                "fromDate": "2026-01-01",
                "toDate": "2026-12-31",
                "returnType": return_type,
            },
        )
        assert response.status_code == 200
        return b"".join(response.streaming_content)


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_postgresql_writes_the_same_bytes_as_python(
    client, key, calls, return_type, monkeypatch
):
    assert connection.vendor == "postgresql"
    written = export(
        client, key, return_type, python_only=False, monkeypatch=monkeypatch
    )
    built = export(client, key, return_type, python_only=True, monkeypatch=monkeypatch)
    assert written == built
    for call in calls:
        assert f"{call.pk}".encode() in written


def test_the_python_path_answers_every_call_of_the_account_in_order(
    client, key, calls, monkeypatch
):
    body = export(client, key, "json", python_only=True, monkeypatch=monkeypatch)
    records = json.loads(body)
    expected = sorted(calls, key=lambda call: (call.received_at, call.pk))
    assert [record["id"] for record in records] == [str(call.pk) for call in expected]
    assert records[0]["date"] == "2026-03-08"
    assert records[0]["time"] == "01:59:59"
    assert records[1]["time"] == "03:00:00"


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_an_account_without_members_or_category_names_is_the_same_on_both_paths(
    client, return_type, monkeypatch
):
    account = AccountFactory(
        name="North",
        timezone="Pacific/Auckland",
        postal_code="",
        address="",
        city="",
        scorecard=False,
    )
    key = issue_scored_data_key(account)
    # Received at noon UTC on June 30th: July 1st in Auckland.
    empty = CallFactory(
        account=account,
        received_at=datetime(2026, 6, 30, 12, 30, tzinfo=ZoneInfo("UTC")),
        altid="",
        first_name="",
        last_name="",
        email="",
        summary="",
        recording_url="",
    )
    CallFactory(account=account, received_at=at("2026-07-02", "09:00:00"))
    written = export(
        client, key, return_type, python_only=False, monkeypatch=monkeypatch
    )
    built = export(client, key, return_type, python_only=True, monkeypatch=monkeypatch)
    assert written == built
    if return_type == "xml":
        assert f"<calldrip><id>{empty.pk}</id><altid/>".encode() in written
        assert b'<name id="first"></name><name id="last"></name>' in written
        assert b"<date>2026-07-01</date><time>00:30:00</time>" in written
        assert b'<cat1 name=""></cat1>' in written
        assert b"<postalCode/><address/><city/>" in written
    else:
        first = json.loads(written)[0]
        assert (first["id"], first["altid"], first["date"]) == (
            str(empty.pk),
            None,
            "2026-07-01",
        )
        assert first["cat1Name"] is None
        assert first["cat1"] is None
        assert first["accountCity"] == ""


# U+FFFE and U+FFFF (dropped from XML) among characters whose UTF-8 starts as theirs does
# (EF BF ..., kept): the XML path drops them from the texts' bytes.
NEAR_NONCHARACTERS = "\ufffd\ufffe\uffef\uffff\uffbf\ufffe"


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_only_the_noncharacters_are_dropped_on_both_paths(
    client, key, account, return_type, monkeypatch
):
    CallFactory(
        account=account,
        received_at=at("2026-05-05", "12:00:00"),
        summary=NEAR_NONCHARACTERS,
        call_notes="\x01" + NEAR_NONCHARACTERS + "\x1f&",
    )
    written = export(
        client, key, return_type, python_only=False, monkeypatch=monkeypatch
    )
    built = export(client, key, return_type, python_only=True, monkeypatch=monkeypatch)
    assert written == built
    if return_type == "xml":
        kept = "\ufffd\uffef\uffbf"
        assert f"<callSummary>{kept}</callSummary>".encode() in written
        assert f"<callNotes>{kept}&amp;</callNotes>".encode() in written
    else:
        assert json.loads(written)[0]["callSummary"] == NEAR_NONCHARACTERS


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_an_empty_range_is_the_same_on_both_paths(
    client, key, account, return_type, monkeypatch
):
    CallFactory(account=account, received_at=at("2025-06-01", "12:00:00"))
    written = export(
        client, key, return_type, python_only=False, monkeypatch=monkeypatch
    )
    built = export(client, key, return_type, python_only=True, monkeypatch=monkeypatch)
    assert written == built
    assert written in (b"[]", b'<?xml version="1.0" encoding="UTF-8"?>\n<calldrips/>')


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_the_export_is_one_copy_however_many_calls(client, key, account, return_type):
    scorer = in_role("Scorer", accounts=[account])

    def queries(calls):
        for n in range(calls):
            call = CallFactory(
                account=account,
                received_at=at("2026-10-10", "10:00:00") + timedelta(minutes=n),
            )
            if n % 2:
                score_save(call=call, scorer=scorer, values={"cat1": True})
        with CaptureQueriesContext(connection) as captured:
            response = client.get(
                URL,
                {
                    "apikey": key,
                    "fromDate": "2026-10-10",
                    "toDate": "2026-10-10",
                    "returnType": return_type,
                },
            )
            b"".join(response.streaming_content)
        return [query["sql"] for query in captured]

    client.get(URL, {"apikey": key, "callId": "1"})  # the key's first use is written
    few, many = queries(2), queries(40)
    assert len(few) == len(many)
    copies = [sql for sql in many if sql.startswith("COPY (")]
    assert len(copies) == 1
    assert f'"calls_call"."account_id" = {account.pk} ' in copies[0]


def test_the_export_streams_the_accounts_calls_in_index_order(client, key, calls):
    """The COPY's plan reads the account's calls in order from an index and sorts
    nothing, so its first row leaves at once (a sort would build every row first)."""
    with CaptureQueriesContext(connection) as captured:
        response = client.get(
            URL,
            {"apikey": key, "fromDate": "2026-01-01", "toDate": "2026-12-31"},
        )
        b"".join(response.streaming_content)
    (copy,) = [query["sql"] for query in captured if query["sql"].startswith("COPY (")]
    select = copy.removeprefix("COPY (").removesuffix(") TO STDOUT (FORMAT BINARY)")

    with connection.cursor() as cursor:
        # Index scans made dear: a few calls are planned as 100,000 are (sorted).
        cursor.execute("SET LOCAL random_page_cost = 1000")
        cursor.execute(exports.STREAMING_PLAN)
        cursor.execute(f"EXPLAIN {select}")
        plan = "\n".join(row[0] for row in cursor.fetchall())

    # In order from an index (call_account_received; call_received_newest, filtered, on
    # some statistics), never sorted.
    assert re.search(r"Index Scan (Backward )?using \w+ on calls_call", plan), plan
    assert "Sort" not in plan
