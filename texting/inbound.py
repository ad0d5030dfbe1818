"""A lead's texts coming in: matched to the account and the lead, stored in the thread,
read for STOP, START, HELP and "call me", and forwarded to the team."""

from __future__ import annotations

import logging
from datetime import datetime

from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallOrigin
from calls.services import call_again
from consent.models import Source
from consent.services import consent_give, consent_revoke, consent_texts_renew
from core.logging import log_event, mask_phone
from texting import compose
from texting.models import (
    STAFF,
    Direction,
    OptOut,
    Purpose,
    Text,
    TextingSettings,
    TextStatus,
    UnroutedText,
)
from texting.payloads import text_event_emit
from texting.selectors import (
    accounts_sharing_number,
    latest_call,
    opt_out_in_force,
    opted_out,
    team_to_tell,
    text_route,
    texting_settings_of,
)
from texting.services import (
    MAX_BODY,
    log_on_commit,
    text_status_advance,
    text_store,
)
from texting.signals import lead_replied
from users.models import User

log = logging.getLogger(__name__)


def text_receive(
    *,
    to_number: str,
    from_number: str,
    body: str,
    provider: str,
    provider_id: str,
    service_sid: str = "",
) -> Text | None:
    """A lead's text, matched to the account texting from ``to_number`` (or the Messaging
    Service ``service_sid``) that last reached the lead: stored in the lead's thread, read
    for STOP, START, HELP and "call me", and forwarded to the team. A repeat of a message
    already stored changes nothing; a text no account can be matched to is not stored. A
    text to a number accounts of several organizations use joins no thread: it is kept
    for support (``UnroutedText``)."""
    numbers = [number for number in (service_sid, to_number) if number]
    route = text_route(numbers=numbers, lead_phone=from_number)
    if route.shared:
        _unrouted(route.shared, to_number, from_number, body, provider, provider_id)
        return None
    account = route.account
    if account is None:
        log_event(
            log,
            "texting.unmatched",
            level=logging.WARNING,
            to=to_number,
            sender=mask_phone(from_number),
        )
        return None
    try:
        with transaction.atomic():
            return _received(
                account, to_number, from_number, body, provider, provider_id
            )
    except IntegrityError:
        return None  # the provider posted it again: stored the first time


def _unrouted(
    shared: str,
    to_number: str,
    from_number: str,
    body: str,
    provider: str,
    provider_id: str,
) -> None:
    """Keep a lead's text to a number of several organizations where support sees it."""
    reason = (
        f"{shared} is used by accounts of more than one organization: the text cannot "
        "be told to be for one of them."
    )
    try:
        with transaction.atomic():
            unrouted = UnroutedText.objects.create(
                to_number=to_number,
                from_number=from_number,
                body=body[:MAX_BODY],
                reason=reason,
                provider=provider,
                provider_id=provider_id,
            )
    except IntegrityError:
        return  # the provider posted it again: kept the first time
    log_event(
        log,
        "texting.unrouted",
        level=logging.WARNING,
        unrouted_id=unrouted.pk,
        to=shared,
        sender=mask_phone(from_number),
    )


def _received(
    account: Account,
    to_number: str,
    from_number: str,
    body: str,
    provider: str,
    provider_id: str,
) -> Text:
    call = latest_call(account_id=account.pk, phone=from_number)
    config = texting_settings_of(account)
    now = timezone.now()
    text = Text.objects.create(
        account=account,
        lead_phone=from_number,
        call=call,
        direction=Direction.IN,
        purpose=Purpose.INBOUND,
        to_number=to_number,
        from_number=from_number,
        body=body[:MAX_BODY],
        status=TextStatus.RECEIVED,
        status_at=now,
        due_at=now,
        provider=provider,
        provider_id=provider_id,
    )
    text_event_emit(text=text, type="text_received")
    keyword = compose.keyword_of(body)
    paused = False
    values = {"dealer": account.name}
    if compose.opts_out(body):
        _opt_out(account, config, text, call)
    elif keyword in compose.START_WORDS:
        _opt_in(account, config, text, call)
    elif keyword in compose.HELP_WORDS:
        help_text = config.help_template if config else TextingSettings().help_template
        text_store(
            account=account,
            config=config,
            lead_phone=from_number,
            call=call,
            purpose=Purpose.HELP,
            to_number=from_number,
            body=compose.render(help_text, **values),
        )
        return text
    elif compose.reads_like_opt_out(body):
        paused = _pause(account, text)
    elif _taken_above(text):
        pass  # an app above read it as its own (an appointment's C, R or agreed time)
    elif call is not None and compose.asks_for_a_call(
        body, config.call_me_keywords if config else ""
    ):
        text.queued_call = _call_back(call)
        if text.queued_call is not None:
            text.save(update_fields=["queued_call"])
            # The lead's own request: consent to the call it asks for (consent ledger).
            consent_give(
                account=account,
                source=Source.TEXT,
                at=text.created_at,
                phone=text.from_number,
                texts=False,
                detail=text.body,
                reference=f"text {text.pk}",
            )
    _forward(account, config, text, call, paused=paused)
    log_on_commit(
        "texting.received",
        text_id=text.pk,
        account_id=account.pk,
        call_id=call.pk if call else None,
        queued_call_id=text.queued_call_id,
    )
    return text


