"""The appointment a call's transcript proposes, made by its own task once the transcript
is saved (``core.outbox``)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from django.db import transaction

from appointments.models import Actor, Appointment, Kind, Status
from appointments.services import appointment_make, appointment_open_of_call
from calls.models import Call
from calls.transcripts import reading_context
from core.outbox import effect
from understanding import LANGUAGES, Context, understand

# What the call called it ("visit", "test drive", "service") as an appointment's kind.
KINDS = {"test drive": Kind.TEST_DRIVE, "service": Kind.SERVICE}


@effect("appointments.propose")
def propose(*, call_id: int) -> Appointment | None:
    """Propose the appointment the transcript agreed (a day and a time both said, in the
    account's timezone), for a person to set: nothing when the call already has one
    (a person's or an earlier proposal), or the transcript is in a language the rules
    do not read."""
    call = Call.objects.select_related("account", "agent").filter(pk=call_id).first()
    if call is None or not call.transcript_turns:
        return None
    if call.transcript_language not in ("", *LANGUAGES):
        return None
    facts = understand(call.transcript_turns, Context.of(reading_context(call)))
    agreed = facts.appointment
    if agreed is None or agreed.date is None or agreed.time is None:
        return None
    with transaction.atomic():
        Call.objects.select_for_update().filter(pk=call.pk).first()  # one proposer
        if (
            appointment_open_of_call(call=call) is not None
            or Appointment.objects.filter(call=call, set_by=Actor.SERVICE).exists()
        ):
            return None
        return appointment_make(
            call=call,
            starts_at=dt.datetime.combine(
                agreed.date, agreed.time, ZoneInfo(call.account.timezone)
            ),
            by=Actor.SERVICE,
            kind=KINDS.get(agreed.what, Kind.SALES_VISIT),
            vehicle=facts.vehicle.vehicle.words() if facts.vehicle else "",
            status=Status.PROPOSED,
            evidence="\n".join(e.text for e in agreed.evidence),
        )
