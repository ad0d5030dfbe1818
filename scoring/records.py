"""The scored call record (part 2.3) in JSON and XML, built row by row from one query.

Ranges of any length stream: rows come from a server-side cursor in chunks and each
record is written out as soon as it is built, so memory stays flat however many calls
match. JSON members are flat and named as part 2.3 (quirks included: ``scoredlname``,
``transcibedBy``); every INT(11) column is a string of digits or null, every text column a
string. A call not yet scored has its score members null (JSON) or empty (XML).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from datetime import date, datetime, timedelta
from typing import Any, cast
from zoneinfo import ZoneInfo

import orjson
from django.db.models import F, QuerySet

from accounts.models import Account
from calls.models import Call, agent_label
from core.text import NOT_XML
from scoring.models import CATEGORY_SLOTS, Scorecard
from scoring.selectors import day_start
from scoring.services import scorecard_snapshot

CHUNK = 2000
SLOTS = range(1, CATEGORY_SLOTS + 1)

# The score's members a record shows, read as ``s_<member>`` (the export of exports.py too).
SCORE_MEMBERS = (
    "first_name",
    "last_name",
    "alt_phone",
    "email",
    "scorer_name",
    "department",
    "notes",
    "appointment_date",
    "appointment_time",
    "call_end",
    "alert",
    "current_make",
    "current_model",
    "current_year",
    "current_registration",
    "current_summary",
    "called_on_make",
    "called_on_model",
    "called_on_year",
    "called_on_registration",
    "called_on_summary",
    "lead_type",
    "category_names",
    "wow",
    "coach_notes",
    "coached_by",
    *(f"cat{slot}" for slot in SLOTS),
)
# One row of the query: the call, its account, agent and score, flat.
CALL_FIELDS = [
    "id",
    "account_id",  # which account's builder writes the row (the pages' CSV export)
    "altid",
    "received_at",
    "source",
    "status",
    "first_name",
    "last_name",
    "email",
    "phone",
    "call_notes",
    "update_notes",
    "attempts",
    "duration",
    "recording_url",
    "response_time",
    "summary",
    "transcription",
    "inbound_tracking_number",
    "vendor_agent_id",
    "agent_number",
]
_COLUMNS: dict[str, Any] = {
    "agent_first": F("agent__first_name"),
    "agent_last": F("agent__last_name"),
    "scored_at": F("score__scored_at"),
    **{f"s_{member}": F(f"score__{member}") for member in SCORE_MEMBERS},
}

# Characters XML 1.0 cannot carry (core.text.NOT_XML): dropped, so the document is
# well-formed whatever was typed.
_DROP = re.compile(f"[{NOT_XML}]")
# Most values need nothing done: one search tells, and only the rest are rewritten.
_TEXT_WORK = re.compile(f"[&<>{NOT_XML}]")
_ATTRIBUTE_WORK = re.compile(f'[&<>"\n\r\t{NOT_XML}]')


def local_day_bounds(
    account: Account, first: date, last: date
) -> tuple[datetime, datetime]:
    """From the start of ``first`` to the start of the day after ``last``, in the account's
    timezone (daylight-saving days are 23 or 25 hours long)."""
    zone = ZoneInfo(account.timezone)
    return day_start(first, zone), day_start(last + timedelta(days=1), zone)


def rows(
    calls: QuerySet[Call], *, ordering: Sequence[str] = ()
) -> Iterator[dict[str, Any]]:
    """The rows of the record, in ``ordering`` (then id) or in date, time and id order,
    one query streamed in chunks."""
    flat = calls.order_by(*(ordering or ["received_at"]), "id").values(
        *CALL_FIELDS, **_COLUMNS
    )
    return cast(Iterator[dict[str, Any]], flat.iterator(chunk_size=CHUNK))


def _current_names(scorecard: Scorecard | None) -> list[str | None]:
    """The category names a call not yet scored shows: its account's scorecard's now."""
    return scorecard_snapshot(scorecard)[0] if scorecard else [None] * CATEGORY_SLOTS


def record_builders(accounts: QuerySet[Account]) -> dict[int, RecordBuilder]:
    """A builder for each of ``accounts`` by id, their scorecards read in two queries
    however many there are: an export over fifty accounts costs what one account's does."""
    scorecards = {
        scorecard.account_id: scorecard
        for scorecard in Scorecard.objects.filter(
            account__in=accounts
        ).prefetch_related("categories")
    }
    return {
        account.pk: RecordBuilder(
            account, current_names=_current_names(scorecards.get(account.pk))
        )
        for account in accounts
    }


