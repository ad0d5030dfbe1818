"""Notify's rows, read on behalf of a caller and scoped by what that caller may see."""

from __future__ import annotations

from calls.models import Call
from notify.models import Message, MessageKind
from scoring.selectors import call_may_be_coached_by
from users.models import User


def call_told_visible(*, call: Call, user: User) -> list[Message] | None:
    """Who was told of ``call``, and when: the managers' alerts and the CRM write-backs,
    oldest first; None to those who may not coach the call (staff always may)."""
    if not (user.is_staff or call_may_be_coached_by(user=user, call=call)):
        return None
    return list(
        Message.objects.filter(call=call)
        .exclude(kind=MessageKind.REPORT)
        .select_related("user")
        .order_by("created_at", "id")
    )
