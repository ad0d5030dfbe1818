"""E-mail to leads: the first-touch and not-reached messages, also by e-mail when the
account turns it on and the lead gave an address.

Every e-mail is stored before it is sent (``LeadEmail``), in the transaction of what
caused it, and handed to a worker on commit (or left to the sweep when it is due later);
it is sent through Django's e-mail backend (``EMAIL_BACKEND``: SMTP, the console, a
provider through django-anymail), as the staff's e-mails are (``notify``). A server down
or a temporary refusal is tried again with a growing wait; a refusal (5xx) is final.
Each carries an opt-out link and ``List-Unsubscribe``; an address that opted out of the
account's e-mails is never e-mailed again by that account (``consent``)."""

from __future__ import annotations

import hashlib
import logging
from datetime import datetime, timedelta
from email.utils import formataddr

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import EmailMultiAlternatives
from django.core.validators import validate_email
from django.db import transaction
from django.template.loader import render_to_string
from django.utils import timezone

from accounts.models import Account
from calls.models import Call
from consent.models import Source
from consent.selectors import emails_revocation
from consent.services import consent_revoke
from core.handover import HELD_BY_BROKER, REFUSED, HandOver, to_hand_over
from core.logging import log_event, log_event_on_commit
from core.mail import MAX_TRIES, MailOutbox
from core.sweeps import each
from core.text import one_line
from emails.models import EmailSettings, EmailStatus, LeadEmail, Purpose
from emails.optout import OptOut, opt_out_url
from emails.selectors import automatic_emails_sent, email_settings_of

log = logging.getLogger(__name__)
lead_email_hand_over = HandOver(
    task="emails.tasks.lead_email_send_task",
    key="email_id",
    event="emails.dispatch_failed",
    log=log,
    waiting=lambda email_id: LeadEmail.objects.filter(
        pk=email_id, status=EmailStatus.QUEUED
    ),
)

outbox = MailOutbox(
    log=log,
    event="emails",
    key="email_id",
    waiting=EmailStatus.QUEUED,
    hand_over=lead_email_hand_over,
)
# An e-mail "sending" this long lost its worker mid-send: tried again under the same
# Message-ID (a mail server that took it once may drop the copy), as notify does.
SENDING_LOST_AFTER = timedelta(minutes=5)


def email_to_lead(
    *,
    call: Call,
    purpose: str,
    due_at: datetime | None = None,
    key: str = "",
) -> LeadEmail | None:
    """The account's e-mail of ``purpose`` (``Purpose.INSTANT``: the first touch;
    ``Purpose.NOT_REACHED``: the lead was not reached) to the call's lead, stored in the
    caller's transaction and sent once it commits, or at ``due_at`` (the sweep hands it
    over then). ``key`` names what it is for, once (default: the purpose and the call; a
    cadence gives its step's). None, and nothing stored, when the account's e-mail is off,
    the lead gave no valid address, the address opted out of the account's e-mails, the
    account's limit per address (30 days) is reached, or ``key`` was e-mailed already.
    No quiet hours: an e-mail waits in the inbox; a cadence that wants one chooses
    ``due_at``."""
    account = call.account
    config = email_settings_of(account)
    address = (call.email or "").strip().lower()
    if config is None or not config.enabled or not _valid(address):
        return None
    key = key or f"{purpose}:{call.pk}"
    if LeadEmail.objects.filter(key=key).exists():
        return None  # a signal told twice (a redelivered effect) e-mails once
    if emails_revocation(account_id=account.pk, email=address) is not None:
        _log_on_commit("emails.opted_out", call_id=call.pk, purpose=purpose)
        return None
    if automatic_emails_sent(account_id=account.pk, email=address) >= (
        config.automatic_limit
    ):
        _log_on_commit("emails.limit_reached", call_id=call.pk, purpose=purpose)
        return None
    subject, text, html = compose(
        call=call, purpose=purpose, account=account, email=address
    )
    now = timezone.now()
    due_at = due_at or now
    with transaction.atomic():  # a savepoint: a key stored meanwhile is no error
        email, created = LeadEmail.objects.get_or_create(
            key=key[:200],
            defaults={
                "account": account,
                "call": call,
                "lead_phone": call.phone,
                "to_email": address,
                "purpose": purpose,
                "from_email": sender(account, config),
                "reply_to": config.reply_to,
                "subject": subject,
                "text": text,
                "html": html,
                "due_at": due_at,
                "status_at": now,
            },
        )
    if not created:
        return None
    _log_on_commit(
        "emails.stored", email_id=email.pk, purpose=purpose, due_at=due_at.isoformat()
    )
    if due_at - now <= HELD_BY_BROKER:
        countdown = max(0.0, (due_at - now).total_seconds()) or None
        lead_email_hand_over.on_commit(email.pk, countdown)
    return email


