"""Texting rows for the tests, written straight through the ORM."""

from __future__ import annotations

from datetime import datetime

from accounts.models import Account
from texting.models import Direction, Purpose, Text, TextingSettings, TextStatus

SENDER = "+17205550100"


def texting_on(account: Account, *, sender: str = SENDER) -> TextingSettings:
    return TextingSettings.objects.create(account=account, enabled=True, sender=sender)


def text_in_thread(
    account: Account,
    phone: str,
    *,
    at: datetime,
    body: str,
    direction: str = Direction.OUT,
    purpose: str = Purpose.NOT_REACHED,
    status: str = TextStatus.DELIVERED,
    **fields: object,
) -> Text:
    """A text of the thread between ``account`` and ``phone``, stored at ``at``."""
    incoming = direction == Direction.IN
    text = Text.objects.create(
        account=account,
        lead_phone=phone,
        direction=direction,
        purpose=Purpose.INBOUND if incoming else purpose,
        to_number=SENDER if incoming else phone,
        from_number=phone if incoming else SENDER,
        body=body,
        status=TextStatus.RECEIVED if incoming else status,
        due_at=at,
        **fields,
    )
    Text.objects.filter(pk=text.pk).update(created_at=at)  # auto_now_add
    text.created_at = at
    return text
