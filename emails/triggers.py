"""What e-mail to leads does when texting reports a moment to tell the lead something
(``texting.signals.automatic_touch``): inside the pipeline's transaction it only records
the e-mail that must follow (``core.outbox``), when the account e-mails its leads and the
lead gave an address; ``emails.effects`` writes it."""

from __future__ import annotations

from calls.models import Call
from core.outbox import effect_record
from emails.models import Purpose
from emails.selectors import email_settings_of


def on_automatic_touch(
    sender: type, call: Call, purpose: str, **kwargs: object
) -> None:
    if purpose not in Purpose.values or not call.email:
        return
    config = email_settings_of(call.account)
    if config is None or not config.enabled:
        return
    effect_record(
        kind="emails.lead",
        key=f"emails.{purpose}:{call.pk}",
        about=f"call {call.pk}",
        call_id=call.pk,
        purpose=purpose,
    )
