"""The call page's follow-up card: what the account's cadence plans next for the call's lead
(the next step and its due time in the dealer's timezone, and how many follow), and the
button that stops it, for those who may text the lead (the call's agent, a manager of the
account, staff)."""

from __future__ import annotations

from typing import Any
from zoneinfo import ZoneInfo

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from cadence.selectors import steps_ahead_of
from cadence.services import steps_stop
from calls.models import Call
from scoring.selectors import call_get_visible, call_may_be_texted_by
from users.models import User


def cadence_card(*, call: Call, user: User) -> dict[str, Any] | None:
    """The card, or None when nothing is planned for the lead."""
    ahead = steps_ahead_of(call)
    if not ahead:
        return None
    following = ahead[0]
    return {
        "next": following,
        "due_local": following.due_at.astimezone(ZoneInfo(call.account.timezone)),
        "zone": call.account.timezone,
        "later": len(ahead) - 1,
        "may_stop": call_may_be_texted_by(user=user, call=call),
    }


@login_required
@require_POST
def call_cadence_stop(request: HttpRequest, call_id: int) -> HttpResponse:
    """Stop the follow-up steps planned for the call's lead (its account's only)."""
    user: User = request.user  # type: ignore[assignment]
    call = call_get_visible(user=user, call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    if not call_may_be_texted_by(user=user, call=call):
        raise PermissionDenied(
            "Only the call's agent, a manager or staff may stop the follow-up."
        )
    name = user.get_full_name() or user.email
    stopped = steps_stop(
        account_id=call.account_id,
        phone=call.phone,
        reason=f"Stopped by {name} on the call page.",
        by=user,
    )
    if stopped:
        messages.success(
            request, f"Follow-up stopped: {stopped} step{'s' if stopped != 1 else ''}."
        )
    else:
        messages.info(request, "Nothing was planned for this lead.")
    return redirect("pages:call-detail", call_id=call.pk)
