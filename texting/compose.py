"""What a text says and when it may go: templates with placeholders, the lead's local
time, quiet hours, and the keywords a lead's reply is read for."""

from __future__ import annotations

import re
import string
import unicodedata
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from phonenumbers import timezone as number_zones

from calls.models import Call

PLACEHOLDERS = ("first_name", "vehicle", "dealer", "agent", "opening")
# What a lead texts to stop, start again, or ask what this is (the carriers' keywords).
START_WORDS = frozenset({"START", "UNSTOP"})
HELP_WORDS = frozenset({"HELP", "INFO"})
NEGATIONS = frozenset({"no", "not", "don't", "dont", "never", "stop"})
OPT_OUT_CONFIRMATION = (
    "You are unsubscribed from {dealer} texts; no more messages will be sent. "
    "Reply START to resume."
)
OPT_IN_CONFIRMATION = "You will get texts from {dealer} again. Reply STOP to opt out."


def placeholders_unknown(template: str) -> list[str]:
    """The placeholders of ``template`` that are not ``PLACEHOLDERS`` (raises ValueError
    for a brace left open)."""
    return [
        name
        for _, name, _, _ in string.Formatter().parse(template)
        if name is not None and name not in PLACEHOLDERS
    ]


class _Values(dict[str, str]):
    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def render(template: str, **values: str) -> str:
    """``template`` with its placeholders filled in; an unknown one is left as written."""
    return string.Formatter().vformat(template, (), _Values(values)).strip()


def vehicle_of(call: Call) -> str:
    words = [call.called_on_year, call.called_on_make, call.called_on_model]
    return " ".join(word for word in words if word) or "vehicle you asked about"


def lead_zone(phone: str, fallback: str) -> ZoneInfo:
    """The lead's timezone: the number's own when it has exactly one (most US area codes),
    else ``fallback`` (the account's)."""
    try:
        zones = number_zones.time_zones_for_number(phonenumbers.parse(phone))
    except phonenumbers.NumberParseException:
        zones = ()
    if len(zones) == 1:
        try:
            return ZoneInfo(
                zones[0]
            )  # "Etc/Unknown" for a number without one: not found
        except (ZoneInfoNotFoundError, ValueError):
            pass
    return ZoneInfo(fallback)


def opening_words(opening: datetime, zone: ZoneInfo, now: datetime) -> str:
    """A schedule opening as a lead reads it: "9:00 AM tomorrow", "9:00 AM on Monday"."""
    local = opening.astimezone(zone)
    clock = local.strftime("%I:%M %p").lstrip("0")
    days = (local.date() - now.astimezone(zone).date()).days
    if days <= 0:
        return f"{clock} today"
    if days == 1:
        return f"{clock} tomorrow"
    if days < 7:
        return f"{clock} on {local:%A}"
    return f"{clock} on {local:%B} {local.day}"


def _at(day: date, clock: time, zone: ZoneInfo) -> datetime:
    return datetime.combine(day, clock, tzinfo=zone)


def allowed_from(at: datetime, *, zone: ZoneInfo, start: time, end: time) -> datetime:
    """The first moment from ``at`` outside quiet hours: ``at`` itself between ``start``
    and ``end`` local time, else ``start`` of that morning or the next (a wall-clock
    time, so a daylight-saving change in between moves it in UTC, not on the clock)."""
    local = at.astimezone(zone)
    if start <= local.time() < end:
        return at
    day = local.date() if local.time() < start else local.date() + timedelta(days=1)
    return _at(day, start, zone)


def words_of(body: str) -> list[str]:
    return re.findall(r"[a-z']+", body.lower())


