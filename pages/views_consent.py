"""The call page's "don't call again": a manager of the call's account marks that the
lead asked not to be called, recorded in the consent ledger (``consent.services``). The
account's lead calls to the number then end CANCEL until the person sends a new lead."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from consent.models import Source
from consent.services import consent_revoke
from core.text import one_line
from scoring.selectors import call_get_visible, call_may_be_coached_by
from users.models import User

REASON_MOST = 500
MARKED = (
    "Marked: this account's lead calls to {phone} stop (they end CANCEL, not dialed) "
    "until the person sends a new lead."
)


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
