"""Part 12 of ``make bench``: a call's final status -> its CRM write-back (an ADF e-mail)
received by an SMTP server on loopback, p50 and p99 over BENCH_WRITEBACKS calls, against
a no-op task's round trip through the same broker, the same ``default`` queue and the
same worker (the Procfile's ``worker``, which sends the outbox).

``measure`` (called by ``bench/run.py`` once gunicorn and the Procfile's workers run, with
EMAIL_URL naming ``SMTP_PORT``) seeds a dealer in its own organization that writes every
call's end back to its CRM and has no agents, with ``no_agent_policy="end"``: each lead
posted to ``/api/nl`` ends NOAGENT at its first setup and stores its write-back, so what
is timed is the message's path alone. bench/mail.py posts and serves SMTP, and counts
the write-backs it receives that are invalid against the ADF 1.0 DTD
(``invalid_adf_reasons``, on ../shared/spec/adf-1.0.dtd): the count must be 0.
"""

from __future__ import annotations

import email
import email.policy
import json
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

from lxml import etree

from bench.against_noop import noop_line, posted_line, rows_against_noop, run_module
from bench.harness import free_port
from bench.seeds import script
from bench.seeds import writeback as writeback_seed

ROOT = Path(__file__).resolve().parent.parent
COUNT = int(os.environ.get("BENCH_WRITEBACKS", "200"))
RATE = float(os.environ.get("BENCH_WRITEBACK_RATE", "5")) or 5.0
CLIENTS = 2
WAIT = float(os.environ.get("BENCH_WRITEBACK_WAIT", "120"))
LEAD_PHONE = "303-555-0147"
AIM_MS = 2000.0
# The bench's SMTP server: the workers are told it before they start.
SMTP_PORT = free_port()
DTD_PATH = ROOT.parent / "shared" / "spec" / "adf-1.0.dtd"


@cache
def _adf_dtd() -> etree.DTD:
    return etree.DTD(str(DTD_PATH))


def invalid_adf_reasons(content: bytes) -> list[str]:
    """Why the ADF document attached to an e-mail (as the SMTP server received it) is not
    valid against the ADF 1.0 DTD: empty when it is; one reason when there is none."""
    message = email.message_from_bytes(content, policy=email.policy.default)
    documents = [
        part.get_content()
        for part in message.walk()
        if part.get_content_type() == "text/xml"
    ]
    if not documents:
        return ["no ADF document attached"]
    reasons: list[str] = []
    for document in documents:
        body = document.encode() if isinstance(document, str) else document
        try:
            root = etree.fromstring(body, etree.XMLParser(resolve_entities=False))
        except etree.XMLSyntaxError as error:
            reasons.append(f"not well-formed: {error}")
            continue
        if not _adf_dtd().validate(root):
            reasons += [str(e) for e in _adf_dtd().error_log.filter_from_errors()]
    return reasons


def measure(
    port: int, env: dict[str, str], python: Callable[..., str]
) -> tuple[list[tuple[Any, ...]], list[str]]:
    """Part 12's rows (fields of bench/run.py's Row) and detail lines."""
    seed = json.loads(python(env, script(writeback_seed)))
    options = {
        "port": port,
        "smtp_port": SMTP_PORT,
        "api_user": seed["api_user"],
        "api_key": seed["key"],
        "vendor_id": seed["vendor_id"],
        "phone": LEAD_PHONE,
        "count": COUNT,
        "rate": RATE,
        "clients": CLIENTS,
        "timeout": WAIT,
    }
    result = run_module("bench.mail", options, env)
    rows = rows_against_noop(
        result,
        count=COUNT,
        measure="12 call final status -> CRM write-back at the SMTP server",
        queue="default",
        aim_ms=AIM_MS,
    )
    details = [
        f"{posted_line(result, part='12', rate=RATE)}, {result['messages']} write-backs "
        f"stored, {len(result['latencies'])} received and timed, "
        f"{result['never_received']} never received within {result['timeout']:.0f} s; "
        + noop_line(result, count=COUNT),
        f"  12 write-backs invalid against the ADF 1.0 DTD: {result['invalid_adf']} of "
        f"{result['received']} received (must be 0)"
        + (f"; the first: {result['invalid_reason']}" if result["invalid_adf"] else ""),
    ]
    if result["latencies"]:
        details.append(
            f"  12 call final status -> write-back received: max "
            f"{max(result['latencies']):,.1f} ms"
        )
    return rows, details
