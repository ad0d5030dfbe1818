"""The spoken revocation a call's transcript suggests, made by its own task once the
transcript is saved (``core.outbox``), as appointments proposes the time agreed."""

from __future__ import annotations

from django.db import transaction

from calls.models import Call
from calls.transcripts import reading_context
from consenting.models import SpokenRevocation
from core.outbox import effect
from understanding import LANGUAGES, Context, understand


@effect("consenting.spoken")
def suggest(*, call_id: int) -> SpokenRevocation | None:
    """Suggest that the lead asked not to be called again, quoting the sentence, for a
    person to confirm or dismiss: nothing when the call already has a suggestion (a
    transcript saved again), or the transcript is in a language the rules do not read."""
    call = Call.objects.select_related("account", "agent").filter(pk=call_id).first()
    if call is None or not call.transcript_turns or not call.phone:
        return None
    if call.transcript_language not in ("", *LANGUAGES):
        return None
    asked = understand(
        call.transcript_turns, Context.of(reading_context(call))
    ).do_not_call
    if asked is None:
        return None
    with transaction.atomic():
        Call.objects.select_for_update().filter(pk=call.pk).first()  # one suggester
        if SpokenRevocation.objects.filter(call=call).exists():
            return None
        return SpokenRevocation.objects.create(
            call=call,
            account_id=call.account_id,
            phone=call.phone,
            sentence=asked.sentence[:2000],
            line=asked.evidence[0].line,
        )