# Opt-out words (CONTRACT.md "Texting"): the FCC's (2025), stopall, and Spanish ones; the
# stop-sign emoji reads as "stop". Two-word phrases are joined first ("opt out").
OPT_OUT_WORDS = frozenset(
    {
        "stop", "stopall", "quit", "end", "revoke", "optout", "cancel", "unsubscribe",
        "alto", "parar", "cancelar", "baja",
    }
)  # fmt: skip
# Words that may follow an opt-out word in the same request ("Stop texting me", "STOP
# please", "opt out now", "baja por favor"); any other word makes it something else
# ("I'll stop by Saturday", "End of day works", "Cancel Tuesday, can we do Wednesday?").
SAME_REQUEST = OPT_OUT_WORDS | frozenset(
    {
        "please", "pls", "plz", "now", "thanks", "thank", "you", "me", "us", "texting",
        "text", "texts", "messaging", "message", "messages", "sending", "all", "it",
        "this", "number", "immediately", "por", "favor", "ya", "mensajes", "de",
    }
)  # fmt: skip
# Letters of other scripts that look like Latin ones (Cyrillic, Greek), as a lead's phone
# or a spammer may send them; NFKC folds full-width letters already.
_LOOK_ALIKES = str.maketrans(
    "аеорсухѕіјԁԛԝкмнтвпοαερτυνκιΟ",
    "aeopcyxsijdqwkmhtbnoaeptuvkio",
)
_STOP_SIGN = "\U0001f6d1"


def folded_words(body: str) -> list[str]:
    """The message's words after Unicode compatibility folding: width (NFKC), case,
    look-alike letters, accents and punctuation; the stop sign as "stop"."""
    text = unicodedata.normalize("NFKC", body.replace(_STOP_SIGN, " stop ")).casefold()
    text = unicodedata.normalize("NFKD", text.translate(_LOOK_ALIKES))
    text = "".join(c for c in text if not unicodedata.combining(c))
    words = re.findall(r"[a-z]+", text)
    # "opt out", "opt-out" and "opt. out" are one word, as "optout" is.
    joined: list[str] = []
    for word in words:
        if word == "out" and joined and joined[-1] == "opt":
            joined[-1] = "optout"
        else:
            joined.append(word)
    return joined


def opts_out(body: str) -> bool:
    """Whether a reply revokes consent: an opt-out word as the whole message, or first
    and followed only by words of the same request (CONTRACT.md "Texting")."""
    words = folded_words(body)
    return bool(words) and words[0] in OPT_OUT_WORDS and set(words) <= SAME_REQUEST


# Replies that read like an opt-out without its words (CONTRACT.md "Texting"): texting to
# the number pauses until a person confirms or dismisses it on the thread. Matched as
# whole words after the same folding ("don't" is "don t"); "unsubscribe", "optout",
# "revoke" and "stopall" anywhere in a longer message read the same way.
POSSIBLE_OPT_OUT_PHRASES = (
    "take me off", "take my number off", "remove me", "remove my number",
    "delete my number", "lose my number", "opt me out", "leave me alone",
    "don't text", "dont text", "do not text", "don't message", "do not message",
    "don't contact", "dont contact", "do not contact", "don't send", "do not send",
    "stop texting", "stop messaging", "stop sending", "stop contacting",
    "no more texts", "no more text", "no more messages", "no more texting",
    "not text me", "never text me",
    "no me escriban", "no me escribas", "no me escriba", "no me manden",
    "no me envien", "no me contacten", "dejen de", "deja de", "quitame", "sacame",
    "darme de baja", "dar de baja",
)  # fmt: skip
_POSSIBLE_ANYWHERE = frozenset({"unsubscribe", "optout", "revoke", "stopall"})


def reads_like_opt_out(body: str) -> bool:
    """Whether a reply that is not an opt-out (``opts_out``) may still mean one: a person
    decides (CONTRACT.md "Texting")."""
    words = folded_words(body)
    if _POSSIBLE_ANYWHERE & set(words):
        return True
    text = f" {' '.join(words)} "
    return any(
        f" {' '.join(folded_words(phrase))} " in text
        for phrase in POSSIBLE_OPT_OUT_PHRASES
    )


def keyword_of(body: str) -> str:
    """The message as one carrier keyword ("STOP", "HELP" ...): the body alone, upper-case,
    without spaces or punctuation around it."""
    return re.sub(r"[^A-Za-z]", "", body.strip()).upper()


def asks_for_a_call(body: str, keywords: str) -> bool:
    """Whether a reply asks to be called: it holds one of ``keywords`` (comma-separated
    phrases, matched as whole words) and no negation ("don't call me")."""
    words = words_of(body)
    if NEGATIONS & set(words):
        return False
    text = " " + " ".join(words) + " "
    return any(
        f" {' '.join(words_of(phrase))} " in text
        for phrase in keywords.split(",")
        if words_of(phrase)
    )
