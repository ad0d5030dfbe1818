"""The accuracy of the scorers' suggestions, for support and managers: per account in their
reach, each category's, call end's and alert tag's precision and recall by phrase rule and
learnt model, measured on the newest confirmed scores, and which of the two is in force."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from scoring import learning
from scoring.learnt import learnt_members
from scoring.selectors import accounts_coachable_by, learnt_suggesters_of, roles_of
from users.models import User


@login_required
@require_safe
def suggestion_accuracy(request: HttpRequest) -> HttpResponse:
    """One account's suggestion accuracy (``?account=ID``; the first in reach without it).
    An account out of reach is not found."""
    user: User = request.user  # type: ignore[assignment]
    if not roles_of(user).manager:
        raise PermissionDenied("Suggestion accuracy is for managers and support.")
    accounts = list(accounts_coachable_by(user).order_by("name", "pk").only("name"))
    wanted = request.GET.get("account", "")
    if wanted:
        if not wanted.isdigit():
            raise Http404("No such account.")
        account = next((a for a in accounts if a.pk == int(wanted)), None)
        if account is None:
            raise Http404("No such account.")
    else:
        account = accounts[0] if accounts else None
    rows = []
    if account is not None:
        rows = learnt_members(learnt_suggesters_of(user=user, account_id=account.pk))
    context = {
        "section": "accuracy",
        "accounts": accounts,
        "account": account,
        "rows": rows,
        "trained_at": max((row.trained_at for row in rows), default=None),
        "min_examples": learning.MIN_EXAMPLES,
        "min_per_class": learning.MIN_PER_CLASS,
        "held_out_share": round(learning.HELD_OUT_SHARE * 100),
        "held_out_most": learning.HELD_OUT_MOST,
        "margin": round(learning.MARGIN * 100),
    }
    return render(request, "pages/suggestion_accuracy.html", context)