def _valid(address: str) -> bool:
    try:
        validate_email(address)
    except ValidationError:
        return False
    return True


def sender(account: Account, config: EmailSettings) -> str:
    """The From of the account's e-mails: its address (else ``DEFAULT_FROM_EMAIL``) with
    its name."""
    address = config.from_email or settings.DEFAULT_FROM_EMAIL
    return formataddr((one_line(config.from_name or account.name), address))


def compose(
    *, call: Call, purpose: str, account: Account, email: str
) -> tuple[str, str, str]:
    """Subject, plain text and HTML of the e-mail (``emails/templates/emails/``)."""
    words = [call.called_on_year, call.called_on_make, call.called_on_model]
    context = {
        "first_name": call.first_name or "there",
        "dealer": account.name,
        "vehicle": " ".join(word for word in words if word),
        "opt_out_url": opt_out_url(account_id=account.pk, email=email),
    }
    name = Purpose(purpose).value
    subject = render_to_string(f"emails/{name}_subject.txt", context)
    text = render_to_string(f"emails/{name}.txt", context)
    html = render_to_string(f"emails/{name}.html", context)
    # One line: a CR/LF from a lead's name would start another header (core.text).
    return one_line(subject).strip()[:255], text.strip() + "\n", html


def message_id_header(email: LeadEmail) -> str:
    """The same Message-ID for every try of an e-mail, on the sender's domain."""
    digest = hashlib.sha256(email.key.encode()).hexdigest()[:16]
    domain = email.from_email.rstrip(">").rpartition("@")[2] or "localhost"
    return f"<lead-{email.pk}-{digest}@{domain}>"


def lead_email_message(email: LeadEmail) -> EmailMultiAlternatives:
    """The e-mail as sent: From, Reply-To, the text and HTML parts, and the one-click
    unsubscribe headers (RFC 2369, RFC 8058) to the opt-out page."""
    link = opt_out_url(account_id=email.account_id, email=email.to_email)
    message = EmailMultiAlternatives(
        subject=one_line(email.subject),
        body=email.text,
        from_email=email.from_email,
        to=[email.to_email],
        reply_to=[email.reply_to] if email.reply_to else None,
        headers={
            "Message-ID": email.message_id or message_id_header(email),
            "List-Unsubscribe": f"<{link}>",
            "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
        },
    )
    if email.html:
        message.attach_alternative(email.html, "text/html")
    return message


def lead_email_send(*, email_id: int) -> str:
    """Send one due e-mail: one already sent, being sent, failed or canceled is left
    alone; one whose address opted out (or whose account turned e-mail off) since it
    was stored is canceled. A failed try waits and is tried again, up to ``MAX_TRIES``;
    a refusal is final."""
    now = timezone.now()
    with transaction.atomic():
        email = (
            LeadEmail.objects.select_for_update(of=("self",))
            .select_related("account")
            .filter(pk=email_id)
            .first()
        )
        if email is None or email.status != EmailStatus.QUEUED:
            return "done"
        if email.due_at > now:
            return "not due"
        reason = _not_sendable(email)
        if reason:
            email.status, email.status_at, email.error = (
                EmailStatus.CANCELED,
                now,
                reason,
            )
            email.save(update_fields=["status", "status_at", "error"])
            log_event(log, "emails.canceled", email_id=email.pk)
            return "canceled"
        email.status, email.status_at = EmailStatus.SENDING, now
        email.attempts += 1
        email.message_id = email.message_id or message_id_header(email)
        email.save(update_fields=["status", "status_at", "attempts", "message_id"])
    return outbox.send(email, lambda: lead_email_message(email), purpose=email.purpose)


