"""Hostile ADF documents, in-process: how long ``parse_adf`` takes to refuse each one (or,
for the element with 80,000 attributes, to read it), against parsing the bench lead once.

The tests assert what happens to these documents (refused, why, and how far they get);
only this measures how long it takes, so a loaded machine cannot fail the suite.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from bench.parse import per_call_us
from leads.adf import MAX_ADF_BYTES, AdfError, parse_adf

_LEAD_BODY = (
    "<prospect><id source='crm'>77</id><customer><contact><name part='full'>Ann Lee</name>"
    "<phone>5145550100</phone></contact><comments>{comments}</comments></customer>"
    "<vendor><vendorname>Dealer</vendorname></vendor></prospect>"
)


def _adf(comments: str = "", doctype: str = "") -> bytes:
    body = _LEAD_BODY.format(comments=comments)
    return f'<?xml version="1.0"?>{doctype}<adf>{body}</adf>'.encode()


def _billion_laughs() -> bytes:
    entities = ['<!ENTITY lol0 "lol">'] + [
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10)
    ]
    return _adf("&lol9;", f"<!DOCTYPE adf [{''.join(entities)}]>")


def _quadratic_blowup() -> bytes:
    return _adf("&a;" * 15_000, f'<!DOCTYPE adf [<!ENTITY a "{"x" * 50_000}">]>')


def _many_attributes() -> bytes:
    many = " ".join(f'a{i}="1"' for i in range(80_000))
    return f"<adf><prospect><vehicle {many}/></prospect></adf>".encode()


# (name, document, refused): what tests/leads/test_adf_hostile.py feeds parse_adf.
DOCUMENTS: list[tuple[str, Callable[[], bytes], bool]] = [
    ("billion laughs", _billion_laughs, True),
    ("quadratic blowup", _quadratic_blowup, True),
    (
        "external entity (file)",
        lambda: _adf("&x;", '<!DOCTYPE adf [<!ENTITY x SYSTEM "file:///etc/passwd">]>'),
        True,
    ),
    ("prolog: 100k '<?xml '", lambda: b"<?xml " * 100_000 + b"?><adf/>", True),
    (
        "prolog: 50k '<?xml encoding='",
        lambda: b"<?xml encoding=" * 50_000 + b"?><adf/>",
        True,
    ),
    ("prolog: 500k '<?'", lambda: b"<?" * 500_000, True),
    ("prolog: 200k '<?a?>'", lambda: b"<?a?>" * 200_000, True),
    ("prolog: 80k '<!DOCTYPE a '", lambda: b"<!DOCTYPE a " * 80_000, True),
    (
        "prolog: 80k '<!DOCTYPE a>'",
        lambda: b"<!DOCTYPE a>" * 80_000 + b"<adf/>",
        True,
    ),
    (
        "100k-deep nesting",
        lambda: ("<adf>" + "<x>" * 100_000 + "</x>" * 100_000 + "</adf>").encode(),
        True,
    ),
    ("over 1 MiB", lambda: _adf("x" * MAX_ADF_BYTES), True),
    ("80,000 attributes", _many_attributes, False),
]


@dataclass
class HostileTiming:
    name: str
    size: int
    refused: bool  # False: a document parse_adf reads (the time is reading it)
    us: float
    lead_us: float

    @property
    def ratio(self) -> float:
        return self.us / self.lead_us


def _refuse(data: bytes) -> None:
    try:
        parse_adf(data)
    except AdfError:
        return
    raise AssertionError("a hostile document was accepted")


def time_hostile(lead: bytes) -> list[HostileTiming]:
    """Each document's refusal (or read) time, and the bench lead's parse time measured
    right before it (so a machine whose load changes mid-run skews both alike), in µs."""
    timings = []
    for name, make, refused in DOCUMENTS:
        data = make()
        lead_us = per_call_us(parse_adf, lead, seconds=0.1)
        us = per_call_us(_refuse if refused else parse_adf, data, seconds=0.1)
        timings.append(HostileTiming(name, len(data), refused, us, lead_us))
    return timings
