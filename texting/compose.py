"""What a text says and when it may go: templates with placeholders, the lead's local
time, quiet hours, and the keywords a lead's reply is read for."""

from __future__ import annotations

import re
import string
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import phonenumbers
from phonenumbers import timezone as number_zones

from calls.models import Call

PLACEHOLDERS = ("first_name", "vehicle", "dealer", "agent", "opening")
# What a lead texts to stop, start again, or ask what this is (the carriers' keywords).
STOP_WORDS = frozenset({"STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"})
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
