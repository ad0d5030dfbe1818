"""GET /api/scoreddata (interface B) as an integrator calls it: JSON and XML, one call or a range."""

from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from lxml import etree

from calls.models import CallStatus
from scoring.models import ScorecardCategory
from scoring.services import coaching_save, score_save
from tests.accounts.factories import AccountFactory, issue_scored_data_key
from tests.scoring.factories import CALL_TEXTS, CallFactory, in_role
from tests.users.factories import UserFactory

pytestmark = pytest.mark.django_db

DENVER = ZoneInfo("America/Denver")
URL = "/api/scoreddata"
NAMES = [
    "Greeted the customer by name",
    "Introduced self and dealership",
    "Confirmed the vehicle of interest",
    "Asked about a trade-in",
    "Built rapport",
    "Answered the customer's questions",
    "Offered alternatives",
    "Asked for the appointment",
    "Set a date and time",
    "Confirmed contact details",
]


@pytest.fixture
def account():
    return AccountFactory(
        name="Demo Motors North",
        timezone="America/Denver",
        postal_code="80202",
        address="1 Main St",
        city="Denver",
    )


@pytest.fixture
def key(account):
    return issue_scored_data_key(account)


def at(day: str, clock: str) -> datetime:
    return datetime.combine(
        date.fromisoformat(day), time.fromisoformat(clock), tzinfo=DENVER
    )


@pytest.fixture
def scored_call(account):
    agent = UserFactory(account=account, first_name="Alex", last_name="Kim")
    call = CallFactory(
        account=account,
        received_at=at("2026-11-20", "09:15:07"),
        altid="DEMO-1",
        source="Website",
        first_name="Sam",
        last_name="Rivera",
        email="sam@example.com",
        phone="+13035550188",
        call_notes="Sales lead. New 2025 Toyota RAV4.",
        attempts=2,
        duration=184,
        response_time=9,
        recording_url="https://leads.example.test/r/1.wav",
        agent=agent,
        summary="Customer wants a test drive.",
        transcription="Agent (00:00-00:04): Hello Sam\nLead (00:04-00:06): Hi",
        inbound_tracking_number="+13035550100",
    )
    scorer = in_role("Scorer", accounts=[account], first_name="Robin", last_name="Ames")
    score_save(
        call=call,
        scorer=scorer,
        values={
            "cat1": True,
            "cat8": True,
            "wow": True,
            "first_name": "Sam",
            "last_name": "Rivera",
            "alt_phone": "303-555-0199",
            "email": "sam@example.org",
            "department": "Sales",
            "notes": "Keen buyer.",
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
            "called_on_summary": "Blue.",
            "lead_type": "New",
        },
    )
    coach = in_role("Manager", accounts=[account], first_name="Dana", last_name="Cole")
    coaching_save(call=call, coach=coach, notes="Ask sooner.")
    return call


@pytest.fixture
def unscored_call(account):
    return CallFactory(
        account=account,
        received_at=at("2026-11-21", "18:00:00"),
        status=CallStatus.NOANSWER,
        altid="",
        source="Click to Call",
        first_name="Pat",
        last_name="Lee",
        email="",
        phone="+13035550177",
        call_notes="",
        attempts=3,
        duration=None,
        response_time=None,
        recording_url="",
        summary="",
        transcription="",
    )


def expected_scored(call):
    return {
        "id": str(call.pk),
        "altid": "DEMO-1",
        "dealerName": "Demo Motors North",
        "source": "Website",
        "status": "ANSWER",
        "date": "2026-11-20",
        "time": "09:15:07",
        "firstName": "Sam",
        "lastName": "Rivera",
        "email": "sam@example.com",
        "phone": "+13035550188",
        "callNotes": "Sales lead. New 2025 Toyota RAV4.",
        "callAttempts": "2",
        "callDuration": "184",
        "callRecording": "https://leads.example.test/r/1.wav",
        "agent": "Alex Kim",
        "responseTime": "9",
        "scoredFname": "Sam",
        "scoredlname": "Rivera",
        "callSummary": "Customer wants a test drive.",
        "altPhone": "303-555-0199",
        "scoredEmail": "sam@example.org",
        "scoredAgent": "Robin Ames",
        "department": "Sales",
        "scoredNotes": "Keen buyer.",
        "appointmentDate": "2026-11-24",
        "appointmentTime": "15:30",
        "callEnd": "Appointment set",
        "alert": "Hot lead",
        "currentMake": "Honda",
        "currentModel": "Civic",
        "currentYear": "2015",
        "currentRegistrationNumber": "ABC-123",
        "currentSummary": "Dent.",
        "calledOnMake": "Toyota",
        "calledOnModel": "RAV4",
        "calledOnYear": "2025",
        "calledOnRegistrationNumber": "",
        "calledOnSummary": "Blue.",
        "transcibedBy": "Robin Ames",
        "leadtype": "New",
        **{f"cat{n}Name": NAMES[n - 1] for n in range(1, 11)},
        **{f"cat{n}": "1" if n in (1, 8) else "0" for n in range(1, 11)},
        "wow": "1",
        "coachNotes": "Ask sooner.",
        "coachedBy": "Dana Cole",
        "inboundCallTrackingNumber": "+13035550100",
        "accountPostalCode": "80202",
        "accountAddress": "1 Main St",
        "accountCity": "Denver",
        "updateNotes": "Sales lead. New 2025 Toyota RAV4.\nKeen buyer.\nAsk sooner.",
        "callTranscription": "Agent (00:00-00:04): Hello Sam\nLead (00:04-00:06): Hi",
    }


