"""Click-to-call's one write: hand the request to the call pipeline."""

from __future__ import annotations

import logging
from datetime import datetime

from django.db import transaction

from accounts.models import Account
from calls.models import Call, CallOrigin
from calls.services import call_queue
from consent.models import Source
from consent.services import consent_give
from core.logging import log_event, mask_phone
from users.models import User

SOURCE = "Click to Call"
log = logging.getLogger(__name__)


@transaction.atomic
def click_to_call_queue(
    *,
    account: Account,
    agent: User | None,
    phone: str,
    first_name: str,
    last_name: str,
    received_at: datetime,
    vendor_agent_id: str = "",
    agent_number: str = "",
) -> Call:
    """Queue a call offered to ``agent`` first; on press 1 the customer at ``phone`` is dialed.
    Without ``agent``, the agent is not a user: ``agent_number`` is rung at once, and the
    vendor's ``vendor_agent_id`` kept on the call. The request is the customer's consent
    to the call, recorded in the consent ledger."""
    consent_give(
        account=account,
        source=Source.CLICK_TO_CALL,
        at=received_at,
        phone=phone,
        texts=False,
        detail=f"Click-to-call for agent {agent or vendor_agent_id or agent_number}",
    )
    call = call_queue(
        account=account,
        phone=phone,
        received_at=received_at,
        origin=CallOrigin.CLICK_TO_CALL,
        requested_agent=agent,
        vendor_agent_id=vendor_agent_id,
        agent_number=agent_number,
        first_name=first_name,
        last_name=last_name,
        source=SOURCE,
    )
    log_event(
        log,
        "clicktocall.accepted",
        call_id=call.pk,
        account_id=account.pk,
        agent_id=agent.pk if agent else None,
        vendor_agent_id=vendor_agent_id,
        agent_number=mask_phone(agent_number) if agent_number else None,
    )
    return call
