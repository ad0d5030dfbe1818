"""The alert preferences page: a manager chooses what they are told of, and how."""

from __future__ import annotations

from itertools import groupby

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse

from notify.preferences import preferences_of, preferences_save
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
