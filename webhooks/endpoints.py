"""Webhook endpoints: registration, changes, removal, signing secrets, and the URL check.

An endpoint's URL is vetted when it is registered or changed, and again at every post
(``webhooks.delivery``): a host name may come to point somewhere it may not.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from accounts.models import Account, Organization
from core.logging import log_event
from core.outbound import Deadline, DestinationError, destination_vet
from core.versioned import VersionedCache
from webhooks.models import SUBSCRIBABLE, WebhookEndpoint
from webhooks.outbox import DUE_GRACE, due_deliveries, enqueue_due
from webhooks.signing import secret_decrypt, secret_encrypt, secret_new, secret_prefix

# Each organization's endpoints as events need them, by organization id: every event of an
# organization (every lead's outcome among them) reads them. Saving or deleting an
# endpoint, setting its accounts (signals, webhooks.apps) and disabling one make every
# entry stale.
subscriptions = VersionedCache("webhook-endpoints")


@dataclass(frozen=True)
class Subscription:
    endpoint_id: int
    is_active: bool
    event_types: tuple[str, ...]
    account_ids: frozenset[int]

    def wants(self, type: str, account_id: int | None) -> bool:
        """Whether this endpoint is sent an event of ``type`` about ``account_id``."""
        if not self.is_active:
            return False
        if self.event_types and type not in self.event_types:
            return False
        return not self.account_ids or account_id in self.account_ids


def organization_subscriptions(*, organization_id: int) -> list[Subscription]:
    """The organization's endpoints, oldest first, as the cache keeps them."""
    found, _ = subscriptions.get(
        str(organization_id), lambda: _subscriptions_read(organization_id)
    )
    return list(found)


def _subscriptions_read(organization_id: int) -> list[Subscription]:
    endpoints = (
        WebhookEndpoint.objects.filter(organization_id=organization_id)
        .prefetch_related("accounts")
        .order_by("id")
    )
    return [
        Subscription(
            endpoint.pk,
            endpoint.is_active,
            tuple(endpoint.event_types or ()),
            frozenset(account.pk for account in endpoint.accounts.all()),
        )
        for endpoint in endpoints
    ]


log = logging.getLogger(__name__)

NOT_HTTPS = "The webhook URL must be an HTTPS URL."
NOT_ALLOWED = (
    "The webhook URL's address is not allowed (private, loopback or link-local)."
)
UNRESOLVABLE = "The webhook URL's host name does not resolve."
REFUSALS = {
    "not_https": NOT_HTTPS,
    "not_allowed": NOT_ALLOWED,
    "unresolvable": UNRESOLVABLE,
}


def webhook_url_check(*, url: str) -> None:
    """Refuse a URL the service may not post to: not HTTPS, or an internal address (plain
    HTTP to loopback only where ``WEBHOOK_ALLOW_LOCAL_HTTP`` is on: make run's settings)."""
    try:
        destination_vet(
            url,
            deadline=Deadline(5.0),
            allowed=settings.WEBHOOK_ALLOWED_ADDRESSES,
            local_http=settings.WEBHOOK_ALLOW_LOCAL_HTTP,
        )
    except DestinationError as error:
        raise ValidationError({"url": [REFUSALS[error.reason]]}) from None
    except OSError:
        raise ValidationError({"url": [UNRESOLVABLE]}) from None


def _check_accounts(accounts: Iterable[Account], organization_id: int) -> list[Account]:
    chosen = list(accounts)
    if any(account.organization_id != organization_id for account in chosen):
        raise ValidationError({"accounts": ["Choose accounts of the organization."]})
    return chosen


def _check_event_types(event_types: Iterable[str]) -> list[str]:
    chosen = list(dict.fromkeys(event_types))
    unknown = [t for t in chosen if t not in SUBSCRIBABLE]
    if unknown:
        raise ValidationError({"event_types": [f"Unknown event types: {unknown}."]})
    return chosen