SCORE_MEMBERS = [
    "scoredFname",
    "scoredlname",
    "altPhone",
    "scoredEmail",
    "scoredAgent",
    "department",
    "scoredNotes",
    "appointmentDate",
    "appointmentTime",
    "callEnd",
    "alert",
    "currentMake",
    "currentModel",
    "currentYear",
    "currentRegistrationNumber",
    "currentSummary",
    "calledOnMake",
    "calledOnModel",
    "calledOnYear",
    "calledOnRegistrationNumber",
    "calledOnSummary",
    "transcibedBy",
    "leadtype",
    *[f"cat{n}" for n in range(1, 11)],
    "wow",
    "coachNotes",
    "coachedBy",
]


def expected_unscored(call):
    record = {
        "id": str(call.pk),
        "altid": None,
        "dealerName": "Demo Motors North",
        "source": "Click to Call",
        "status": "NOANSWER",
        "date": "2026-11-21",
        "time": "18:00:00",
        "firstName": "Pat",
        "lastName": "Lee",
        "email": "",
        "phone": "+13035550177",
        "callNotes": "",
        "callAttempts": "3",
        "callDuration": None,
        "callRecording": "",
        "agent": "",
        "responseTime": None,
        "callSummary": "",
        **{f"cat{n}Name": NAMES[n - 1] for n in range(1, 11)},
        "inboundCallTrackingNumber": "",
        "accountPostalCode": "80202",
        "accountAddress": "1 Main St",
        "accountCity": "Denver",
        "updateNotes": "",
        "callTranscription": "",
    }
    record.update(dict.fromkeys(SCORE_MEMBERS))
    return record


def get(client, **params):
    return client.get(URL, params)


def test_a_range_answers_every_call_whole_in_json(
    client, key, scored_call, unscored_call
):
    response = get(client, apikey=key, fromDate="2026-11-20", toDate="2026-11-21")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    body = b"".join(response.streaming_content)
    import json

    records = json.loads(body)
    assert records == [expected_scored(scored_call), expected_unscored(unscored_call)]
    assert list(records[0]) == list(expected_scored(scored_call)), (
        "members in the order of part 2.3"
    )


def test_one_call_by_id_ignores_the_dates_and_accepts_apiKey(client, key, scored_call):
    response = get(
        client, apiKey=key, callId=scored_call.pk, fromDate="1999-01-01", toDate="x"
    )
    assert response.status_code == 200
    assert response.json() == expected_scored(scored_call)


def test_renaming_a_category_keeps_the_scored_names_and_renames_the_unscored(
    client, key, account, scored_call, unscored_call
):
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=1).update(
        name="Said hello"
    )
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=10).update(
        name=""
    )
    scored = get(client, apikey=key, callId=scored_call.pk).json()
    unscored = get(client, apikey=key, callId=unscored_call.pk).json()
    assert (scored["cat1Name"], scored["cat10Name"]) == (NAMES[0], NAMES[9])
    assert (unscored["cat1Name"], unscored["cat10Name"]) == ("Said hello", None)


