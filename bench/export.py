"""``make bench`` part 6: the scored call data export (``GET /api/scoreddata``) over
10,000 and 100,000 calls, in JSON and XML, against PostgreSQL's own ``COPY (SELECT ...)
TO STDOUT`` of the same rows, and the serving process's peak memory at each size.

The calls are written by SQL (``INSERT ... SELECT`` over ``generate_series``) from one
call and one score the service made, so 100,000 rows take seconds and carry every member
a real record has; every other call is scored. One gunicorn worker serves the exports, so
its peak resident memory (``VmHWM``) after the 10,000-call exports and after the
100,000-call ones shows how memory grows with the size of the answer.
"""

from __future__ import annotations

import http.client
import json
import time
from dataclasses import dataclass
from pathlib import Path

import psycopg

SIZES = (10_000, 100_000)
# Calls are received this far apart, so 100,000 span about 23 days.
SPACING_SECONDS = 20


def _columns(conn: psycopg.Connection, table: str, *, without: set[str]) -> list[str]:
    names = conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [name for (name,) in names if name not in without]


def fill(dsn: str, template_call: int, size: int) -> None:
    """``size - 1`` copies of the template call, ``SPACING_SECONDS`` apart, every other one
    scored like the template."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        calls = _columns(conn, "calls_call", without={"id", "received_at"})
        listed = ", ".join(calls)
        conn.execute(
            f"INSERT INTO calls_call (received_at, {listed}) "
            f"SELECT c.received_at + g * interval '{SPACING_SECONDS} seconds', "
            f"{', '.join('c.' + name for name in calls)} "
            "FROM calls_call c, generate_series(1, %s) g WHERE c.id = %s",
            (size - 1, template_call),
        )
        scores = _columns(conn, "scoring_score", without={"id", "call_id"})
        listed = ", ".join(scores)
        conn.execute(
            f"INSERT INTO scoring_score (call_id, {listed}) "
            f"SELECT c.id, {', '.join('s.' + name for name in scores)} "
            "FROM calls_call c, scoring_score s "
            "WHERE s.call_id = %s AND c.account_id = "
            "(SELECT account_id FROM calls_call WHERE id = %s) AND c.id <> %s AND c.id %% 2 = 0",
            (template_call, template_call, template_call),
        )
        conn.execute("ANALYZE calls_call; ANALYZE scoring_score")


# The same rows and members the export reads, as PostgreSQL writes them itself.
COPY_SQL = """
COPY (
  SELECT c.id, c.altid, c.received_at, c.source, c.status, c.first_name, c.last_name,
         c.email, c.phone, c.call_notes, c.update_notes, c.attempts, c.duration,
         c.recording_url, c.response_time, c.summary, c.transcription,
         c.inbound_tracking_number, u.first_name, u.last_name, s.*
  FROM calls_call c
  LEFT JOIN users_user u ON u.id = c.agent_id
  LEFT JOIN scoring_score s ON s.call_id = c.id
  WHERE c.account_id = {account}
  ORDER BY c.received_at, c.id
) TO STDOUT
"""


def copy_seconds(dsn: str, account: int) -> tuple[float, int]:
    """Seconds and bytes for COPY of the account's rows, read to the end."""
    started = time.perf_counter()
    size = 0
    with (
        psycopg.connect(dsn) as conn,
        conn.cursor() as cursor,
        cursor.copy(COPY_SQL.format(account=int(account))) as copy,  # type: ignore[arg-type]
    ):
        for block in copy:
            size += len(block)
    return time.perf_counter() - started, size


def export_seconds(port: int, key: str, return_type: str) -> tuple[float, int]:
    """Seconds and bytes for the whole export of the account's calls, read to the end."""
    path = (
        f"/api/scoreddata?apikey={key}&fromDate=2000-01-01&toDate=2100-12-31"
        f"&returnType={return_type}"
    )
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    connection.request("GET", path)
    response = connection.getresponse()
    if response.status != 200:
        raise RuntimeError(
            f"export answered {response.status}: {response.read()[:300]!r}"
        )
    size = 0
    while block := response.read(256 * 1024):
        size += len(block)
    connection.close()
    return time.perf_counter() - started, size


def peak_rss_mb(pid: int) -> float:
    """A process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM")


def worker_pid(master: int) -> int:
    """The one worker of a gunicorn master."""
    for _ in range(100):
        children = Path(f"/proc/{master}/task/{master}/children").read_text().split()
        if children:
            return int(children[0])
        time.sleep(0.1)
    raise RuntimeError("gunicorn started no worker")


@dataclass
class ExportFigures:
    size: int
    copy_s: float
    copy_bytes: int
    json_s: float
    json_bytes: int
    xml_s: float
    xml_bytes: int
    peak_mb: float  # the worker's peak after this size's exports


def seed_json(size_ids: str) -> dict[int, dict]:
    return {int(size): ids for size, ids in json.loads(size_ids).items()}
