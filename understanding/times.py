"""Days and times of day as people say them on the phone.

A day: "today", "tomorrow", "the day after tomorrow", a weekday ("Tuesday", "this
Friday", "next Tuesday": the first one after today, never today itself, except "this"
which may be today), a day of the month ("the 14th", "December 10th"). A time: "noon",
"midday", "quarter past two", "quarter to five", "half past four", "two thirty",
"10 30", "10:30", "ten a.m.", "Monday morning at nine", "at 2". Without am/pm (or morning,
afternoon, evening) hours 1-6 are afternoon hours and 7-11 morning hours, as dealers open.
A bare number is a time only after "at", "around", "about" or "by", and only when it is an
hour (1-12): "Tuesday at 53" holds no time.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable
from dataclasses import dataclass

from accounts.schedules import WEEKDAYS

NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
MINUTE_WORDS = {
    "o'clock": 0,
    "oclock": 0,
    "oh five": 5,
    "oh-five": 5,
    "ten": 10,
    "fifteen": 15,
    "twenty": 20,
    "twenty five": 25,
    "twenty-five": 25,
    "thirty": 30,
    "thirty five": 35,
    "thirty-five": 35,
    "forty": 40,
    "forty five": 45,
    "forty-five": 45,
    "fifty": 50,
    "fifty five": 55,
    "fifty-five": 55,
}
PAST_WORDS = {
    "quarter": 15,
    "a quarter": 15,
    "half": 30,
    "five": 5,
    "ten": 10,
    "twenty": 20,
    "twenty five": 25,
    "twenty-five": 25,
}
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)


def _alternatives(words: Iterable[str]) -> str:
    escaped = sorted((re.escape(word) for word in words), key=len, reverse=True)
    return "|".join(escaped).replace(r"\ ", r"[\s-]+").replace(r"\-", r"[\s-]+")


_HOUR_DIGIT = r"(?:1[0-2]|0?[1-9])"
_HOUR_ANY = rf"(?:{_HOUR_DIGIT}|{_alternatives(NUMBERS)})"
_PERIOD = r"(?:\s*(?P<period>a\.?\s?m\b\.?|p\.?\s?m\b\.?|in\s+the\s+(?:morning|afternoon|evening)|tonight))?"
_END = r"(?![\w:])"
# A number that counts something else: "about ten minutes", "at one point".
_NOT_TIME = (
    r"(?!\s+(?:minutes?|mins?|hours?|point|of|dollars|bucks|grand|thousand|hundred|"
    r"percent|miles|years?|days?|weeks?|months?|people|more|times|cars?|kids)\b)"
)
TIME = re.compile(
    r"(?<![\w:])(?:"
    # noon
    r"(?:twelve\s+|12\s+)?(?P<noon>noon|midday)"
    # quarter past two, half past four, ten after three
    rf"|(?P<past>{_alternatives(PAST_WORDS)})\s+(?:past|after)\s+(?P<past_hour>{_HOUR_ANY}){_END}"
    # quarter to five
    rf"|(?:a\s+)?quarter\s+(?:to|of|till)\s+(?P<to_hour>{_HOUR_ANY}){_END}"
    # 10:30, 10 30, 2:30 pm
    rf"|(?P<hour_d>{_HOUR_DIGIT})(?::|\s)(?P<minute_d>[0-5]\d)(?![\d:])(?!\s*\d)"
    # two thirty, ten o'clock
    rf"|(?P<hour_w>{_HOUR_ANY})[\s-]+(?P<minute_w>{_alternatives(MINUTE_WORDS)}){_END}{_NOT_TIME}"
    # ten a.m., 9am
    rf"|(?P<hour_p>{_HOUR_ANY})(?=\s*(?:a\.?\s?m\b|p\.?\s?m\b))"
    # at 2, around nine
    rf"|(?<=\bat\s)(?P<hour_at>{_HOUR_ANY}){_END}{_NOT_TIME}"
    rf"|(?<=\baround\s)(?P<hour_ar>{_HOUR_ANY}){_END}{_NOT_TIME}"
    rf"|(?<=\babout\s)(?P<hour_ab>{_HOUR_ANY}){_END}{_NOT_TIME}"
    rf"|(?<=\bby\s)(?P<hour_by>{_HOUR_ANY}){_END}{_NOT_TIME}"
    rf"){_PERIOD}",
    re.IGNORECASE,
)
_WEEKDAY = "|".join(WEEKDAYS)
DAY = re.compile(
    r"(?<!\w)(?:"
    r"(?P<after>(?:the\s+)?day\s+after\s+tomorrow)"
    r"|(?P<today>today|this\s+(?:morning|afternoon|evening)|tonight)"
    r"|(?P<tomorrow>tomorrow)"
    rf"|(?:(?P<which>this|next|coming|this\s+coming)\s+)?(?P<weekday>{_WEEKDAY})s?"
    rf"|(?P<month>{'|'.join(MONTHS)})\s+(?P<mday>[1-3]?\d)(?:st|nd|rd|th)?"
    r"|the\s+(?P<nth>[1-3]?\d)(?:st|nd|rd|th)"
    r")(?!\w)",
    re.IGNORECASE,
)
_MORNING = re.compile(r"\bmorning\b", re.IGNORECASE)
_LATER = re.compile(r"\b(?:afternoon|evening|tonight)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Said:
    """A day or a time found in a line, and where (for "the first one said after ...")."""

    value: dt.date | dt.time
    start: int
    words: str


def _folded(words: str) -> str:
    return " ".join(words.lower().replace("-", " ").split())


def _hour(text: str) -> int:
    return NUMBERS.get(text.lower()) or int(text)


def spoken_times(text: str) -> list[Said]:
    """Every time of day said in ``text``, in order."""
    found = []
    for match in TIME.finditer(text):
        moment = _time_of(match, text)
        if moment is not None:
            found.append(Said(moment, match.start(), match.group(0).strip()))
    return found


def spoken_time(text: str) -> dt.time | None:
    """The first time of day said in ``text``."""
    found = spoken_times(text)
    return found[0].value if found else None  # type: ignore[return-value]


def _time_of(match: re.Match[str], text: str) -> dt.time | None:
    parts = match.groupdict()
    if parts["noon"]:
        return dt.time(12, 0)
    minute = 0
    if parts["past"]:
        hour = _hour(parts["past_hour"])
        minute = PAST_WORDS[_folded(parts["past"])]
    elif parts["to_hour"]:
        hour = _hour(parts["to_hour"]) - 1 or 12
        minute = 45
    elif parts["hour_d"]:
        hour, minute = int(parts["hour_d"]), int(parts["minute_d"])
    elif parts["hour_w"]:
        hour = _hour(parts["hour_w"])
        minute = MINUTE_WORDS[_folded(parts["minute_w"])]
    else:
        bare = next(
            parts[key]
            for key in ("hour_p", "hour_at", "hour_ar", "hour_ab", "hour_by")
            if parts[key]
        )
        hour = _hour(bare)
    return dt.time(_day_hour(hour, parts["period"] or "", text), minute)


def _day_hour(hour: int, period: str, text: str) -> int:
    said = period.lower().replace(".", "").replace(" ", "")
    if said.startswith("p") or any(
        w in said for w in ("afternoon", "evening", "tonight")
    ):
        return hour + 12 if hour < 12 else hour
    if said.startswith("a") or "morning" in said:
        return 0 if hour == 12 else hour
    if _MORNING.search(text) and not _LATER.search(text) and hour <= 11:
        return hour
    if _LATER.search(text) and not _MORNING.search(text) and hour < 12:
        return hour + 12
    return hour + 12 if 1 <= hour <= 6 else hour


def next_weekday(after: dt.date, weekday: str) -> dt.date:
    """The first date after ``after`` (never that day itself) falling on ``weekday``."""
    days = (WEEKDAYS.index(weekday.lower()) - after.weekday()) % 7
    return after + dt.timedelta(days=days or 7)


def spoken_days(text: str, today: dt.date) -> list[Said]:
    """Every day said in ``text``, as dates counted from ``today``, in order."""
    found = []
    for match in DAY.finditer(text):
        date = _date_of(match, today)
        if date is not None:
            found.append(Said(date, match.start(), match.group(0).strip()))
    return found


def _date_of(match: re.Match[str], today: dt.date) -> dt.date | None:
    parts = match.groupdict()
    if parts["after"]:
        return today + dt.timedelta(days=2)
    if parts["today"]:
        return today
    if parts["tomorrow"]:
        return today + dt.timedelta(days=1)
    if parts["weekday"]:
        which = " ".join((parts["which"] or "").lower().split())
        if (
            which == "this"
            and WEEKDAYS.index(parts["weekday"].lower()) == today.weekday()
        ):
            return today
        return next_weekday(today, parts["weekday"])
    if parts["month"]:
        month = MONTHS.index(parts["month"].lower()) + 1
        return _next_date(today, int(parts["mday"]), month)
    return _next_date(today, int(parts["nth"]), None)


def _next_date(today: dt.date, day: int, month: int | None) -> dt.date | None:
    """The first date on or after ``today`` with that day of the month (and month)."""
    for ahead in range(400):
        date = today + dt.timedelta(days=ahead)
        if date.day == day and (month is None or date.month == month):
            return date
    return None
