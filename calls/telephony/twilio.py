"""The Twilio provider: rings agents through Twilio's REST API with the official library.

What happens on a leg after that is driven by Twilio's callbacks (``calls.telephony.twilio_callbacks``):
Twilio fetches TwiML when the agent answers, posts the key pressed and every status
change, and the views answer with the TwiML of the pipeline's ``Instruction``.

``TWILIO_API_BASE_URL`` sends the library's requests to another host (tests run a local
server that speaks Twilio's REST shapes); empty means Twilio itself. Only the host is
swapped, the way Twilio documents for custom HTTP clients: the real library builds,
authenticates and sends every request.
"""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.conf import settings
from django.urls import reverse
from twilio.base.exceptions import (
    TwilioException,
    TwilioRestException,
    TwilioServiceException,
)
from twilio.http.http_client import TwilioHttpClient
from twilio.http.response import Response
from twilio.rest import Client

from calls.telephony.base import (
    AgentDial,
    EventKind,
    LegStatus,
    Provider,
    TelephonyUnavailable,
)

log = logging.getLogger(__name__)

TWILIO_API = "https://api.twilio.com"
# A request to Twilio that takes longer than this is taken as Twilio being unreachable.
REQUEST_TIMEOUT = 10.0
STATUS_EVENTS = ["initiated", "ringing", "answered", "completed"]
# A call resource's final statuses, as the pipeline's events.
ENDED_BY = {
    "completed": EventKind.COMPLETED,
    "canceled": EventKind.NO_ANSWER,
    "no-answer": EventKind.NO_ANSWER,
    "busy": EventKind.BUSY,
    "failed": EventKind.FAILED,
}


def webhook_url(name: str, attempt_id: int) -> str:
    """The absolute URL Twilio calls back for one leg (``name`` in the ``twilio`` namespace,
    ``calls.telephony.twilio_callback_urls``)."""
    return settings.PUBLIC_BASE_URL + reverse(
        f"twilio:{name}", kwargs={"attempt_id": attempt_id}
    )


class RoutedHttpClient(TwilioHttpClient):
    """Twilio's own HTTP client, with requests for api.twilio.com sent to ``base_url``."""

    def __init__(self, *, base_url: str, timeout: float) -> None:
        super().__init__(timeout=timeout)
        self.base_url = base_url.rstrip("/")

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Response:
        if self.base_url and (url == TWILIO_API or url.startswith(TWILIO_API + "/")):
            url = self.base_url + url[len(TWILIO_API) :]
        return super().request(method, url, *args, **kwargs)


def twilio_client() -> Client:
    """A client for the configured account, pointed at ``TWILIO_API_BASE_URL`` if set."""
    http_client = RoutedHttpClient(
        base_url=settings.TWILIO_API_BASE_URL, timeout=REQUEST_TIMEOUT
    )
    return Client(
        settings.TWILIO_ACCOUNT_SID, settings.TWILIO_AUTH_TOKEN, http_client=http_client
    )


def _unavailable(error: Exception) -> bool:
    """Whether an error means "try again later" (network, 429, 5xx) rather than a refusal."""
    if isinstance(error, requests.RequestException):
        return True
    if isinstance(error, TwilioRestException | TwilioServiceException):
        return int(error.status) == 429 or int(error.status) >= 500
    return False


class TwilioProvider(Provider):
    name = "twilio"

    def __init__(self, client: Client | None = None) -> None:
        self._client = client

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = twilio_client()
        return self._client

    def dial_agent(self, dial: AgentDial) -> str:
        """Ring the agent; Twilio fetches the answer TwiML and posts status changes per leg.

        Raises ``TelephonyUnavailable`` when Twilio cannot be reached or answers 429/5xx;
        a refusal (4xx: an invalid number, an unverified caller ID) propagates as is."""
        try:
            call = self.client.calls.create(
                to=dial.number,
                from_=dial.caller_id,
                url=webhook_url("agent-answer", dial.attempt_id),
                method="POST",
                status_callback=webhook_url("agent-status", dial.attempt_id),
                status_callback_event=STATUS_EVENTS,
                status_callback_method="POST",
                timeout=dial.ring_seconds,
            )
        except (requests.RequestException, TwilioException) as error:
            if _unavailable(error):
                raise TelephonyUnavailable(
                    f"Twilio could not ring attempt {dial.attempt_id}: {error}"
                ) from error
            raise
        return str(call.sid)

    def hangup(self, *, provider_id: str, attempt_id: int) -> None:
        """End a leg, best effort: ``completed`` hangs up a leg in progress and cancels one
        still queued or ringing.

        Nothing is raised: hang-ups run inside other legs' callbacks, which must still answer
        their TwiML. A leg left up is harmless, since its attempt is already ended and its
        next callback is answered with ``<Hangup/>``."""
        if not provider_id:
            log.warning("attempt %s has no Twilio call sid to hang up", attempt_id)
            return
        try:
            self.client.calls(provider_id).update(status="completed")
        except (requests.RequestException, TwilioException) as error:
            # A leg that already ended is refused with a 4xx; that is the outcome we wanted.
            level = logging.WARNING if _unavailable(error) else logging.INFO
            log.log(
                level,
                "Twilio did not hang up %s (attempt %s): %s",
                provider_id,
                attempt_id,
                error,
            )

    def leg_status(
        self, *, provider_id: str, attempt_id: int, parent_provider_id: str = ""
    ) -> LegStatus | None:
        """The call resource of the leg; a lead's leg is the child call of the agent's."""
        try:
            if provider_id:
                call = self.client.calls(provider_id).fetch()
            elif parent_provider_id:
                children = self.client.calls.list(
                    parent_call_sid=parent_provider_id, limit=1
                )
                if not children:
                    return None
                call = children[0]
            else:
                return None
        except (requests.RequestException, TwilioException) as error:
            if _unavailable(error):
                raise TelephonyUnavailable(
                    f"Twilio could not tell the status of attempt {attempt_id}: {error}"
                ) from error
            return None  # no such call: Twilio never placed it
        status = str(call.status)
        if status in ENDED_BY:
            seconds = int(call.duration or 0)
            return LegStatus(
                live=False,
                answered=status == "completed" and seconds > 0,
                ended_by=ENDED_BY[status],
                duration=seconds if status == "completed" else None,
            )
        return LegStatus(live=True, answered=status == "in-progress")