def _not_sendable(email: LeadEmail) -> str:
    config = email_settings_of(email.account)
    if config is None or not config.enabled:
        return "E-mail to leads was turned off for the account before it was due."
    if emails_revocation(account_id=email.account_id, email=email.to_email):
        return "The lead opted out of the account's e-mails before it was sent."
    return ""


def lead_email_send_again(*, email: LeadEmail) -> bool:
    """Support's "send again" of a failed e-mail (the cause mended): a new try now, its
    count reset, the same Message-ID; the send still checks the opt-out. Returns whether
    it was failed (anything else is left alone)."""
    with transaction.atomic():
        again = LeadEmail.objects.filter(pk=email.pk, status=EmailStatus.FAILED).update(
            status=EmailStatus.QUEUED,
            due_at=timezone.now(),
            status_at=timezone.now(),
            dispatched_at=None,
            attempts=0,
        )
        if again:
            lead_email_hand_over.on_commit(email.pk)
    return bool(again)


def lead_emails_sweep(*, now: datetime | None = None) -> int:
    """Hand over every due e-mail the broker never got (its publish failed, it was due
    later, its retry waited long), and try again those whose worker was lost mid-send.
    Returns the e-mails handed over."""
    now = now or timezone.now()
    lost = LeadEmail.objects.filter(
        status=EmailStatus.SENDING, status_at__lt=now - SENDING_LOST_AFTER
    )
    # Each lost send was a try (counted when it was claimed): the last one fails it.
    lost.filter(attempts__gte=MAX_TRIES).update(
        status=EmailStatus.FAILED,
        status_at=now,
        error=f"The worker was lost while sending, {MAX_TRIES} times.",
    )
    lost.update(
        status=EmailStatus.QUEUED, status_at=now, due_at=now, dispatched_at=REFUSED
    )
    due = list(
        LeadEmail.objects.filter(status=EmailStatus.QUEUED, due_at__lte=now)
        .filter(to_hand_over(now, since="status_at"))
        .order_by("due_at")
        .values_list("pk", flat=True)[:1000]
    )
    each(sweep="lead_emails", items=due, handle=lead_email_hand_over)
    return len(due)


def email_opt_out(*, opt_out: OptOut) -> bool:
    """Record the lead's opt-out from the account's e-mails (the link in an e-mail), once:
    an address already opted out records nothing more. E-mails to it not sent yet are
    canceled. Returns whether it was recorded now; False for an account that is gone."""
    account = Account.objects.filter(pk=opt_out.account_id).first()
    if account is None:
        return False
    address = opt_out.email.strip().lower()
    with transaction.atomic():
        Account.objects.select_for_update().filter(pk=account.pk).first()
        if emails_revocation(account_id=account.pk, email=address) is not None:
            return False
        consent_revoke(
            accounts=[account],
            source=Source.EMAIL,
            email=address,
            calls=False,
            texts=False,
            emails=True,
            detail="Opt-out link in an e-mail",
        )
        LeadEmail.objects.filter(
            account=account, to_email=address, status=EmailStatus.QUEUED
        ).update(
            status=EmailStatus.CANCELED,
            status_at=timezone.now(),
            error="The lead opted out of the account's e-mails before it was sent.",
        )
    _log_on_commit("emails.opt_out", account_id=account.pk)
    return True


def _log_on_commit(event: str, **fields: object) -> None:
    log_event_on_commit(log, event, **fields)