class RecordBuilder:
    """Builds records of one account's calls: the account's own members and its current
    category names (for calls not yet scored) are looked up once, unless given."""

    def __init__(
        self, account: Account, current_names: list[str | None] | None = None
    ) -> None:
        self.zone = ZoneInfo(account.timezone)
        self.dealer = account.name
        self.postal_code = account.postal_code
        self.address = account.address
        self.city = account.city
        if current_names is None:
            current_names = _current_names(
                Scorecard.objects.prefetch_related("categories")
                .filter(account=account)
                .first()
            )
        self.current_names: list[str | None] = current_names

    def json(self, row: dict[str, Any]) -> dict[str, Any]:
        """The flat JSON record, members in the order of part 2.3."""
        local = row["received_at"].astimezone(self.zone)
        scored = row["scored_at"] is not None
        names = (row["s_category_names"] if scored else None) or self.current_names
        record: dict[str, Any] = {
            "id": str(row["id"]),
            "altid": row["altid"] or None,
            "dealerName": self.dealer,
            "source": row["source"],
            "status": row["status"],
            "date": local.strftime("%Y-%m-%d"),
            "time": local.strftime("%H:%M:%S"),
            "firstName": row["first_name"],
            "lastName": row["last_name"],
            "email": row["email"],
            "phone": row["phone"],
            "callNotes": row["call_notes"],
            "callAttempts": str(row["attempts"]),
            "callDuration": _digits(row["duration"]),
            "callRecording": row["recording_url"],
            "agent": agent_label(
                full_name=_name(row["agent_first"], row["agent_last"]),
                vendor_agent_id=row["vendor_agent_id"],
                agent_number=row["agent_number"],
            ),
            "responseTime": _digits(row["response_time"]),
        }
        score = _score_members(row) if scored else dict.fromkeys(SCORED_MEMBERS)
        record.update(
            {
                "scoredFname": score["scoredFname"],
                "scoredlname": score["scoredlname"],
                "callSummary": row["summary"],
            }
        )
        record.update({key: score[key] for key in SCORED_MEMBERS[2:_NAMES_AT]})
        for slot in SLOTS:
            record[f"cat{slot}Name"] = names[slot - 1]
        record.update({key: score[key] for key in SCORED_MEMBERS[_NAMES_AT:]})
        record["inboundCallTrackingNumber"] = row["inbound_tracking_number"]
        record["accountPostalCode"] = self.postal_code
        record["accountAddress"] = self.address
        record["accountCity"] = self.city
        record["updateNotes"] = _all_notes(row)
        record["callTranscription"] = row["transcription"]
        return record

    def xml(self, row: dict[str, Any]) -> str:
        """One ``<calldrip>`` element, element for element in the documented order."""
        r = self.json(row)
        e = xml_element
        vehicle = "".join(
            f"<{which}>"
            + e("make", r[f"{which}Make"])
            + e("model", r[f"{which}Model"])
            + e("year", r[f"{which}Year"])
            + e("registrationNumber", r[f"{which}RegistrationNumber"])
            + e("summary", r[f"{which}Summary"])
            + f"</{which}>"
            for which in ("current", "calledOn")
        )
        categories = "".join(
            f"<cat{slot} name={xml_attribute(r[f'cat{slot}Name'])}>"
            f"{xml_text(r[f'cat{slot}'])}</cat{slot}>"
            for slot in SLOTS
        )
        return (
            "<calldrip>"
            + e("id", r["id"])
            + e("altid", r["altid"])
            + "<dealerInfo>"
            + e("name", r["dealerName"])
            + "</dealerInfo><dripInfo>"
            + f'<name id="first">{xml_text(r["firstName"])}</name>'
            + f'<name id="last">{xml_text(r["lastName"])}</name>'
            + e("phone", r["phone"])
            + e("email", r["email"])
            + "</dripInfo><callInfo>"
            + e("inboundCallTrackingNumber", r["inboundCallTrackingNumber"])
            + e("source", r["source"])
            + e("status", r["status"])
            + e("date", r["date"])
            + e("time", r["time"])
            + e("callNotes", r["callNotes"])
            + e("callUpdateNotes", r["updateNotes"])
            + e("callAttempts", r["callAttempts"])
            + e("callDuration", r["callDuration"])
            + e("callRecording", r["callRecording"])
            + e("agent", r["agent"])
            + e("responseTime", r["responseTime"])
            + e("callSummary", r["callSummary"])
            + e("callTranscription", r["callTranscription"])
            + "</callInfo><scoreData>"
            + e("scoredFname", r["scoredFname"])
            + e("scoredLname", r["scoredlname"])
            + e("altPhone", r["altPhone"])
            + e("scoredEmail", r["scoredEmail"])
            + e("scoredAgent", r["scoredAgent"])
            + e("department", r["department"])
            + e("scoredNotes", r["scoredNotes"])
            + e("appointmentDate", r["appointmentDate"])
            + e("appointmentTime", r["appointmentTime"])
            + e("callEnd", r["callEnd"])
            + e("alert", r["alert"])
            + f"<vehicle>{vehicle}</vehicle>"
            + e("transcibedBy", r["transcibedBy"])
            + e("leadtype", r["leadtype"])
            + f"<scoreCategories>{categories}</scoreCategories>"
            + e("wow", r["wow"])
            + e("coachNotes", r["coachNotes"])
            + e("coachedBy", r["coachedBy"])
            + "</scoreData><accountInfo>"
            + e("postalCode", r["accountPostalCode"])
            + e("address", r["accountAddress"])
            + e("city", r["accountCity"])
            + "</accountInfo></calldrip>"
        )


