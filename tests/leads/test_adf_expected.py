"""parse_adf gives, for every stored document, exactly the leads (or the refusal) it gave
when the documents were recorded.

``data/adf_expected.jsonl`` holds one document a line: every document the tests of
tests/leads and tests/notify handed to parse_adf up to 16 KiB (the samples of
/work/shared/adf-samples among them), and 100 of the property tests' generated ones, as
``text`` (parsed as str), ``utf8`` or ``base64`` (parsed as bytes). With each, what
parse_adf returned: ``leads``, each lead's fields that differ from the defaults (read back
with ``ParsedLead.from_dict``, so every field is compared), or ``error``, the AdfError's
message, ``too_large`` and ``not_adf``. A change of the parser's design must leave every
line as it is; a deliberate change of behaviour rewrites the lines it changes.
"""

import base64
import json
from pathlib import Path
from typing import Any

from leads.adf import AdfError, ParsedLead, parse_adf

EXPECTED = Path(__file__).resolve().parent / "data" / "adf_expected.jsonl"
SAMPLES = Path(__file__).resolve().parents[3] / "shared" / "adf-samples"


def stored() -> list[dict[str, Any]]:
    with EXPECTED.open(encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


ENTRIES = stored()


def document(entry: dict[str, Any]) -> str | bytes:
    if "text" in entry:
        text: str = entry["text"]
        return text
    if "utf8" in entry:
        return str(entry["utf8"]).encode("utf-8")
    return base64.b64decode(entry["base64"])


def outcome(data: str | bytes) -> list[ParsedLead] | tuple[str, bool, bool]:
    """The leads parse_adf returns, or its refusal as (message, too_large, not_adf)."""
    try:
        return parse_adf(data)
    except AdfError as error:
        return (str(error), error.too_large, error.not_adf)


def expected(entry: dict[str, Any]) -> list[ParsedLead] | tuple[str, bool, bool]:
    if "error" in entry:
        message, too_large, not_adf = entry["error"]
        return (message, too_large, not_adf)
    return [ParsedLead.from_dict(lead) for lead in entry["leads"]]


def test_the_stored_documents_cover_leads_and_refusals():
    refused = [entry for entry in ENTRIES if "error" in entry]

    assert len(ENTRIES) > 400
    assert 100 < len(refused) < len(ENTRIES) - 100
    assert {kind for entry in ENTRIES for kind in entry} >= {"text", "utf8", "base64"}


def test_every_stored_document_parses_as_recorded():
    # One test over every line (a test per line cost 20 s of the suite): the failure
    # names the lines that differ.
    differing = [
        number
        for number, entry in enumerate(ENTRIES, start=1)
        if outcome(document(entry)) != expected(entry)
    ]

    assert differing == []


def test_every_sample_is_stored():
    on_disk = sorted(SAMPLES.glob("*.xml"))
    assert on_disk, f"no samples found in {SAMPLES}"
    stored_bytes = {document(entry) for entry in ENTRIES if "text" not in entry}

    assert [
        path.name for path in on_disk if path.read_bytes() not in stored_bytes
    ] == []
