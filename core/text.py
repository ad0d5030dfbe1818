"""Text made safe for what it is written into. Values already stored (before the
interfaces refused control characters, or typed in the admin) may hold any character:
every writer of XML, e-mail headers, CSV and logs cleans what it writes."""

from __future__ import annotations

import re

# Characters XML 1.0 cannot carry (control characters, lone surrogates, U+FFFE/U+FFFF).
NOT_XML = "\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff"
_NOT_XML = re.compile(f"[{NOT_XML}]")
# Any C0 control or DEL, TAB, LF and CR included: what a one-line value cannot hold.
_CONTROL = re.compile("[\x00-\x1f\x7f]+")


def xml_safe(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot carry (lxml refuses them)."""
    return _NOT_XML.sub("", text) if _NOT_XML.search(text) else text


def one_line(text: str) -> str:
    """``text`` on one line: each run of control characters (line breaks too) a space. For
    an e-mail header (a CR/LF there would start another header) or a one-line field."""
    return " ".join(_CONTROL.sub(" ", text).split()) if _CONTROL.search(text) else text


def csv_safe(text: str) -> str:
    """A CSV cell without the control characters a spreadsheet shows as garbage; TAB, LF
    and CR stay (the writer quotes the cell)."""
    return xml_safe(text).replace("\x7f", "")


# A cell a spreadsheet would run as a formula: one that starts with = + - @ (or a TAB or
# CR before one). A plain number (+13035550123, -5) is no formula and stays as it is.
_FORMULA_START = re.compile("^[=+\\-@\t\r]")
_NUMBER = re.compile("[+-]?[0-9]+")


def spreadsheet_safe(text: str) -> str:
    """``csv_safe(text)``, and a cell a spreadsheet would run as a formula turned into
    text (a leading apostrophe): an audit export opened in Excel runs nothing."""
    text = csv_safe(text)
    if _FORMULA_START.match(text) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text