@transaction.atomic
def webhook_endpoint_create(
    *,
    organization: Organization,
    url: str,
    description: str = "",
    accounts: Iterable[Account] = (),
    event_types: Iterable[str] = (),
    is_active: bool = True,
) -> tuple[WebhookEndpoint, str]:
    """Register an endpoint; returns it and its signing secret, which is never shown again."""
    webhook_url_check(url=url)
    accounts = _check_accounts(accounts, organization.pk)
    secret = secret_new()
    endpoint = WebhookEndpoint.objects.create(
        organization=organization,
        url=url,
        description=description,
        is_active=is_active,
        event_types=_check_event_types(event_types),
        secret_encrypted=secret_encrypt(secret),
        secret_prefix=secret_prefix(secret),
    )
    endpoint.accounts.set(accounts)
    return endpoint, secret


@transaction.atomic
def webhook_endpoint_update(
    *,
    endpoint: WebhookEndpoint,
    url: str,
    description: str,
    accounts: Iterable[Account],
    event_types: Iterable[str],
    is_active: bool,
) -> WebhookEndpoint:
    """Change an endpoint's URL, filters or active flag (re-activating clears a disable)."""
    if url != endpoint.url:
        webhook_url_check(url=url)
    accounts = _check_accounts(accounts, endpoint.organization_id)
    endpoint.url, endpoint.description = url, description
    endpoint.event_types = _check_event_types(event_types)
    if is_active and not endpoint.is_active:
        endpoint.disabled_at, endpoint.disabled_reason = None, ""
        endpoint.failing_since = None
        transaction.on_commit(
            # Due now, without the sweep's grace: re-activation sends at once.
            lambda: enqueue_due(
                due_deliveries(timezone.now() + DUE_GRACE), endpoint.pk
            ),
            robust=True,
        )
    endpoint.is_active = is_active
    endpoint.save(
        update_fields=[
            "url",
            "description",
            "event_types",
            "is_active",
            "disabled_at",
            "disabled_reason",
            "failing_since",
        ]
    )
    endpoint.accounts.set(accounts)
    return endpoint


def webhook_endpoint_delete(*, endpoint: WebhookEndpoint) -> None:
    """Remove an endpoint with its deliveries (the events stay for other endpoints)."""
    WebhookEndpoint.objects.filter(pk=endpoint.pk).delete()


def webhook_secret_rotate(*, endpoint: WebhookEndpoint) -> str:
    """A new signing secret, returned once; the old one still signs for the overlap
    (``WEBHOOK_SECRET_OVERLAP``), so receivers can switch without losing deliveries."""
    secret = secret_new()
    with transaction.atomic():
        endpoint = WebhookEndpoint.objects.select_for_update().get(pk=endpoint.pk)
        endpoint.previous_secret_encrypted = endpoint.secret_encrypted
        endpoint.previous_secret_expires_at = (
            timezone.now() + settings.WEBHOOK_SECRET_OVERLAP
        )
        endpoint.secret_encrypted = secret_encrypt(secret)
        endpoint.secret_prefix = secret_prefix(secret)
        endpoint.save(
            update_fields=[
                "previous_secret_encrypted",
                "previous_secret_expires_at",
                "secret_encrypted",
                "secret_prefix",
            ]
        )
    return secret


def endpoint_secrets(endpoint: WebhookEndpoint, *, at: datetime) -> list[str]:
    """The secrets a delivery is signed with now: the current one, and the previous one
    while its overlap lasts."""
    found = [secret_decrypt(endpoint.secret_encrypted)]
    expires = endpoint.previous_secret_expires_at
    if endpoint.previous_secret_encrypted and expires and expires > at:
        found.append(secret_decrypt(endpoint.previous_secret_encrypted))
    return found


def endpoint_disable(endpoint_id: int, *, reason: str, at: datetime) -> None:
    changed = WebhookEndpoint.objects.filter(pk=endpoint_id, is_active=True).update(
        is_active=False, disabled_at=at, disabled_reason=reason[:200]
    )
    if changed:
        subscriptions.changed()
        log_event(
            log,
            "webhook.endpoint_disabled",
            level=logging.WARNING,
            endpoint_id=endpoint_id,
            reason=reason,
        )
