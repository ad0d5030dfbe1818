"""Range exports of the scored call record (part 2.3) on PostgreSQL: the database
works out every member and streams the rows as binary ``COPY``, Python only writes them.

``scoring.records`` is the reference (and the path of every other database, SQLite the
embedded default): the bytes written here are the same. One query gives one row per
call: a ``text[]`` of its members ready to write, null as in JSON, and the score's own
category names if it has any. JSON puts the members, in the order of part 2.3, into one
dict that holds the account's own members and the category names already (rewritten only
when a score has its own), and is one ``orjson.dumps`` of it per record. XML takes the
texts (their UTF-8 bytes as PostgreSQL sent them, never decoded) in the order the layout
writes them, escapes them in a few passes in C over them joined, and fills a template of
the layout made once per pattern of empty texts (an empty member is written ``<name/>``)
and set of category names, the account's own members and the names written in.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator, Sequence
from contextlib import closing
from itertools import chain
from operator import not_
from typing import Any

import orjson
from django.db import connections, transaction
from django.db.models import Expression, F, QuerySet, TextField
from psycopg import ClientCursor
from psycopg.types.string import ByteaBinaryLoader

from calls.models import Call
from scoring.records import (
    CALL_FIELDS,
    SCORE_MEMBERS,
    SLOTS,
    STREAM_PIECE,
    XML_DECLARATION,
    RecordBuilder,
    rows,
    stream_json,
    stream_xml,
    xml_attribute,
    xml_element,
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
    if return_type == "xml":
        texts = _copy_rows(calls, _xml_select(builder), utf8=True)
        return _xml_document(builder, texts)
    return _json_array(builder, _copy_rows(calls, _json_select(builder)))


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


def _local(pattern: str) -> str:
    """The call's arrival in the account's timezone (the parameter), as ``pattern``."""
    return f"to_char({{received_at}} AT TIME ZONE %s, '{pattern}')"


# The account's own members, the same in every record: bound as parameters in JSON,
# written into the layout once in XML.
_ACCOUNT = {
    "dealerName": "dealer",
    "accountPostalCode": "postal_code",
    "accountAddress": "address",
    "accountCity": "city",
}
# cat1Name..cat10Name: the score's own names or the account's current ones, in Python.
_CAT_NAMES = tuple(f"cat{slot}Name" for slot in SLOTS)

# Every member of RecordBuilder.json, in its order: the SQL of a text or null over the
# columns of the call, its agent and its score (a score's columns are null without a
# score: the join is outer), or None for a member added in Python.
_MEMBERS: dict[str, str | None] = {
    "id": "{id}::text",
    "altid": "nullif({altid}, '')",
    "dealerName": None,
    "source": "{source}",
    "status": "{status}",
    "date": _local("YYYY-MM-DD"),
    "time": _local("HH24:MI:SS"),
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
    **dict.fromkeys(_CAT_NAMES),
    **{f"cat{slot}": _flag(f"{{s_cat{slot}}}") for slot in SLOTS},
    "wow": _flag("{s_wow}"),
    "coachNotes": "{s_coach_notes}",
    "coachedBy": "{s_coached_by}",
    "inboundCallTrackingNumber": "{inbound_tracking_number}",
    "accountPostalCode": None,
    "accountAddress": None,
    "accountCity": None,
    "updateNotes": (
        "concat_ws(E'\\n', nullif({call_notes}, ''), nullif({update_notes}, ''), "
        "nullif({s_notes}, ''), nullif({s_coach_notes}, ''))"
    ),
    "callTranscription": "{transcription}",
}
JSON_KEYS = tuple(_MEMBERS)
# The members a JSON row gives, in order: all but those added in Python (the account's,
# the same in every record, and the category names).
_ROW_MEMBERS = {key: sql for key, sql in _MEMBERS.items() if sql is not None}
_ROW_KEYS = tuple(_ROW_MEMBERS)

# The score's category names as JSON, null when they are the account's current ones
# (the parameter) or there is no score.
_OWN_NAMES = (
    "(CASE WHEN {s_category_names} <> %s::jsonb THEN {s_category_names}::text END)"
)


def _params(builder: RecordBuilder, key: str) -> list[Any]:
    """The parameters of a member's SQL, in order."""
    if key in ("date", "time"):
        return [builder.zone.key]
    if key == "agent":
        return [_WHITESPACE]
    return []


