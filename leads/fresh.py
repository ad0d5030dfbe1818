"""A lead's place in the calls' fair order: fresh, or an old one sent again.

A CRM that sends its backlog again (thousands of leads made days ago) must not hold back a
lead made a minute ago. The ADF's ``requestdate`` says when the person asked; a lead whose
request is older than ``LEAD_RESEND_AFTER_SECONDS`` when it arrives is a re-send, set up
after every fresh lead (``calls.pipeline.fair``). A lead without a readable requestdate is
taken as fresh: most senders fill it, and a lead must never wait for a missing field.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from calls.services import SetupPriority


def request_made_at(request_date: str, zone: str) -> datetime | None:
    """The ADF requestdate as an aware datetime (a date or a time without offset is read
    in the account's timezone); None when it cannot be read."""
    text = request_date.strip()
    try:
        if (day := parse_date(text)) is not None:  # a date alone: some time that day
            made: datetime | None = datetime.combine(day, time.max)  # the latest
        else:
            made = parse_datetime(text)
    except ValueError:
        return None
    if made is None:
        return None
    if timezone.is_naive(made):
        try:
            made = made.replace(tzinfo=ZoneInfo(zone))
        except (ZoneInfoNotFoundError, ValueError):
            made = made.replace(tzinfo=ZoneInfo("UTC"))
    return made


def lead_setup_priority(
    *, request_date: str, zone: str, received_at: datetime
) -> SetupPriority:
    """FRESH, or RESEND for a lead whose request is older than the setting when it arrived."""
    made = request_made_at(request_date, zone)
    age = timedelta(seconds=settings.LEAD_RESEND_AFTER_SECONDS)
    if made is not None and received_at - made > age:
        return SetupPriority.RESEND
    return SetupPriority.FRESH
