"""Range exports of the scored call record (part 2.3) on PostgreSQL: the database
works out every member and streams the rows as binary ``COPY``, Python only writes them.

``scoring.records`` is the reference (and the path of every other database, SQLite the
embedded default): the bytes written here are the same. One query gives one tuple per
call, the members ready to write in the order of part 2.3, null as in JSON; what the
database cannot know (the account's own members and current category names) is added
in Python. JSON is one ``orjson.dumps`` per record. XML escapes a record's texts in one
pass over them joined, and fills a template of the layout made once per pattern of
empty members (an empty member is written ``<name/>``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from operator import not_
from typing import Any

import orjson
from django.db import connections
from django.db.models import Expression, F, QuerySet, TextField
from psycopg import ClientCursor

from calls.models import Call
from scoring.records import (
    CALL_FIELDS,
    NOT_XML,
    SCORE_MEMBERS,
    SLOTS,
    XML_DECLARATION,
    RecordBuilder,
    pieces,
    rows,
    stream_json,
    stream_xml,
    xml_attribute,
)


def sql_path_available(calls: QuerySet[Call]) -> bool:
    """Whether the database of ``calls`` builds the members itself (PostgreSQL)."""
    return connections[calls.db].vendor == "postgresql"


def stream_records(
    builder: RecordBuilder, calls: QuerySet[Call], return_type: str
) -> Iterator[bytes]:
    """The records of ``calls`` in date, time and id order, as a JSON array or a
    ``<calldrips>`` document, in pieces; memory stays flat however many calls match."""
    if not sql_path_available(calls):
        stream = stream_xml if return_type == "xml" else stream_json
        return stream(builder, rows(calls))
    tuples = _copy_rows(calls, _select(builder, xml=return_type == "xml"))
    if return_type == "xml":
        return _xml_document(builder, tuples)
    return _json_array(builder, tuples)


class RecordSql(Expression):
    """An SQL text expression over the columns of a call, its agent and its score, named
    ``{name}`` as in ``_COLUMNS``; the query resolves them (joins included) as ``F()``."""

    output_field = TextField()

    def __init__(self, sql: str, *params: Any) -> None:
        super().__init__(output_field=TextField())
        self.sql = sql
        self.params = list(params)
        self.names = list(dict.fromkeys(re.findall(r"\{(\w+)\}", sql)))
        self.columns: list[Any] = [F(_COLUMNS[name]) for name in self.names]

    def get_source_expressions(self) -> list[Any]:
        return self.columns

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        self.columns = list(exprs)

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, tuple[Any, ...]]:
        columns = {}
        for name, column in zip(self.names, self.columns, strict=True):
            sql, params = compiler.compile(column)
            if params:
                raise ValueError(f"column {name} compiled with parameters")
            columns[name] = sql
        sql = re.sub(r"\{(\w+)\}", lambda m: columns[m[1]], self.sql)
        return sql, tuple(self.params)


# The columns the members are made of.
_COLUMNS = {
    **{name: name for name in CALL_FIELDS if name != "account_id"},
    "agent_first": "agent__first_name",
    "agent_last": "agent__last_name",
    "score_id": "score__id",
    **{f"s_{member}": f"score__{member}" for member in SCORE_MEMBERS},
}

# Every character Python's str.strip() removes (the agent's name is stripped with it).
_WHITESPACE = "".join(chr(code) for code in range(0x110000) if chr(code).isspace())


def _flag(column: str) -> str:
    """'1' or '0', null without a score."""
    return f"(CASE {column} WHEN true THEN '1' WHEN false THEN '0' END)"


def _when_scored(text: str) -> str:
    return f"(CASE WHEN {{score_id}} IS NOT NULL THEN {text} END)"


# The tuple of one call: the members of RecordBuilder.json in order, but for those
# added in Python (marked "in Python"), as text or null. A score's own columns are
# null without a score (the join is outer).
_CALL_HEAD = {
    "id": "{id}::text",
    "altid": "nullif({altid}, '')",
    # in Python: dealerName; date and time are one member here, split in Python
    "local": "to_char({received_at} AT TIME ZONE %s, 'YYYY-MM-DD HH24:MI:SS')",
    "source": "{source}",
    "status": "{status}",
    "firstName": "{first_name}",
    "lastName": "{last_name}",
    "email": "{email}",
    "phone": "{phone}",
    "callNotes": "{call_notes}",
    "callAttempts": "{attempts}::text",
    "callDuration": "{duration}::text",
    "callRecording": "{recording_url}",
    # agent_label(): the agent's full name (str.strip()ped), else for an agent who is
    # not a user, the vendor's agent id or the number rung.
    "agent": (
        "coalesce(nullif(btrim(coalesce({agent_first}, '') || ' ' || "
        "coalesce({agent_last}, ''), %s), ''), CASE WHEN coalesce({agent_number}, '') "
        "= '' THEN '' ELSE coalesce(nullif({vendor_agent_id}, ''), {agent_number}) END)"
    ),
    "responseTime": "{response_time}::text",
    "scoredFname": "{s_first_name}",
    "scoredlname": "{s_last_name}",
    "callSummary": "{summary}",
    "altPhone": "{s_alt_phone}",
    "scoredEmail": "{s_email}",
    "scoredAgent": "{s_scorer_name}",
    "department": "{s_department}",
    "scoredNotes": "{s_notes}",
    "appointmentDate": _when_scored(
        "coalesce(to_char({s_appointment_date}, 'YYYY-MM-DD'), '')"
    ),
    "appointmentTime": _when_scored(
        "coalesce(to_char({s_appointment_time}, 'HH24:MI'), '')"
    ),
    "callEnd": "{s_call_end}",
    "alert": "{s_alert}",
    "currentMake": "{s_current_make}",
    "currentModel": "{s_current_model}",
    "currentYear": "{s_current_year}",
    "currentRegistrationNumber": "{s_current_registration}",
    "currentSummary": "{s_current_summary}",
    "calledOnMake": "{s_called_on_make}",
    "calledOnModel": "{s_called_on_model}",
    "calledOnYear": "{s_called_on_year}",
    "calledOnRegistrationNumber": "{s_called_on_registration}",
    "calledOnSummary": "{s_called_on_summary}",
    "transcibedBy": "{s_scorer_name}",
    "leadtype": "{s_lead_type}",
}
# The score's category names as JSON, null when they are the account's current ones
# (or there is no score); cat1Name..cat10Name are made of them in Python.
_NAMES = "(CASE WHEN {s_category_names} <> %s::jsonb THEN {s_category_names}::text END)"
_CALL_TAIL = {
    **{f"cat{slot}": _flag(f"{{s_cat{slot}}}") for slot in SLOTS},
    "wow": _flag("{s_wow}"),
    "coachNotes": "{s_coach_notes}",
    "coachedBy": "{s_coached_by}",
    "inboundCallTrackingNumber": "{inbound_tracking_number}",
    # in Python: accountPostalCode, accountAddress, accountCity
    "updateNotes": (
        "concat_ws(E'\\n', nullif({call_notes}, ''), nullif({update_notes}, ''), "
        "nullif({s_notes}, ''), nullif({s_coach_notes}, ''))"
    ),
    "callTranscription": "{transcription}",
}
_HEAD = len(_CALL_HEAD)
_LOCAL = list(_CALL_HEAD).index("local")


def _select(builder: RecordBuilder, *, xml: bool) -> list[RecordSql]:
    """The tuple's columns; in XML a null member is written as an empty one."""
    names = orjson.dumps(builder.current_names).decode()
    params = {"local": [builder.zone.key], "agent": [_WHITESPACE]}
    columns = [
        RecordSql(sql if not xml else f"coalesce({sql}, '')", *params.get(key, []))
        for key, sql in _CALL_HEAD.items()
    ]
    columns.append(RecordSql(_NAMES, names))
    columns += [
        RecordSql(sql if not xml else f"coalesce({sql}, '')")
        for sql in _CALL_TAIL.values()
    ]
    return columns