def _own_names(builder: RecordBuilder) -> RecordSql:
    return RecordSql(_OWN_NAMES, orjson.dumps(builder.current_names).decode())


def _array(members: list[tuple[str, list[Any]]]) -> RecordSql:
    """One ``text[]`` of the members' SQL: psycopg reads it in C, a column per member
    would cost a Python call each."""
    sql = ", ".join(member for member, _ in members)
    params = [param for _, member_params in members for param in member_params]
    return RecordSql(f"ARRAY[{sql}]::text[]", *params)


def _json_select(builder: RecordBuilder) -> list[RecordSql]:
    """The members of ``_ROW_KEYS`` in order, and the score's own names."""
    members = [(sql, _params(builder, key)) for key, sql in _ROW_MEMBERS.items()]
    return [_array(members), _own_names(builder)]


# The settings of the export's transaction: see ``_copy_rows``.
STREAMING_PLAN = (
    "SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL enable_sort = off"
)


def _copy_rows(
    calls: QuerySet[Call], columns: list[RecordSql], *, utf8: bool = False
) -> Generator[tuple]:
    """The rows (a ``text[]`` and a text) in date, time and id order, read from one
    binary ``COPY`` as they arrive (a slow reader holds the database back, nothing
    piles up here); with ``utf8``, the texts as the UTF-8 bytes PostgreSQL sent, not
    decoded.

    The plan reads the account's calls in order from their index ("call_account_received")
    and streams from the first row, so PostgreSQL and this process work at once. Left to
    itself the planner prefers to build every row, sort them (on disk past some ten
    thousand; in parallel where it may) and only then send the first: as long again as
    the streaming plan. So this statement's transaction allows neither a sort nor
    parallel workers."""
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
    # Inside a transaction already (a test), SET LOCAL holds until it ends: no savepoint.
    with (
        transaction.atomic(using=calls.db, savepoint=False),
        connection.cursor() as cursor,
    ):
        cursor.execute(STREAMING_PLAN)
        if utf8:  # this cursor's own loaders: the connection's are not changed
            cursor.adapters.register_loader("text", ByteaBinaryLoader)
        with cursor.copy(statement) as copy:
            copy.set_types(["text[]", "text"])
            yield from copy.rows()


def _names(builder: RecordBuilder, own: str | bytes | None) -> list[Any]:
    """cat1Name..cat10Name: the score's names unless it has none, else the current ones."""
    if own is None:
        return builder.current_names
    names = orjson.loads(own) or builder.current_names
    return [names[slot - 1] for slot in SLOTS]


def _json_array(builder: RecordBuilder, rows: Generator[tuple]) -> Iterator[bytes]:
    """``[``, the records joined by commas, ``]``, in pieces of about ``STREAM_PIECE``.

    One dict is the record of every row in turn: updating its values keeps its keys'
    order, and costs less than building a dict of some seventy members per row (most
    of this loop's time); the account's members are written once, the category names
    only when they change."""
    dumps = orjson.dumps
    record: dict[str, Any] = dict.fromkeys(JSON_KEYS)
    record.update(
        (key, getattr(builder, attribute)) for key, attribute in _ACCOUNT.items()
    )
    update = record.update
    current = builder.current_names
    update(zip(_CAT_NAMES, current, strict=True))
    names_current = True
    opening = b"["
    buffer: list[bytes] = []
    size = 0
    with closing(rows):  # an error here ends the COPY at once
        for members, own in rows:
            update(zip(_ROW_KEYS, members, strict=True))
            if own is not None:
                update(zip(_CAT_NAMES, _names(builder, own), strict=True))
                names_current = False
            elif not names_current:
                update(zip(_CAT_NAMES, current, strict=True))
                names_current = True
            part = dumps(record)
            buffer.append(part)
            size += len(part)
            if size >= STREAM_PIECE:
                yield opening + b",".join(buffer)
                opening, buffer, size = b",", [], 0
    if buffer:
        yield opening + b",".join(buffer) + b"]"
    else:
        yield b"[]" if opening == b"[" else b"]"


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


def _member(item: tuple) -> str:
    """The member a layout item holds."""
    return f"cat{item[1]}" if item[0] == "cat" else item[-1]


# The texts of a row in XML, in the order the layout writes them (the account's members
# are written into the layout instead).
_XML_TEXTS = [
    _member(item)
    for item in _LAYOUT
    if not isinstance(item, str) and _member(item) not in _ACCOUNT
]


