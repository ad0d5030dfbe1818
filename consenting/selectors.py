"""Reads of spoken revocations and of a number's consent, for the pages and the API."""

from __future__ import annotations

from django.db.models import QuerySet

from calls.models import Call
from consent.models import ConsentEvent
from consenting.models import SpokenRevocation


def spoken_revocation_of_call(*, call: Call) -> SpokenRevocation | None:
    return (
        SpokenRevocation.objects.select_related("decided_by")
        .filter(call_id=call.pk)
        .first()
    )


def consent_history(
    *, account_id: int, phone: str = "", email: str = ""
) -> QuerySet[ConsentEvent]:
    """The account's ledger entries about ``phone`` or ``email``, newest first."""
    rows = ConsentEvent.objects.filter(account_id=account_id).select_related("account")
    if phone:
        return rows.filter(phone=phone).order_by("-at", "-pk")
    return rows.filter(email=email.strip().lower()).order_by("-at", "-pk")
