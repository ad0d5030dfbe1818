"""Outbound webhooks: endpoints, the outbox of events, and their signed delivery.

The work lives by job: ``webhooks.endpoints`` (registration, secrets, URL checks),
``webhooks.emission`` (writing events and their deliveries), ``webhooks.delivery``
(sending one delivery and recording the answer) and ``webhooks.outbox`` (handing
deliveries to the broker, the sweep, resending, replay, pruning). This module names
them all for the callers elsewhere.
"""

from webhooks.delivery import (
    EXCERPT_BYTES,
    GONE,
    TIMED_OUT,
    USER_AGENT,
    Response,
    backoff,
    webhook_delivery_send,
)
from webhooks.emission import iso, webhook_event_emit, webhook_test_send
from webhooks.endpoints import (
    NOT_ALLOWED,
    NOT_HTTPS,
    UNRESOLVABLE,
    endpoint_secrets,
    webhook_endpoint_create,
    webhook_endpoint_delete,
    webhook_endpoint_update,
    webhook_secret_rotate,
    webhook_url_check,
)
from webhooks.outbox import (
    webhook_deliveries_sweep,
    webhook_delivery_resend,
    webhook_endpoint_replay,
    webhook_events_prune,
)

__all__ = [
    "EXCERPT_BYTES",
    "GONE",
    "NOT_ALLOWED",
    "NOT_HTTPS",
    "TIMED_OUT",
    "UNRESOLVABLE",
    "USER_AGENT",
    "Response",
    "backoff",
    "endpoint_secrets",
    "iso",
    "webhook_deliveries_sweep",
    "webhook_delivery_resend",
    "webhook_delivery_send",
    "webhook_endpoint_create",
    "webhook_endpoint_delete",
    "webhook_endpoint_replay",
    "webhook_endpoint_update",
    "webhook_event_emit",
    "webhook_events_prune",
    "webhook_secret_rotate",
    "webhook_test_send",
    "webhook_url_check",
]
