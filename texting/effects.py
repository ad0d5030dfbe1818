"""The automatic texts texting records (``texting.triggers``), written by their own task
(``core.outbox``), on the ``calls`` queue: a text follows a call's step within a second."""

from __future__ import annotations

from datetime import datetime

from calls.models import Call
from core.outbox import effect
from texting.services import text_automatic


@effect("texting.automatic", queue="calls")
def automatic(*, call_id: int, purpose: str, opening: str = "") -> bool:
    call = Call.objects.select_related("account", "agent").get(pk=call_id)
    at = datetime.fromisoformat(opening) if opening else None
    return text_automatic(call=call, purpose=purpose, opening=at) is not None