def _copy_rows(calls: QuerySet[Call], columns: list[RecordSql]) -> Iterator[tuple]:
    """The tuples in date, time and id order, read from one binary ``COPY`` as they
    arrive (a slow reader holds the database back, nothing piles up here)."""
    query = calls.order_by("received_at", "id").annotate(
        **{f"m{n}": column for n, column in enumerate(columns)}
    )
    sql, params = query.values_list(
        *(f"m{n}" for n in range(len(columns)))
    ).query.sql_with_params()
    connection = connections[calls.db]
    connection.ensure_connection()
    # COPY takes no parameters: they are bound here, as psycopg binds them client-side.
    with ClientCursor(connection.connection) as binder:
        statement = binder.mogrify(f"COPY ({sql}) TO STDOUT (FORMAT BINARY)", params)
    with connection.cursor() as cursor, cursor.copy(statement) as copy:
        copy.set_types(["text"] * len(columns))
        yield from copy.rows()


def _names(builder: RecordBuilder, own: str | None) -> list[Any]:
    """cat1Name..cat10Name: the score's names unless it has none, else the current ones."""
    if own is None:
        return builder.current_names
    names = orjson.loads(own) or builder.current_names
    return [names[slot - 1] for slot in SLOTS]


def _record(builder: RecordBuilder, row: tuple) -> tuple:
    """The members of RecordBuilder.json, in order, from one tuple."""
    local = row[_LOCAL]
    return (
        row[0],
        row[1],
        builder.dealer,
        row[3],
        row[4],
        local[:10],
        local[11:],
        *row[5:_HEAD],
        *_names(builder, row[_HEAD]),
        *row[_HEAD + 1 : -2],
        builder.postal_code,
        builder.address,
        builder.city,
        *row[-2:],
    )


