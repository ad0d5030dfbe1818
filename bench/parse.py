"""ADF parse time per document, in-process: ``leads.adf.parse_adf(bytes)`` against a bare
``lxml.etree.fromstring`` of the same bytes (min of several repeats, timeit-style)."""

from __future__ import annotations

import timeit
from dataclasses import dataclass
from pathlib import Path

from lxml import etree

from leads.adf import AdfError, parse_adf

REPEATS = 7
# Only to pick the sample: reads nothing outside the bytes and expands no entity.
_CHECKER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False)


@dataclass
class ParseTiming:
    name: str
    size: int
    parse_adf_us: float
    fromstring_us: float

    @property
    def ratio(self) -> float:
        return self.parse_adf_us / self.fromstring_us


def per_call_us(function, argument: bytes, seconds: float = 0.2) -> float:  # type: ignore[no-untyped-def]
    """The best of REPEATS runs of ``function(argument)``, in µs per call."""
    timer = timeit.Timer(lambda: function(argument))
    number, elapsed = timer.autorange()
    # Each repeat runs about ``seconds``.
    number = max(number, int(number * seconds / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=REPEATS, number=number)) / number * 1e6


def time_document(name: str, data: bytes) -> ParseTiming:
    parse_adf(data)  # raises if the service would refuse it
    return ParseTiming(
        name,
        len(data),
        per_call_us(parse_adf, data),
        per_call_us(etree.fromstring, data),
    )


def largest_sample(directory: Path) -> tuple[Path | None, list[str]]:
    """The largest sample that is well-formed XML and an ADF lead the service accepts, and
    notes on larger ones passed over. (None, notes) when there is none."""
    notes: list[str] = []
    if not directory.is_dir():
        return None, [f"{directory} not found: sample skipped"]
    for path in sorted(directory.glob("*.xml"), key=lambda p: -p.stat().st_size):
        data = path.read_bytes()
        try:
            etree.fromstring(data, _CHECKER)
        except etree.XMLSyntaxError:
            notes.append(f"{path.name} ({len(data)} B) is not well-formed: passed over")
            continue
        try:
            parse_adf(data)
        except AdfError as error:
            notes.append(
                f"{path.name} ({len(data)} B) refused by parse_adf ({error}): passed over"
            )
            continue
        return path, notes
    return None, [*notes, f"no well-formed ADF sample in {directory}"]
