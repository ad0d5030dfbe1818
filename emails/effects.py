"""The e-mails to leads recorded by ``emails.triggers``, written by their own task
(``core.outbox``): an e-mail that cannot be made never holds back the call."""

from __future__ import annotations

from calls.models import Call
from core.outbox import effect
from emails.services import email_to_lead


@effect("emails.lead")
def lead(*, call_id: int, purpose: str) -> bool:
    call = Call.objects.select_related("account").get(pk=call_id)
    return email_to_lead(call=call, purpose=purpose) is not None