def _taken_above(text: Text) -> bool:
    """Whether an app above took the reply as its own (``signals.lead_replied``): "Yes"
    to an appointment's reminder confirms it rather than asking to be called."""
    return any(taken is True for _, taken in lead_replied.send(sender=Text, text=text))


def _opt_out(
    account: Account, config: TextingSettings | None, text: Text, call: Call | None
) -> None:
    """The lead's own opt-out: recorded (or a paused possible one confirmed by it), what
    was waiting canceled, and one confirmation text."""
    if opt_out_in_force(account_id=account.pk, phone=text.from_number, confirmed=True):
        return
    opt_out = _opt_out_record(
        account,
        phone=text.from_number,
        at=text.created_at,
        message=text.body,
        text=text,
        by=None,
    )
    _stopped(account, config, opt_out, text, call)


def _opt_out_record(
    account: Account,
    *,
    phone: str,
    at: datetime,
    message: str,
    text: Text | None,
    by: User | None,
) -> OptOut:
    """The opt-out in force for every account of the organization texting from the
    number the account texts from (the lead said it to the number): a paused possible
    one confirmed, one recorded for each account without. The account's own comes back."""
    sharing = list(accounts_sharing_number(account.pk).only("organization_id"))
    group = [each.pk for each in sharing]
    in_force = {
        row.account_id: row
        for row in OptOut.objects.select_for_update().filter(
            account_id__in=group, phone=phone, opted_in_at__isnull=True
        )
    }
    now = timezone.now()
    for row in in_force.values():
        row.confirmed, row.decided_by, row.decided_at = True, by, now
        row.save(update_fields=["confirmed", "decided_by", "decided_at"])
    for account_id in set(group) - in_force.keys():
        in_force[account_id] = OptOut.objects.create(
            account_id=account_id,
            phone=phone,
            opted_out_at=at,
            message=message,
            text=text,
        )
    reference = f"text {text.pk}" if text else ""
    consent_revoke(
        accounts=sharing,
        source=Source.TEXT,
        phone=phone,
        calls=False,
        texts=True,
        at=at,
        detail=message,
        reference=reference,
        by=by,
    )
    return in_force[account.pk]


def _stopped(
    account: Account,
    config: TextingSettings | None,
    opt_out: OptOut,
    text: Text,
    call: Call | None,
) -> None:
    phone = opt_out.phone
    canceled = Text.objects.filter(
        account=account,
        to_number=phone,
        direction=Direction.OUT,
        status=TextStatus.SCHEDULED,
    ).exclude(purpose__in=[Purpose.OPT_OUT, Purpose.HELP, *STAFF])
    for waiting in canceled.select_for_update():
        text_status_advance(
            waiting, TextStatus.CANCELED, error="The lead opted out of texts."
        )
    text_store(
        account=account,
        config=config,
        lead_phone=phone,
        call=call,
        purpose=Purpose.OPT_OUT,
        to_number=phone,
        body=compose.render(compose.OPT_OUT_CONFIRMATION, dealer=account.name),
    )
    text_event_emit(text=text, type="lead_opted_out", opt_out=opt_out)


def _pause(account: Account, text: Text) -> bool:
    """A reply that reads like an opt-out without its words: texting to the number pauses
    (nothing is sent to the lead) until a person confirms or dismisses it on the thread.
    Whether this text paused it (False: texting was already paused or stopped)."""
    if opted_out(account_id=account.pk, phone=text.from_number):
        return False
    OptOut.objects.create(
        account=account,
        phone=text.from_number,
        opted_out_at=text.created_at,
        message=text.body,
        text=text,
        confirmed=False,
    )
    return True