XML_ORDER = [
    "id",
    "altid",
    "dealerInfo",
    "dealerInfo/name",
    "dripInfo",
    "dripInfo/name",
    "dripInfo/name",
    "dripInfo/phone",
    "dripInfo/email",
    "callInfo",
    *[
        f"callInfo/{name}"
        for name in (
            "inboundCallTrackingNumber",
            "source",
            "status",
            "date",
            "time",
            "callNotes",
            "callUpdateNotes",
            "callAttempts",
            "callDuration",
            "callRecording",
            "agent",
            "responseTime",
            "callSummary",
            "callTranscription",
        )
    ],
    "scoreData",
    *[
        f"scoreData/{name}"
        for name in (
            "scoredFname",
            "scoredLname",
            "altPhone",
            "scoredEmail",
            "scoredAgent",
            "department",
            "scoredNotes",
            "appointmentDate",
            "appointmentTime",
            "callEnd",
            "alert",
        )
    ],
    "scoreData/vehicle",
    *[
        f"scoreData/vehicle/{which}{part}"
        for which in ("current", "calledOn")
        for part in ("", "/make", "/model", "/year", "/registrationNumber", "/summary")
    ],
    "scoreData/transcibedBy",
    "scoreData/leadtype",
    "scoreData/scoreCategories",
    *[f"scoreData/scoreCategories/cat{n}" for n in range(1, 11)],
    "scoreData/wow",
    "scoreData/coachNotes",
    "scoreData/coachedBy",
    "accountInfo",
    "accountInfo/postalCode",
    "accountInfo/address",
    "accountInfo/city",
]


def layout(element):
    """Every element below ``element`` as a path, in document order."""
    root = element.getroottree()
    base = root.getpath(element)
    paths = []
    for node in element.iterdescendants():
        path = root.getpath(node)[len(base) + 1 :]
        paths.append("/".join(part.split("[")[0] for part in path.split("/")))
    return paths


def strict(body: bytes):
    return etree.fromstring(
        body, etree.XMLParser(resolve_entities=False, recover=False)
    )


