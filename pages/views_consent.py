"""The call page's consent: a manager of the call's account marks that the lead asked not
to be called ("don't call again"), and the call's agent, a manager or staff confirm or
dismiss a "don't call me again" the transcript suggests; both are recorded in the
consent ledger. The account's lead calls to the number then end CANCEL until the person
sends a new lead."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from calls.models import Call
from consent.models import Source
from consent.services import consent_revoke
from consenting.models import SpokenRevocation
from consenting.selectors import spoken_revocation_of_call
from consenting.services import AlreadyDecided, spoken_revocation_decide
from core.text import one_line
from scoring.selectors import (
    call_get_visible,
    call_may_be_coached_by,
    call_may_be_texted_by,
)
from users.models import User

REASON_MOST = 500
MARKED = (
    "Marked: this account's lead calls to {phone} stop (they end CANCEL, not dialed) "
    "until the person sends a new lead."
)
SPOKEN_DONE = {
    "confirm": (
        True,
        "Confirmed: this account's lead calls to {phone} stop (they end CANCEL, not "
        "dialed) until the person sends a new lead.",
    ),
    "dismiss": (False, "Dismissed: calls to {phone} go on."),
}


@login_required
@require_POST
def call_do_not_call(request: HttpRequest, call_id: int) -> HttpResponse:
    """A manager's mark: the call's lead withdrew consent to the account's calls."""
    user: User = request.user  # type: ignore[assignment]
    call = call_get_visible(user=user, call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    if not call_may_be_coached_by(user=user, call=call):
        raise PermissionDenied("Only a manager of the account may mark it.")
    reason = one_line(str(request.POST.get("reason", "")))[:REASON_MOST]
    consent_revoke(
        accounts=[call.account],
        source=Source.MANAGER,
        phone=call.phone,
        calls=True,
        texts=False,
        detail=reason,
        reference=f"call {call.pk}",
        by=user,
    )
    messages.success(request, MARKED.format(phone=call.phone))
    return redirect("pages:call-detail", call_id=call.pk)


def spoken_revocation_card(*, call: Call, user: User) -> dict[str, Any] | None:
    """The call page's card of a "don't call me again" the transcript suggested: the
    sentence, and the decision (or the buttons, for those who may decide)."""
    suggestion = spoken_revocation_of_call(call=call)
    if suggestion is None:
        return None
    return {
        "suggestion": suggestion,
        "may_decide": suggestion.waiting and _may_decide(user=user, call=call),
    }


def _may_decide(*, user: User, call: Call) -> bool:
    """The call's agent, a manager of its account or staff (those who may text the lead)."""
    return call_may_be_texted_by(user=user, call=call)


@login_required
@require_POST
def call_spoken_revocation(
    request: HttpRequest, call_id: int, decision: str
) -> HttpResponse:
    """Confirm (a revocation of the account's calls) or dismiss the lead's "don't call
    me again" read from the call's transcript."""
    user: User = request.user  # type: ignore[assignment]
    call = call_get_visible(user=user, call_id=call_id)
    if call is None or decision not in SPOKEN_DONE:
        raise Http404("No such call.")
    suggestion: SpokenRevocation | None = spoken_revocation_of_call(call=call)
    if suggestion is None:
        raise Http404("Nothing to decide on this call.")
    if not _may_decide(user=user, call=call):
        raise PermissionDenied("Only the call's agent, a manager or staff may decide.")
    confirm, done = SPOKEN_DONE[decision]
    try:
        spoken_revocation_decide(
            suggestion_id=suggestion.pk, user=user, confirm=confirm
        )
    except AlreadyDecided as decided:
        messages.error(request, f"Already decided: {decided}.")
    else:
        messages.success(request, done.format(phone=call.phone))
    return redirect("pages:call-detail", call_id=call.pk)
