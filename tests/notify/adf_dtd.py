"""The ADF 1.0 DTD (/work/shared/spec/adf-1.0.dtd) and what it says of a document."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

DTD_PATH = Path(__file__).resolve().parents[3] / "shared" / "spec" / "adf-1.0.dtd"


@cache
def adf_dtd() -> etree.DTD:
    return etree.DTD(str(DTD_PATH))


def dtd_errors(document: str | bytes) -> list[str]:
    """Why the document is not valid ADF 1.0; empty when it is."""
    body = document.encode() if isinstance(document, str) else document
    root = etree.fromstring(body, etree.XMLParser(resolve_entities=False))
    dtd = adf_dtd()
    if dtd.validate(root):
        return []
    return [str(error) for error in dtd.error_log.filter_from_errors()]
