"""The alert preferences page: a manager chooses what they are told of, and how."""

from __future__ import annotations

from itertools import groupby
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from calls.models import Call
from notify.models import Message, MessageKind
from notify.preferences import preferences_of, preferences_save
from scoring.selectors import call_may_be_coached_by
from users.models import User


@login_required
def alert_preferences(request: HttpRequest) -> HttpResponse:
    user = request.user
    assert isinstance(user, User)
    if request.method == "POST":
        preferences_save(user=user, checked=set(request.POST))
        messages.success(request, "Your alerts are saved.")
        return HttpResponseRedirect(reverse("alerts:preferences"))
    choices = preferences_of(user)
    by_account = [
        (account, list(rows))
        for account, rows in groupby(choices, key=lambda choice: choice.account)
    ]
    return render(
        request,
        "notify/preferences.html",
        {"by_account": by_account, "section": "alerts"},
    )


def call_panel(call: Call, user: User) -> tuple[str, dict[str, Any]] | None:
    """The call page's card of who was told of the call, and when: the managers' alerts
    and the CRM write-backs (to those who may coach the call, and staff)."""
    if not (user.is_staff or call_may_be_coached_by(user=user, call=call)):
        return None
    told = list(
        Message.objects.filter(call=call)
        .exclude(kind=MessageKind.REPORT)
        .select_related("user")
        .order_by("created_at", "id")
    )
    return "notify/partials/call_told.html", {
        "messages": told,
        "zone": call.account.timezone,
    }
