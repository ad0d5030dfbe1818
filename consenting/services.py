"""A person's decision on a spoken revocation: confirmed, it is a revocation of the
account's calls in the consent ledger (who, when, the call as its reference); dismissed,
the decision is kept and nothing else changes."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from accounts.models import Account
from consent.models import ConsentEvent, Source
from consent.services import consent_give, consent_revoke
from consenting.models import Decision, SpokenRevocation
from texting.models import OptOut
from users.models import User


class AlreadyDecided(Exception):
    """Someone decided first; their decision stands."""


@transaction.atomic
def spoken_revocation_decide(
    *, suggestion_id: int, user: User, confirm: bool
) -> ConsentEvent | None:
    """Record ``user``'s decision; the ledger's revocation when confirmed."""
    suggestion = (
        SpokenRevocation.objects.select_for_update()
        .select_related("account", "call")
        .get(pk=suggestion_id)
    )
    if not suggestion.waiting:
        raise AlreadyDecided(suggestion.get_decision_display())
    now = timezone.now()
    suggestion.decision = Decision.CONFIRMED if confirm else Decision.DISMISSED
    suggestion.decided_by, suggestion.decided_at = user, now
    suggestion.save(update_fields=["decision", "decided_by", "decided_at"])
    if not confirm:
        return None
    (event,) = consent_revoke(
        accounts=[suggestion.account],
        source=Source.SPOKEN,
        phone=suggestion.phone,
        calls=True,
        texts=False,
        at=now,
        detail=suggestion.sentence,
        reference=f"call {suggestion.call_id}",
        by=user,
    )
    return event


@transaction.atomic
def integrator_consent(
    *,
    account: Account,
    phone: str,
    email: str,
    channel: str,
    revoke: bool,
    note: str,
) -> list[ConsentEvent]:
    """An integrator's revocation (of ``calls``, ``texts`` or ``all``) or consent (to
    calls), for the account only. A revocation of texts also stops the account's texts
    to the number, as the person's STOP does, until they text START."""
    calls, texts = channel in ("calls", "all"), channel in ("texts", "all")
    common = {
        "source": Source.INTEGRATOR,
        "phone": phone,
        "email": email,
        "detail": note,
        "calls": calls,
        "texts": texts,
    }
    if not revoke:
        given = consent_give(account=account, at=timezone.now(), **common)  # type: ignore[arg-type]
        return [given] if given else []
    events = consent_revoke(accounts=[account], **common)  # type: ignore[arg-type]
    if texts and phone:
        in_force = (
            OptOut.objects.select_for_update()
            .filter(account=account, phone=phone, opted_in_at__isnull=True)
            .first()
        )
        if in_force is None:
            OptOut.objects.create(
                account=account,
                phone=phone,
                opted_out_at=events[0].at,
                message=f"Integrator: {note}"[:1000] if note else "Integrator",
            )
        elif not in_force.confirmed:
            in_force.confirmed, in_force.decided_at = True, timezone.now()
            in_force.save(update_fields=["confirmed", "decided_at"])
    return events
