"""A lead's texts coming in: matched to the account and the lead, stored in the thread,
read for STOP, START, HELP and "call me", and forwarded to the team."""

from __future__ import annotations

import logging

from django.db import IntegrityError, transaction
from django.utils import timezone

from accounts.models import Account
from calls.models import Call, CallOrigin
from calls.services import call_queue
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
    opted_out,
    team_to_tell,
    text_route,
    texting_settings_of,
)
from texting.services import (
    MAX_BODY,
    UNDER_WAY,
    _log_on_commit,
    _set_status,
    _text_store,
)

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
    values = {"dealer": account.name}
    if compose.opts_out(body):
        _opt_out(account, config, text, call)
    elif keyword in compose.START_WORDS:
        _opt_in(account, config, text, call)
    elif keyword in compose.HELP_WORDS:
        help_text = config.help_template if config else TextingSettings().help_template
        _text_store(
            account=account,
            config=config,
            lead_phone=from_number,
            call=call,
            purpose=Purpose.HELP,
            to_number=from_number,
            body=compose.render(help_text, **values),
        )
        return text
    elif call is not None and compose.asks_for_a_call(
        body, config.call_me_keywords if config else ""
    ):
        text.queued_call = _call_back(call)
        if text.queued_call is not None:
            text.save(update_fields=["queued_call"])
    _forward(account, config, text, call)
    _log_on_commit(
        "texting.received",
        text_id=text.pk,
        account_id=account.pk,
        call_id=call.pk if call else None,
        queued_call_id=text.queued_call_id,
    )
    return text


def _opt_out(
    account: Account, config: TextingSettings | None, text: Text, call: Call | None
) -> None:
    phone = text.from_number
    if opted_out(account_id=account.pk, phone=phone):
        return
    # The STOP was sent to a number: every account of the organization texting from it
    # stops (``accounts_sharing_number``), and this thread's account first.
    opt_out, *_ = [
        OptOut.objects.create(
            account=each, phone=phone, opted_out_at=text.created_at, message=text.body
        )
        for each in [
            account,
            *accounts_sharing_number(account.pk).exclude(pk=account.pk),
        ]
    ]
    canceled = Text.objects.filter(
        account=account,
        to_number=phone,
        direction=Direction.OUT,
        status=TextStatus.SCHEDULED,
    ).exclude(purpose__in=[Purpose.OPT_OUT, Purpose.HELP, *STAFF])
    for waiting in canceled.select_for_update():
        _set_status(waiting, TextStatus.CANCELED, error="The lead opted out of texts.")
    _text_store(
        account=account,
        config=config,
        lead_phone=phone,
        call=call,
        purpose=Purpose.OPT_OUT,
        to_number=phone,
        body=compose.render(compose.OPT_OUT_CONFIRMATION, dealer=account.name),
    )
    text_event_emit(text=text, type="lead_opted_out", opt_out=opt_out)


def _opt_in(
    account: Account, config: TextingSettings | None, text: Text, call: Call | None
) -> None:
    updated = OptOut.objects.filter(
        account__in=accounts_sharing_number(account.pk).values("pk"),
        phone=text.from_number,
        opted_in_at__isnull=True,
    ).update(opted_in_at=text.created_at, opt_in_message=text.body)
    if updated:
        _text_store(
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
    under_way = Call.objects.filter(
        account_id=call.account_id, phone=call.phone, status__in=UNDER_WAY
    ).exists()
    if under_way:
        return None
    name = f"{call.first_name} {call.last_name}".strip() or "The lead"
    return call_queue(
        account=call.account,
        phone=call.phone,
        received_at=timezone.now(),
        origin=CallOrigin.TEXT_REPLY,
        team=call.team,
        altid=call.altid,
        source=call.source,
        first_name=call.first_name,
        last_name=call.last_name,
        email=call.email,
        call_notes=call.call_notes,
        whisper=f"{name} texted back asking for a call. {call.whisper}".strip(),
        lead_type=call.lead_type,
        department=call.department,
        called_on_make=call.called_on_make,
        called_on_model=call.called_on_model,
        called_on_year=call.called_on_year,
        called_on_registration=call.called_on_registration,
        called_on_summary=call.called_on_summary,
        current_make=call.current_make,
        current_model=call.current_model,
        current_year=call.current_year,
        current_registration=call.current_registration,
        current_summary=call.current_summary,
    )


def _forward(
    account: Account, config: TextingSettings | None, text: Text, call: Call | None
) -> None:
    """The lead's text, sent on to the lead's last agent (or the managers) by text."""
    name = (
        f"{call.first_name} {call.last_name}".strip() if call else ""
    ) or text.from_number
    note = f"Text from {name} ({text.from_number}): {text.body}"
    if text.queued_call_id:
        note += " [a call back is queued]"
    for member in team_to_tell(account=account, call=call):
        _text_store(
            account=account,
            config=config,
            lead_phone=text.from_number,
            call=call,
            purpose=Purpose.FORWARD,
            to_number=member.phone_number,
            body=note,
            recipient=member,
        )