def test_xml_follows_the_documented_layout_element_for_element(
    client, key, scored_call, unscored_call
):
    response = get(
        client, apikey=key, fromDate="2026-11-20", toDate="2026-11-21", returnType="xml"
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/xml; charset=utf-8"
    body = b"".join(response.streaming_content)
    assert body.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')
    root = strict(body)
    assert root.tag == "calldrips"
    scored, unscored = root
    assert layout(scored) == XML_ORDER
    assert layout(unscored) == XML_ORDER
    expected = expected_scored(scored_call)
    assert scored.findtext("id") == expected["id"]
    assert scored.findtext("dealerInfo/name") == "Demo Motors North"
    assert scored.find("dripInfo/name[@id='first']").text == "Sam"
    assert scored.find("dripInfo/name[@id='last']").text == "Rivera"
    assert scored.findtext("callInfo/callUpdateNotes") == expected["updateNotes"]
    assert scored.findtext("scoreData/scoredLname") == "Rivera"
    assert scored.findtext("scoreData/transcibedBy") == "Robin Ames"
    assert scored.findtext("scoreData/vehicle/current/registrationNumber") == "ABC-123"
    assert scored.findtext("scoreData/vehicle/calledOn/make") == "Toyota"
    categories = scored.find("scoreData/scoreCategories")
    assert [(c.get("name"), c.text) for c in categories] == [
        (NAMES[n - 1], "1" if n in (1, 8) else "0") for n in range(1, 11)
    ]
    assert scored.findtext("accountInfo/city") == "Denver"
    # An unscored call: the score members are there, empty.
    for path in (
        "scoreData/scoredFname",
        "scoreData/wow",
        "scoreData/coachedBy",
        "callInfo/callDuration",
    ):
        assert unscored.find(path) is not None
        assert not unscored.findtext(path)
    assert [c.get("name") for c in unscored.find("scoreData/scoreCategories")] == NAMES
    assert all(not c.text for c in unscored.find("scoreData/scoreCategories"))


def test_one_call_in_xml_has_the_calldrip_root(client, key, scored_call):
    response = get(client, apikey=key, callId=scored_call.pk, returnType="xml")
    root = strict(response.content)
    assert root.tag == "calldrip"
    assert layout(root) == XML_ORDER


def test_an_empty_range_is_an_empty_array_or_document(client, key):
    assert (
        b"".join(
            get(
                client, apikey=key, fromDate="2026-01-01", toDate="2026-01-02"
            ).streaming_content
        )
        == b"[]"
    )
    xml = b"".join(
        get(
            client,
            apikey=key,
            fromDate="2026-01-01",
            toDate="2026-01-02",
            returnType="XML",
        ).streaming_content
    )
    assert xml == b'<?xml version="1.0" encoding="UTF-8"?>\n<calldrips/>'


# PostgreSQL refuses NUL in text (intake strips it); every other control character is stored.
HOSTILE = "<b>&amp;\"'</b>]]>\x01\x08\x0b\x1f\ufffe ok"


def test_markup_and_control_characters_in_every_text_member_stay_well_formed(
    client, key, account
):
    call = CallFactory(
        account=account,
        received_at=at("2026-11-20", "10:00:00"),
        **dict.fromkeys(CALL_TEXTS, HOSTILE),
    )
    account.name = HOSTILE[:45]
    account.city = HOSTILE[:45]
    account.save()
    ScorecardCategory.objects.filter(scorecard=account.scorecard, slot=2).update(
        name=HOSTILE
    )
    scorer = in_role("Scorer", accounts=[account], first_name="<i>", last_name="&")
    score_save(
        call=call,
        scorer=scorer,
        values={
            "notes": HOSTILE,
            "current_summary": HOSTILE,
            "first_name": HOSTILE[:45],
        },
    )
    response = get(client, apikey=key, callId=call.pk, returnType="xml")
    root = strict(response.content)
    clean = "<b>&amp;\"'</b>]]> ok"
    assert root.findtext("dripInfo/name") == clean
    assert root.findtext("callInfo/callNotes") == clean
    assert root.findtext("callInfo/callTranscription") == clean
    assert root.findtext("scoreData/scoredNotes") == clean
    assert root.findtext("scoreData/vehicle/current/summary") == clean
    assert root.findtext("scoreData/scoredAgent") == "<i> &"
    assert root.find("scoreData/scoreCategories/cat2").get("name") == clean
    assert root.findtext("dealerInfo/name") == clean
    # JSON carries the text as typed.
    assert get(client, apikey=key, callId=call.pk).json()["callNotes"] == HOSTILE


@pytest.mark.parametrize("return_type", ["json", "xml"])
@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({}, 401, "Invalid API key"),
        ({"apikey": "sd_nope_nope"}, 401, "Invalid API key"),
        ({"KEY": 1, "callId": "999999"}, 404, "Call not found"),
        (
            {"KEY": 1, "callId": "12abc"},
            400,
            "The callId parameter must be a call ID (a whole number).",
        ),
        ({"KEY": 1}, 400, "The fromDate parameter is required."),
        (
            {"KEY": 1, "fromDate": "2026-11-01"},
            400,
            "The toDate parameter is required.",
        ),
        (
            {"KEY": 1, "fromDate": "2026-13-01", "toDate": "2026-11-02"},
            400,
            "The fromDate parameter must be a date in the format YYYY-MM-DD.",
        ),
        (
            {"KEY": 1, "fromDate": "2026-11-01", "toDate": "20261102"},
            400,
            "The toDate parameter must be a date in the format YYYY-MM-DD.",
        ),
        (
            {"KEY": 1, "fromDate": "2026-11-03", "toDate": "2026-11-02"},
            400,
            "The fromDate parameter must not be after toDate.",
        ),
        (
            {"KEY": 1, "fromDate": "2026-11-01", "toDate": "9999-12-31"},
            400,
            "The toDate parameter must be a date between 1900-01-01 and 9998-12-31.",
        ),
        (
            {"KEY": 1, "fromDate": "0001-01-01", "toDate": "2026-11-02"},
            400,
            "The fromDate parameter must be a date between 1900-01-01 and 9998-12-31.",
        ),
        (
            {"KEY": 1, "fromDate": "1899-12-31", "toDate": "9999-12-31"},
            400,
            "The fromDate parameter must be a date between 1900-01-01 and 9998-12-31.",
        ),
        (
            {"KEY": 1, "fromDate": "9999-01-01", "toDate": "9999-01-01"},
            400,
            "The fromDate parameter must be a date between 1900-01-01 and 9998-12-31.",
        ),
    ],
)
def test_every_error_in_the_format_asked_for(
    client, key, params, status, message, return_type
):
    params = dict(params)
    if params.pop("KEY", None):
        params["apikey"] = key
    response = get(client, returnType=return_type, **params)
    assert response.status_code == status
    if return_type == "json":
        assert response["Content-Type"] == "application/json; charset=utf-8"
        assert response.json() == {"success": False, "message": message}
    else:
        assert response["Content-Type"] == "application/xml; charset=utf-8"
        root = strict(response.content)
        assert (root.tag, [c.tag for c in root]) == ("error", ["success", "message"])
        assert (root.findtext("success"), root.findtext("message")) == (
            "false",
            message,
        )


def test_an_unknown_return_type_is_a_400_in_json(client, key):
    response = get(client, apikey=key, returnType="csv", callId="1")
    assert response.status_code == 400
    assert response.json() == {
        "success": False,
        "message": "The returnType parameter must be json or xml.",
    }


