"""Reads of the consent ledger: whether an account may call a number now, and the rows
an audit exports."""

from __future__ import annotations

from django.conf import settings
from django.db.models import Exists, OuterRef, QuerySet

from consent.models import ConsentEvent, Kind


def calls_revocation(
    *, account_id: int, phone: str, text_opt_outs: bool | None = None
) -> ConsentEvent | None:
    """The revocation that stops the account's calls to ``phone`` now, if any: the latest
    entry about its calls, when that is a revocation (a lead submitted or a click-to-call
    request since gives consent again); else, with ``text_opt_outs`` (the setting
    ``CONSENT_TEXT_OPT_OUT_STOPS_CALLS`` unless given), a text opt-out that no START
    lifted and no consent to calls followed."""
    if text_opt_outs is None:
        text_opt_outs = settings.CONSENT_TEXT_OPT_OUT_STOPS_CALLS
    rows = ConsentEvent.objects.filter(account_id=account_id, phone=phone).order_by(
        "-at", "-pk"
    )
    about_calls = rows.filter(calls=True).first()
    if about_calls is not None and about_calls.kind == Kind.REVOCATION:
        return about_calls
    if not text_opt_outs:
        return None
    about_texts = rows.filter(
        texts=True, kind__in=[Kind.REVOCATION, Kind.RECONSENT]
    ).first()
    if about_texts is None or about_texts.kind != Kind.REVOCATION:
        return None
    if about_calls is not None and (about_calls.at, about_calls.pk) > (
        about_texts.at,
        about_texts.pk,
    ):
        return None
    return about_texts


def emails_revocation(*, account_id: int, email: str) -> ConsentEvent | None:
    """The revocation that stops the account's e-mails to ``email`` now, if any: the
    latest entry about its e-mails, when that is a revocation. A lead submitted later
    gives no consent to e-mails (as for texts), so only a consent entered for e-mails
    (support's) lifts it."""
    latest = (
        ConsentEvent.objects.filter(
            account_id=account_id, email=email.strip().lower(), emails=True
        )
        .order_by("-at", "-pk")
        .first()
    )
    return latest if latest is not None and latest.kind == Kind.REVOCATION else None


def revocation_recorded() -> Exists:
    """Whether the ledger holds any revocation for a call's account and number (an
    annotation of a ``Call`` queryset): the pipeline's cheap look before it reads
    ``calls_revocation``, in the statement that locks the call."""
    return Exists(
        ConsentEvent.objects.filter(
            account_id=OuterRef("account_id"),
            phone=OuterRef("phone"),
            kind=Kind.REVOCATION,
        )
    )


def ledger_rows(*, rows: QuerySet[ConsentEvent]) -> QuerySet[ConsentEvent]:
    """``rows`` (already narrowed to what the reader may see) as an audit reads them: in
    time order, with their account, organization and recorder, in one statement."""
    return rows.select_related("account", "organization").order_by("at", "pk")
