"""The call page's thread (texting): the timeline of the lead's texts and calls, and the
reply form, and the decision on a reply that may be an opt-out. A reply or a decision
posts here; without JavaScript the page redirects back with a message, with htmx the
thread card alone comes back, errors inline."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from calls.models import Call
from pages.forms import ReplyForm
from scoring.selectors import call_get_visible, call_may_be_texted_by
from texting.inbound import possible_opt_out_confirm, possible_opt_out_dismiss
from texting.selectors import (
    texting_settings_of,
    thread_opt_out,
    thread_timeline,
)
from texting.services import text_reply_send
from users.models import User

THREAD_CARD = "pages/partials/thread.html"
DECISIONS = {
    "confirm": (
        possible_opt_out_confirm,
        "Opt-out confirmed: no more texts go to the lead.",
    ),
    "dismiss": (possible_opt_out_dismiss, "Dismissed: texts to the lead go on."),
}


def thread_context(
    *,
    call: Call,
    user: User,
    form: ReplyForm | None = None,
    sent: bool = False,
    decided: str = "",
    problem: str = "",
) -> dict[str, Any]:
    """What the thread card shows: the timeline, the opt-out (or a possible one, with the
    decision for those who may reply), and the reply form for those who may reply while
    texting is on."""
    config = texting_settings_of(call.account)
    texting_on = config is not None and config.enabled
    may_text = call_may_be_texted_by(user=user, call=call)
    may_reply = texting_on and may_text
    opt_out = thread_opt_out(call)
    return {
        "thread": thread_timeline(call),
        "opted_out_at": opt_out.opted_out_at,
        "possible_opt_out": opt_out.possible,
        "may_decide": may_text,
        "opt_out_decisions": [
            ("confirm", "Confirm opt-out"),
            ("dismiss", "Dismiss: not an opt-out"),
        ],
        "texting_on": texting_on,
        "may_reply": may_reply,
        "reply_form": (form or ReplyForm()) if may_reply else None,
        "reply_sent": sent,
        "decided": decided,
        "decision_problem": problem,
    }


@login_required
@require_POST
def call_text_reply(request: HttpRequest, call_id: int) -> HttpResponse:
    """Send the lead a text from the account's number (the call's agent, a manager of the
    account or staff; anyone else who sees the call is refused)."""
    user: User = request.user  # type: ignore[assignment]
    call = call_get_visible(user=user, call_id=call_id)
    if call is None:
        raise Http404("No such call.")
    if not call_may_be_texted_by(user=user, call=call):
        raise PermissionDenied("Only the call's agent, a manager or staff may reply.")
    form = ReplyForm(request.POST)
    sent = False
    if form.is_valid():
        try:
            text_reply_send(call=call, user=user, body=form.cleaned_data["body"])
        except ValidationError as error:
            form.add_error("body", error)
        else:
            sent = True
    if request.headers.get("HX-Request") == "true":
        context = thread_context(
            call=call, user=user, form=None if sent else form, sent=sent
        )
        return render(request, THREAD_CARD, {"call": call, **context})
    if sent:
        messages.success(request, "Text sent.")
    else:
        for problem in form.errors.get("body", []):
            messages.error(request, str(problem))
    return redirect("pages:call-detail", call_id=call.pk)


@login_required
@require_POST
def call_possible_opt_out(
    request: HttpRequest, call_id: int, decision: str
) -> HttpResponse:
    """Confirm or dismiss the lead's reply that may be an opt-out (those who may reply)."""
    user: User = request.user  # type: ignore[assignment]
    call = call_get_visible(user=user, call_id=call_id)
    if call is None or decision not in DECISIONS:
        raise Http404("No such call.")
    if not call_may_be_texted_by(user=user, call=call):
        raise PermissionDenied("Only the call's agent, a manager or staff may decide.")
    decide, done = DECISIONS[decision]
    problem = ""
    try:
        decide(call=call, user=user)
    except ValidationError as error:
        problem = error.messages[0]
    if request.headers.get("HX-Request") == "true":
        context = thread_context(
            call=call, user=user, decided="" if problem else done, problem=problem
        )
        return render(request, THREAD_CARD, {"call": call, **context})
    if problem:
        messages.error(request, problem)
    else:
        messages.success(request, done)
    return redirect("pages:call-detail", call_id=call.pk)