JSON_KEYS = (
    "id",
    "altid",
    "dealerName",
    "source",
    "status",
    "date",
    "time",
    *list(_CALL_HEAD)[5:],
    *(f"cat{slot}Name" for slot in SLOTS),
    *list(_CALL_TAIL)[:-2],
    "accountPostalCode",
    "accountAddress",
    "accountCity",
    *list(_CALL_TAIL)[-2:],
)


def _json_array(builder: RecordBuilder, tuples: Iterable[tuple]) -> Iterator[bytes]:
    def parts() -> Iterator[bytes]:
        dumps = orjson.dumps
        yield b"["
        separator = b""
        for row in tuples:
            yield separator + dumps(
                dict(zip(JSON_KEYS, _record(builder, row), strict=True))
            )
            separator = b","
        yield b"]"

    return pieces(parts())


def _texts(builder: RecordBuilder, row: tuple) -> tuple[str, ...]:
    """The members of ``_record`` but the category names, as XML writes them (a null
    member is empty)."""
    local = row[_LOCAL]
    return (
        row[0],
        row[1],
        builder.dealer or "",
        row[3],
        row[4],
        local[:10],
        local[11:],
        *row[5:_HEAD],
        *row[_HEAD + 1 : -2],
        builder.postal_code or "",
        builder.address or "",
        builder.city or "",
        *row[-2:],
    )


_TEXT_KEYS = [key for key in JSON_KEYS if not re.fullmatch(r"cat\d+Name", key)]
_AT = {key: n for n, key in enumerate(_TEXT_KEYS)}
# Neither NUL, which joins a record's texts (PostgreSQL text never holds it), nor
# anything the layout's markup has needs escaping; what XML cannot carry is dropped.
_JOINED_DROP = re.compile(f"[{NOT_XML.replace(chr(0), chr(1), 1)}]")
_JOINED_WORK = re.compile(f"[&<>{NOT_XML.replace(chr(0), chr(1), 1)}]")


def _escaped(texts: tuple[str, ...]) -> tuple[str, ...] | list[str]:
    """xml_text() of every text, in one pass over them joined."""
    joined = "\x00".join(texts)
    if _JOINED_WORK.search(joined) is None:
        return texts
    joined = _JOINED_DROP.sub("", joined)
    joined = joined.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return joined.split("\x00")