def _opt_in(
    account: Account, config: TextingSettings | None, text: Text, call: Call | None
) -> None:
    updated = OptOut.objects.filter(
        account__in=accounts_sharing_number(account.pk).values("pk"),
        phone=text.from_number,
        opted_in_at__isnull=True,
    ).update(opted_in_at=text.created_at, opt_in_message=text.body)
    if updated:
        consent_texts_renew(
            accounts=accounts_sharing_number(account.pk),
            phone=text.from_number,
            at=text.created_at,
            detail=text.body,
            reference=f"text {text.pk}",
        )
        text_store(
            account=account,
            config=config,
            lead_phone=text.from_number,
            call=call,
            purpose=Purpose.OPT_IN,
            to_number=text.from_number,
            body=compose.render(compose.OPT_IN_CONFIRMATION, dealer=account.name),
        )


def _call_back(call: Call) -> Call | None:
    """Queue a new call to the lead of ``call`` through the same pipeline, at once, unless
    one is under way already."""
    name = f"{call.first_name} {call.last_name}".strip() or "The lead"
    return call_again(
        call=call,
        origin=CallOrigin.TEXT_REPLY,
        why=f"{name} texted back asking for a call.",
    )


def _forward(
    account: Account,
    config: TextingSettings | None,
    text: Text,
    call: Call | None,
    *,
    paused: bool,
) -> None:
    """The lead's text, sent on to the lead's last agent (or the managers) by text."""
    name = (
        f"{call.first_name} {call.last_name}".strip() if call else ""
    ) or text.from_number
    note = f"Text from {name} ({text.from_number}): {text.body}"
    if text.queued_call_id:
        note += " [a call back is queued]"
    if paused:
        note += (
            " [possible opt-out: texts to this number are paused until someone"
            " confirms or dismisses it on the call page]"
        )
    for member in team_to_tell(account=account, call=call):
        text_store(
            account=account,
            config=config,
            lead_phone=text.from_number,
            call=call,
            purpose=Purpose.FORWARD,
            to_number=member.phone_number,
            body=note,
            recipient=member,
        )


def _possible_opt_out_locked(call: Call) -> OptOut:
    opt_out = (
        OptOut.objects.select_for_update(of=("self",))
        .select_related("text")
        .filter(
            account__in=accounts_sharing_number(call.account_id).values("pk"),
            phone=call.phone,
            opted_in_at__isnull=True,
            confirmed=False,
        )
        .first()
    )
    if opt_out is None:
        raise ValidationError("Nothing to decide: no possible opt-out awaits a person.")
    return opt_out


def possible_opt_out_confirm(*, call: Call, user: User) -> OptOut:
    """A person reads the lead's reply as an opt-out: it is one from now on, for every
    account texting from the number (what was waiting canceled, one confirmation text,
    the ``lead_opted_out`` event)."""
    with transaction.atomic():
        pause = _possible_opt_out_locked(call)
        opt_out = _opt_out_record(
            pause.account,
            phone=pause.phone,
            at=pause.opted_out_at,
            message=pause.message,
            text=pause.text,
            by=user,
        )
        # The event reports the lead's text; one deleted since is rebuilt from the pause.
        text = pause.text or Text(
            account=pause.account, lead_phone=pause.phone, body=pause.message
        )
        _stopped(
            pause.account,
            texting_settings_of(pause.account),
            opt_out,
            text,
            latest_call(account_id=pause.account_id, phone=pause.phone),
        )
    log_on_commit(
        "texting.opt_out_confirmed", account_id=pause.account_id, user_id=user.pk
    )
    return opt_out


def possible_opt_out_dismiss(*, call: Call, user: User) -> OptOut:
    """A person reads the lead's reply as not an opt-out: texting to the number resumes
    (nothing is sent to the lead about it)."""
    with transaction.atomic():
        pause = _possible_opt_out_locked(call)
        now = timezone.now()
        pause.opted_in_at = now
        pause.decided_by = user
        pause.decided_at = now
        pause.save(update_fields=["opted_in_at", "decided_by", "decided_at"])
    log_on_commit(
        "texting.opt_out_dismissed", account_id=pause.account_id, user_id=user.pk
    )
    return pause