def test_two_accounts_never_see_each_others_calls(client, key, account, scored_call):
    other = AccountFactory(organization=account.organization, timezone="America/Denver")
    other_key = issue_scored_data_key(other)
    theirs = CallFactory(account=other, received_at=at("2026-11-20", "11:00:00"))
    assert get(client, apikey=other_key, callId=scored_call.pk).status_code == 404
    assert get(client, apikey=key, callId=theirs.pk).json() == {
        "success": False,
        "message": "Call not found",
    }
    import json

    body = b"".join(
        get(
            client, apikey=other_key, fromDate="2026-11-20", toDate="2026-11-20"
        ).streaming_content
    )
    assert [r["id"] for r in json.loads(body)] == [str(theirs.pk)]


def test_the_range_is_inclusive_on_local_dates(client, key, account):
    late = CallFactory(account=account, received_at=at("2026-11-20", "23:59:59"))
    CallFactory(account=account, received_at=at("2026-11-21", "00:00:00"))
    CallFactory(account=account, received_at=at("2026-11-19", "23:59:59"))
    early = CallFactory(account=account, received_at=at("2026-11-20", "00:00:00"))
    import json

    body = b"".join(
        get(
            client, apikey=key, fromDate="2026-11-20", toDate="2026-11-20"
        ).streaming_content
    )
    records = json.loads(body)
    assert [(r["id"], r["date"], r["time"]) for r in records] == [
        (str(early.pk), "2026-11-20", "00:00:00"),
        (str(late.pk), "2026-11-20", "23:59:59"),
    ]


def test_the_range_follows_daylight_saving_changes(client, key, account):
    # 2026-03-08: Denver springs forward at 02:00 (a 23-hour day); 2026-11-01 falls back (25 hours).
    spring = [at("2026-03-08", "00:30:00"), at("2026-03-08", "23:30:00")]
    autumn = [at("2026-11-01", "00:30:00"), at("2026-11-01", "23:30:00")]
    outside = [
        at("2026-03-07", "23:30:00"),
        at("2026-03-09", "00:30:00"),
        at("2026-11-02", "00:00:00"),
    ]
    for moment in spring + autumn + outside:
        CallFactory(account=account, received_at=moment)
    import json

    def times(day):
        body = b"".join(
            get(client, apikey=key, fromDate=day, toDate=day).streaming_content
        )
        return [(r["date"], r["time"]) for r in json.loads(body)]

    assert times("2026-03-08") == [
        ("2026-03-08", "00:30:00"),
        ("2026-03-08", "23:30:00"),
    ]
    assert times("2026-11-01") == [
        ("2026-11-01", "00:30:00"),
        ("2026-11-01", "23:30:00"),
    ]


@pytest.mark.parametrize(
    "zone", ["Pacific/Kiritimati", "Etc/GMT+12", "Asia/Manila", "America/Denver"]
)
def test_the_widest_range_accepted_answers_in_any_timezone(client, zone):
    """1900-01-01 to 9998-12-31 stays inside the calendar at both ends, whether the account
    is 14 hours ahead of UTC, 12 behind, or was on a local mean time in 1900."""
    account = AccountFactory(timezone=zone)
    call = CallFactory(account=account)
    key = issue_scored_data_key(account)
    import json

    for return_type in ("json", "xml"):
        response = get(
            client,
            apikey=key,
            fromDate="1900-01-01",
            toDate="9998-12-31",
            returnType=return_type,
        )
        assert response.status_code == 200
        body = b"".join(response.streaming_content)
        if return_type == "json":
            assert [record["id"] for record in json.loads(body)] == [str(call.pk)]
        else:
            assert strict(body).findtext("calldrip/id") == str(call.pk)


@pytest.mark.parametrize("return_type", ["json", "xml"])
def test_the_query_count_does_not_grow_with_the_calls(
    client, key, account, return_type
):
    scorer = in_role("Scorer", accounts=[account])

    def count(calls):
        for n in range(calls):
            call = CallFactory(
                account=account,
                received_at=at("2026-10-10", "10:00:00") + timedelta(minutes=n),
            )
            if n % 2:
                score_save(call=call, scorer=scorer, values={"cat1": True})
        with CaptureQueriesContext(connection) as queries:
            response = get(
                client,
                apikey=key,
                fromDate="2026-10-10",
                toDate="2026-10-10",
                returnType=return_type,
            )
            b"".join(response.streaming_content)
        return len(queries)

    # The key's first use of a minute is recorded (one write); later uses are not.
    get(client, apikey=key, callId="1")
    few = count(2)
    many = count(30)
    assert few == many
    assert many <= 6