# RecordBuilder.xml: ("el", member) an element of that name holding the member (empty:
# <name/>); ("el", name, member) the same under another name; ("first"/"last", member)
# a <name id=...> element (never <name/>); ("cat", slot) a scoring category; text as is.
_LAYOUT: list[Any] = [
    "<calldrip>",
    ("el", "id"),
    ("el", "altid"),
    "<dealerInfo>",
    ("el", "name", "dealerName"),
    "</dealerInfo><dripInfo>",
    ("first", "firstName"),
    ("last", "lastName"),
    ("el", "phone"),
    ("el", "email"),
    "</dripInfo><callInfo>",
    *(
        ("el", member)
        for member in ("inboundCallTrackingNumber", "source", "status", "date", "time")
    ),
    ("el", "callNotes"),
    ("el", "callUpdateNotes", "updateNotes"),
    *(
        ("el", member)
        for member in (
            "callAttempts",
            "callDuration",
            "callRecording",
            "agent",
            "responseTime",
            "callSummary",
            "callTranscription",
        )
    ),
    "</callInfo><scoreData>",
    ("el", "scoredFname"),
    ("el", "scoredLname", "scoredlname"),
    *(
        ("el", member)
        for member in (
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
    ),
    "<vehicle>",
    *(
        item
        for which in ("current", "calledOn")
        for item in (
            f"<{which}>",
            ("el", "make", f"{which}Make"),
            ("el", "model", f"{which}Model"),
            ("el", "year", f"{which}Year"),
            ("el", "registrationNumber", f"{which}RegistrationNumber"),
            ("el", "summary", f"{which}Summary"),
            f"</{which}>",
        )
    ),
    "</vehicle>",
    ("el", "transcibedBy"),
    ("el", "leadtype"),
    "<scoreCategories>",
    *(("cat", slot) for slot in SLOTS),
    "</scoreCategories>",
    ("el", "wow"),
    ("el", "coachNotes"),
    ("el", "coachedBy"),
    "</scoreData><accountInfo>",
    ("el", "postalCode", "accountPostalCode"),
    ("el", "address", "accountAddress"),
    ("el", "city", "accountCity"),
    "</accountInfo></calldrip>",
]
_TEMPLATES_KEPT = 256


def _template(empty: tuple[bool, ...]) -> str:
    """The layout as a ``str.format`` template: ``{n}`` the n-th text, ``{N+slot-1}`` the
    attribute of category ``slot`` (N texts); ``empty`` tells which texts are empty."""
    names = len(_TEXT_KEYS) - 1
    out = []
    for item in _LAYOUT:
        if isinstance(item, str):
            out.append(item)
        elif item[0] == "el":
            tag, at = item[1], _AT[item[-1]]
            out.append(f"<{tag}/>" if empty[at] else f"<{tag}>{{{at}}}</{tag}>")
        elif item[0] in ("first", "last"):
            out.append(f'<name id="{item[0]}">{{{_AT[item[1]]}}}</name>')
        else:
            slot = item[1]
            at, name = _AT[f"cat{slot}"], names + slot
            out.append(f"<cat{slot} name={{{name}}}>{{{at}}}</cat{slot}>")
    return "".join(out)


def _xml_document(builder: RecordBuilder, tuples: Iterable[tuple]) -> Iterator[bytes]:
    current = [xml_attribute(name) for name in builder.current_names]
    templates: dict[tuple[bool, ...], str] = {}

    def calldrip(row: tuple) -> str:
        texts = _escaped(_texts(builder, row))
        empty = tuple(map(not_, texts))
        template = templates.get(empty)
        if template is None:
            if len(templates) >= _TEMPLATES_KEPT:
                templates.clear()
            template = templates[empty] = _template(empty)
        own = row[_HEAD]
        names = current if own is None else map(xml_attribute, _names(builder, own))
        return template.format(*texts, *names)

    def parts() -> Iterator[str]:
        iterator = iter(tuples)
        first = next(iterator, None)
        if first is None:
            yield XML_DECLARATION + "<calldrips/>"
            return
        yield XML_DECLARATION + "<calldrips>" + calldrip(first)
        for row in iterator:
            yield calldrip(row)
        yield "</calldrips>"

    return pieces(part.encode() for part in parts())