def _xml_select(builder: RecordBuilder) -> list[RecordSql]:
    """The texts of ``_XML_TEXTS`` (a null member is written as an empty one) and the
    score's own names."""
    members = [
        (f"coalesce({_MEMBERS[key]}, '')", _params(builder, key)) for key in _XML_TEXTS
    ]
    return [_array(members), _own_names(builder)]


# What XML cannot carry, dropped: the control characters (bytes of their own in UTF-8;
# NUL, which joins a record's texts, is never in a PostgreSQL text) and U+FFFE, U+FFFF
# (a surrogate is never in valid UTF-8).
_NOT_XML_BYTES = bytes(range(1, 0x20)).translate(None, b"\t\n\r")
_NONCHARACTERS = ("\ufffe".encode(), "\uffff".encode())
_NONCHARACTER_LEAD = _NONCHARACTERS[0][:2]


def _escaped(texts: list[bytes]) -> list[bytes]:
    """xml_text() of every text (UTF-8), in a few passes in C over them joined."""
    joined = b"\x00".join(texts).translate(None, _NOT_XML_BYTES)
    if _NONCHARACTER_LEAD in joined:  # rare: a search is cheaper than two replaces
        for noncharacter in _NONCHARACTERS:
            joined = joined.replace(noncharacter, b"")
    joined = joined.replace(b"&", b"&amp;").replace(b"<", b"&lt;")
    return joined.replace(b">", b"&gt;").split(b"\x00")


_TEMPLATES_KEPT = 256


class _Templates:
    """The layout for one account as printf-style templates (``%`` is several times
    quicker than ``str.format`` with some sixty fields), one per pattern of empty texts
    and set of category names: each ``%s`` takes the next text that is not empty; the
    account's members and the category names are written in, escaped, once."""

    def __init__(self, builder: RecordBuilder) -> None:
        self.builder = builder
        self.account = {
            key: getattr(builder, attribute) for key, attribute in _ACCOUNT.items()
        }
        self.kept: dict[tuple[tuple[bool, ...], bytes | None], bytes] = {}

    def get(self, empty: tuple[bool, ...], own_names: bytes | None) -> bytes:
        """The template of a row whose texts are ``empty`` or not, and whose score has
        ``own_names`` (JSON), or None for the account's current names."""
        key = (empty, own_names)
        template = self.kept.get(key)
        if template is None:
            if len(self.kept) >= _TEMPLATES_KEPT:
                self.kept.clear()
            template = self.kept[key] = self._make(empty, own_names)
        return template

    def _make(self, empty: tuple[bool, ...], own_names: bytes | None) -> bytes:
        names = _names(self.builder, own_names)
        out = []
        at = 0  # the next text
        for item in _LAYOUT:
            if isinstance(item, str):
                out.append(item)
            elif _member(item) in _ACCOUNT:
                element = xml_element(item[1], self.account[_member(item)])
                out.append(element.replace("%", "%%"))
            else:
                text = "" if empty[at] else "%s"
                at += 1
                if item[0] == "el":
                    tag = item[1]
                    out.append(f"<{tag}>{text}</{tag}>" if text else f"<{tag}/>")
                elif item[0] in ("first", "last"):
                    out.append(f'<name id="{item[0]}">{text}</name>')
                else:
                    slot = item[1]
                    name = xml_attribute(names[slot - 1]).replace("%", "%%")
                    out.append(f"<cat{slot} name={name}>{text}</cat{slot}>")
        return "".join(out).encode()


def _xml_document(builder: RecordBuilder, rows: Generator[tuple]) -> Iterator[bytes]:
    """The ``<calldrips>`` document, in pieces of about ``STREAM_PIECE``: each row's
    texts (UTF-8, as PostgreSQL sent them) escaped and filled into its template."""
    get = _Templates(builder).get
    with closing(rows):  # an error here ends the COPY at once
        first = next(rows, None)
        if first is None:
            yield f"{XML_DECLARATION}<calldrips/>".encode()
            return
        buffer = [f"{XML_DECLARATION}<calldrips>".encode()]
        size = 0
        for texts, own_names in chain((first,), rows):
            texts = _escaped(texts)
            part = get(tuple(map(not_, texts)), own_names) % tuple(filter(None, texts))
            buffer.append(part)
            size += len(part)
            if size >= STREAM_PIECE:
                yield b"".join(buffer)
                buffer, size = [], 0
    buffer.append(b"</calldrips>")
    yield b"".join(buffer)
