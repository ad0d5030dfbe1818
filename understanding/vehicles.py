"""Vehicles as they are said: "C R V" and "CRV" are the CR-V, "F 150" the F-150. The
form's vehicle is a hint that lets a model be recognised however it is spelled out; a
model is otherwise recognised only from a list of known model names, never guessed from
the word after a make ("my Nissan log" names no model)."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from understanding import patterns as p
from understanding.facts import (
    Context,
    Evidence,
    Line,
    TradeIn,
    Vehicle,
    VehicleFact,
    evidence,
)

MAKES = {
    "acura": "Acura",
    "audi": "Audi",
    "bmw": "BMW",
    "buick": "Buick",
    "cadillac": "Cadillac",
    "chevrolet": "Chevrolet",
    "chevy": "Chevrolet",
    "chrysler": "Chrysler",
    "dodge": "Dodge",
    "fiat": "Fiat",
    "ford": "Ford",
    "gmc": "GMC",
    "genesis": "Genesis",
    "honda": "Honda",
    "hyundai": "Hyundai",
    "infiniti": "Infiniti",
    "jaguar": "Jaguar",
    "jeep": "Jeep",
    "kia": "Kia",
    "lexus": "Lexus",
    "lincoln": "Lincoln",
    "mazda": "Mazda",
    "mercedes": "Mercedes-Benz",
    "mini": "Mini",
    "mitsubishi": "Mitsubishi",
    "nissan": "Nissan",
    "porsche": "Porsche",
    "ram": "Ram",
    "subaru": "Subaru",
    "tesla": "Tesla",
    "toyota": "Toyota",
    "volkswagen": "Volkswagen",
    "vw": "Volkswagen",
    "volvo": "Volvo",
}
# Known model names by make (the common ones dealers hear); spelled as the maker does.
MODELS = {
    "Toyota": "Camry Corolla RAV4 Highlander Tacoma Tundra Prius Sienna 4Runner Sequoia",
    "Honda": "Civic Accord CR-V HR-V Pilot Odyssey Passport Ridgeline Fit",
    "Ford": "F-150 F-250 Mach-E Mustang Explorer Escape Edge Bronco Ranger Expedition Maverick Focus Fusion",
    "Chevrolet": "Silverado Equinox Malibu Tahoe Suburban Traverse Colorado Blazer Trax Bolt Camaro Impala",
    "GMC": "Sierra Yukon Acadia Terrain Canyon",
    "Nissan": "Altima Sentra Rogue Pathfinder Frontier Titan Murano Leaf Versa Kicks Maxima",
    "Hyundai": "Elantra Sonata Tucson Santa-Fe Palisade Kona Ioniq",
    "Kia": "Soul Sorento Sportage Telluride Forte Optima Niro Carnival",
    "Jeep": "Wrangler Cherokee Grand-Cherokee Compass Renegade Gladiator",
    "Ram": "1500 2500",
    "Subaru": "Outback Forester Crosstrek Impreza Ascent Legacy WRX",
    "Mazda": "CX-5 CX-30 CX-9 Mazda3 Miata",
    "Volkswagen": "Jetta Passat Tiguan Atlas Golf Beetle",
    "Tesla": "Model-3 Model-Y Model-S Model-X",
    "Dodge": "Charger Challenger Durango Caravan",
}
_MODEL_NAMES = {
    model.replace("-", " ")
    if model.startswith(("Model-", "Santa-", "Grand-"))
    else model: make
    for make, models in MODELS.items()
    for model in models.split()
}
YEAR = re.compile(r"(?<!\w)((?:19[5-9]|20[0-4])\d)(?!\w)")
# Two-digit model years ("an '18 Civic", "my 19 Accord") are left alone: too easily a count.
_WORD = re.compile(r"[A-Za-z0-9]+")


_NOT_ALNUM = re.compile(r"[^a-z0-9]")
_NOT_DIGIT = re.compile(r"\D")


@functools.lru_cache(maxsize=4096)
def compact(text: str) -> str:
    """Letters and digits only, lower case: "C R V", "CR-V" and "crv" are the same."""
    return _NOT_ALNUM.sub("", text.lower())


# The known models by their letters and digits: "crv" is ("Honda", "CR-V").
_KNOWN = {compact(model): (make, model) for model, make in _MODEL_NAMES.items()}


@dataclass(frozen=True)
class Mention:
    """A vehicle word said in a line: the make or model as it is spelled properly, and
    where it starts in the line."""

    kind: str  # "make" or "model"
    name: str
    make: str
    start: int


# Numbers said as words inside a model name: "RAV four", "F one fifty", "Sierra fifteen
# hundred".
_NUMBER_WORDS = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "fifteen": "15",
    "twenty": "20",
    "twentyfive": "25",
    "thirty": "30",
    "fifty": "50",
    "hundred": "00",
}


def _windows(text: str, most: int = 4) -> Iterable[tuple[int, str, str]]:
    """Runs of up to ``most`` words: (where the run starts, its words, compact form); in
    a run of two words or more, numbers said as words are digits."""
    words = list(_WORD.finditer(text))
    for first in range(len(words)):
        for size in range(1, most + 1):
            run = words[first : first + size]
            if len(run) < size:
                break
            said = text[run[0].start() : run[-1].end()]
            folded = [compact(w.group(0)) for w in run]
            if size > 1:
                folded = [folded[0]] + [_NUMBER_WORDS.get(w, w) for w in folded[1:]]
            yield run[0].start(), said, "".join(folded)


def _same_model(said: str, model: str) -> bool:
    """The run of words said is the model: the same letters and digits, or nearly (one
    slip of the ear) for names of five letters or more with the same digits."""
    want = compact(model)
    if not want or not said:
        return False
    if said == want:
        return True
    if len(want) < 5 or abs(len(said) - len(want)) > 1:
        return False
    if _NOT_DIGIT.sub("", said) != _NOT_DIGIT.sub("", want):
        return False
    return difflib.SequenceMatcher(None, said, want).ratio() >= 0.85


def _distinct_words(model: str) -> list[str]:
    """The words of a model of several words that name it alone: those with a hyphen or
    with letters and digits ("Mach-E" of "Mustang Mach-E"), never a plain word or number
    ("Cross", "1500")."""
    words = model.split()
    if len(words) < 2:
        return []
    return [
        word
        for word in words
        if "-" in word or (re.search(r"\d", word) and re.search(r"[A-Za-z]", word))
    ]


def _as_a_name(said: str, make: str, text: str) -> bool:
    """A known model that is also an everyday word ("charger", "edge", "escape") is a
    vehicle only when said as a name: capitalised, or with its make in the line."""
    if not said.isalpha() or not said.islower():
        return True
    return any(MAKES.get(word) == make for word in re.findall(r"[a-z]+", text.lower()))


def mentions(text: str, hints: Iterable[tuple[str, str]] = ()) -> list[Mention]:
    """The makes and models said in ``text``, in order: known makes, known models and the
    hinted models (``(make, model)`` pairs, the form's; a distinct word of a hinted model
    names it: "Mach-E" is the form's "Mustang Mach-E")."""
    hinted = [
        (make, model, alias)
        for make, model in hints
        if model
        for alias in (model, *_distinct_words(model))
    ]
    found: list[Mention] = []
    taken: set[int] = set()
    for start, said, folded in sorted(_windows(text), key=lambda w: (w[0], -len(w[2]))):
        if start in taken:
            continue
        hint = next(
            (
                (make, model)
                for make, model, alias in hinted
                if _same_model(folded, alias)
            ),
            None,
        )
        known = _KNOWN.get(folded)
        if known and not hint and not _as_a_name(said, known[0], text):
            known = None
        if " " not in said and folded in MAKES:
            found.append(Mention("make", MAKES[folded], MAKES[folded], start))
            taken.add(start)
        elif hint or known:
            make, model = hint or known  # type: ignore[misc]
            if not model.isdigit() or make.lower() in text.lower():
                found.append(Mention("model", model, make, start))
                for char in range(start, start + len(said)):
                    taken.add(char)
    return found


def make_of(name: str) -> str:
    """The make a known model belongs to ("" when the model is not known)."""
    return _MODEL_NAMES.get(name, "")


def _year_near(text: str) -> str:
    found = YEAR.search(text)
    return found.group(1) if found else ""


def _vehicle_in(
    lines: Sequence[Line], hints: list[tuple[str, str]], skip: Vehicle
) -> tuple[Vehicle, list[Line]]:
    """The first vehicle said in ``lines``: its make (said, or the make of the model
    said), its model (a known one or a hinted one) and a year said in the same line;
    a vehicle the same as ``skip`` is passed over."""
    for line in lines:
        said = mentions(line.text, hints)
        models = [m for m in said if m.kind == "model"]
        makes = [m for m in said if m.kind == "make"]
        for model in models:
            if skip.model and compact(model.name) == compact(skip.model):
                continue
            maker = next((m.name for m in makes if m.name == model.make), model.make)
            return Vehicle(_year_near(line.text), maker, model.name), [line]
        for make in makes:
            if skip.make and make.name == skip.make:
                continue
            return Vehicle(_year_near(line.text), make.name, ""), [line]
    return Vehicle(), []


def _hints(context: Context) -> list[tuple[str, str]]:
    return [
        (context.called_on.make, context.called_on.model),
        (context.current.make, context.current.model),
    ]


def trade_window(lines: Sequence[Line]) -> list[Line]:
    """The lines about a trade-in: each that mentions one and the two after it."""
    indexes: set[int] = set()
    for line in lines:
        if p.TRADE.search(line.text):
            indexes.update(range(line.index, min(line.index + 3, len(lines))))
    return [lines[index] for index in sorted(indexes)]


def trade_in_of(lines: Sequence[Line], context: Context) -> TradeIn | None:
    """The trade-in as the lead told it: none when they said so (whatever the form says);
    the make, model and year said about it; or a trade-in of unknown make when they said
    they have one. Nothing when it was not discussed or the lead's answer is unclear."""
    window = trade_window(lines)
    if not window:
        return None
    lead = [line for line in window if line.side == "lead"]
    asked = [
        line for line in window if line.side == "agent" and p.TRADE.search(line.text)
    ]
    for line in lead:
        answers_question = any(
            question.index < line.index and question.text.rstrip().endswith("?")
            for question in asked
        )
        denied = p.NO_TRADE.search(line.text) or (
            answers_question and p.ANSWER_NO.search(line.text)
        )
        if denied and not mentions(line.text, _hints(context)):
            return TradeIn(False, Vehicle(), evidence(line))
    called = Vehicle("", context.called_on.make, context.called_on.model)
    hints = _hints(context)
    vehicle, found = _vehicle_in(lead, hints, called)
    if vehicle:
        return TradeIn(True, vehicle, evidence(*found))
    said_yes = [
        line
        for line in lead
        if p.TRADE.search(line.text) or p.ANSWER_YES.search(line.text)
    ]
    if not said_yes:
        return None
    # The agent named it ("Are you trading in your Civic?") and the lead said yes.
    vehicle, found = _vehicle_in(asked, hints, called)
    if vehicle and found[0].index < said_yes[0].index:
        return TradeIn(True, vehicle, evidence(*found, said_yes[0]))
    return TradeIn(True, Vehicle(), evidence(said_yes[0]))


def _named_in(
    lines: Sequence[Line], vehicle: Vehicle, context: Context
) -> tuple[Evidence, ...]:
    """Every line that names ``vehicle``: its model in any spelling, or its make when no
    model was said (not in the dealership's name)."""
    hints = _hints(context)[:1]
    naming = []
    for line in lines:
        said = mentions(_without(line, context.dealer).text, hints)
        if any(
            (vehicle.model and compact(m.name) == compact(vehicle.model))
            or (not vehicle.model and m.kind == "make" and m.name == vehicle.make)
            for m in said
        ):
            naming.append(line)
    return evidence(*naming)


def _without(line: Line, name: str) -> Line:
    """The line with ``name`` (the dealership's) blanked out."""
    if not name.strip():
        return line
    text = re.sub(re.escape(name.strip()), " ", line.text, flags=re.IGNORECASE)
    return replace(line, text=text)


def vehicle_of(
    lines: Sequence[Line], context: Context, trade_in: TradeIn | None
) -> VehicleFact | None:
    """The vehicle the call was about, as said: the form's model when it was said (in
    any spelling; not when it is the trade-in), else the first other known model or make
    said outside the talk of a trade-in and of the lead's own car; a year only when said
    with it."""
    about_trade = {line.index for line in trade_window(lines)}
    others = [line for line in lines if line.index not in about_trade]
    hints = _hints(context)
    traded = trade_in.vehicle if trade_in and trade_in.has else Vehicle()
    traded_model = compact(trade_in.vehicle.model) if trade_in else ""
    for line in lines:
        for mention in mentions(line.text, hints[:1]):
            if (
                mention.kind == "model"
                and context.called_on.model
                and compact(mention.name) == compact(context.called_on.model)
                and compact(mention.name) != traded_model
            ):
                year = _year_near(line.text)
                make = context.called_on.make or mention.make
                vehicle = Vehicle(year, make, mention.name)
                return VehicleFact(
                    vehicle, evidence(line), _named_in(lines, vehicle, context)
                )
    # What the lead said they want first, then what the agent offered; never the lead's
    # own car ("my 2015 Civic is great"), nor a make that is the dealership's name
    # ("Siobhan from Lakeside Honda").
    others = [
        _without(line, context.dealer)
        for line in others
        if not p.OWNED.search(line.text)
    ]
    ordered = [line for line in others if line.side == "lead"]
    ordered += [line for line in others if line.side != "lead"]
    vehicle, found = _vehicle_in(ordered, hints[:1], traded)
    if vehicle:
        return VehicleFact(
            vehicle,
            evidence(*(lines[line.index] for line in found)),
            _named_in(lines, vehicle, context),
        )
    return None