# Score members after scoredFname/scoredlname, in the order of part 2.3.
SCORED_MEMBERS = [
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
    *(f"cat{slot}" for slot in SLOTS),
    "wow",
    "coachNotes",
    "coachedBy",
]
# cat1Name..cat10Name come between leadtype and cat1.
_NAMES_AT = SCORED_MEMBERS.index("cat1")


def _score_members(row: dict[str, Any]) -> dict[str, Any]:
    appointment_date = row["s_appointment_date"]
    appointment_time = row["s_appointment_time"]
    members = {
        "scoredFname": row["s_first_name"],
        "scoredlname": row["s_last_name"],
        "altPhone": row["s_alt_phone"],
        "scoredEmail": row["s_email"],
        "scoredAgent": row["s_scorer_name"],
        "department": row["s_department"],
        "scoredNotes": row["s_notes"],
        "appointmentDate": appointment_date.isoformat() if appointment_date else "",
        "appointmentTime": appointment_time.strftime("%H:%M")
        if appointment_time
        else "",
        "callEnd": row["s_call_end"],
        "alert": row["s_alert"],
        "currentMake": row["s_current_make"],
        "currentModel": row["s_current_model"],
        "currentYear": row["s_current_year"],
        "currentRegistrationNumber": row["s_current_registration"],
        "currentSummary": row["s_current_summary"],
        "calledOnMake": row["s_called_on_make"],
        "calledOnModel": row["s_called_on_model"],
        "calledOnYear": row["s_called_on_year"],
        "calledOnRegistrationNumber": row["s_called_on_registration"],
        "calledOnSummary": row["s_called_on_summary"],
        "transcibedBy": row["s_scorer_name"],
        "leadtype": row["s_lead_type"],
        "wow": "1" if row["s_wow"] else "0",
        "coachNotes": row["s_coach_notes"],
        "coachedBy": row["s_coached_by"],
    }
    for slot in SLOTS:
        members[f"cat{slot}"] = "1" if row[f"s_cat{slot}"] else "0"
    return members


def _digits(value: int | None) -> str | None:
    return None if value is None else str(value)


def _name(first: str | None, last: str | None) -> str:
    return f"{first or ''} {last or ''}".strip()


def _all_notes(row: dict[str, Any]) -> str:
    """updateNotes: every note on the call, the call notes first."""
    notes = (
        row["call_notes"],
        row["update_notes"],
        row["s_notes"] or "",
        row["s_coach_notes"] or "",
    )
    return "\n".join(note for note in notes if note)


def xml_text(value: Any) -> str:
    """Element content, escaped, without the characters XML cannot carry."""
    if value is None:
        return ""
    text = str(value)
    if _TEXT_WORK.search(text) is None:
        return text
    text = _DROP.sub("", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def xml_attribute(value: Any) -> str:
    """A double-quoted attribute value, escaped, without the characters XML cannot carry."""
    text = "" if value is None else str(value)
    if _ATTRIBUTE_WORK.search(text) is not None:
        text = xml_text(text).replace('"', "&quot;")
        text = text.replace("\n", "&#10;").replace("\r", "&#13;").replace("\t", "&#9;")
    return f'"{text}"'


def xml_element(name: str, value: Any) -> str:
    """``<name>text</name>``, or ``<name/>`` when the escaped text is empty."""
    text = xml_text(value)
    return f"<{name}>{text}</{name}>" if text else f"<{name}/>"


# Records are handed to the server in pieces of about this size: one write per record
# would cost a system call (and a chunk header) each.
STREAM_PIECE = 64 * 1024


def pieces(parts: Iterable[bytes]) -> Iterator[bytes]:
    """``parts`` joined into pieces of at least ``STREAM_PIECE`` bytes (the last may be less)."""
    buffer: list[bytes] = []
    size = 0
    for part in parts:
        buffer.append(part)
        size += len(part)
        if size >= STREAM_PIECE:
            yield b"".join(buffer)
            buffer, size = [], 0
    if buffer:
        yield b"".join(buffer)


def stream_json(
    builder: RecordBuilder, records: Iterable[dict[str, Any]]
) -> Iterator[bytes]:
    """A JSON array, written record by record (orjson) in pieces of ``STREAM_PIECE``."""

    def parts() -> Iterator[bytes]:
        yield b"["
        separator = b""
        for row in records:
            yield separator + orjson.dumps(builder.json(row))
            separator = b","
        yield b"]"

    return pieces(parts())


XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>\n'


def stream_xml(
    builder: RecordBuilder, records: Iterable[dict[str, Any]]
) -> Iterator[bytes]:
    """``<calldrips>`` holding one ``<calldrip>`` per call (``<calldrips/>`` when none),
    written record by record in pieces of ``STREAM_PIECE``."""

    def parts() -> Iterator[str]:
        iterator = iter(records)
        first = next(iterator, None)
        if first is None:
            yield XML_DECLARATION + "<calldrips/>"
            return
        yield XML_DECLARATION + "<calldrips>" + builder.xml(first)
        for row in iterator:
            yield builder.xml(row)
        yield "</calldrips>"

    return pieces(part.encode() for part in parts())
