"""The public opt-out page an e-mail to a lead links to: GET asks to confirm, POST
records (also a mail program's one-click POST, RFC 8058, which carries no CSRF token:
the signed token is what allows it). A token not ours is a clear 404 page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from accounts.models import Account
from emails.optout import opt_out_read
from emails.services import email_opt_out


@csrf_exempt
@require_http_methods(["GET", "POST"])
def opt_out(request: HttpRequest, token: str) -> HttpResponse:
    found = opt_out_read(token)
    account = (
        Account.objects.filter(pk=found.account_id).only("name").first()
        if found
        else None
    )
    if found is None or account is None:
        return render(request, "emails/opt_out_invalid.html", status=404)
    context = {"dealer": account.name, "email": found.email}
    if request.method == "POST":
        email_opt_out(opt_out=found)
        return render(request, "emails/opt_out_done.html", context)
    return render(request, "emails/opt_out.html", context)
