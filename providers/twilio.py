"""Twilio, in one place: the client, the check of its requests (signature and members),
the telephony provider and the messaging provider.

The telephony provider rings agents through Twilio's REST API with the official library.
What happens on a leg after that is driven by Twilio's callbacks (``calls.telephony.twilio_callbacks``):
Twilio fetches TwiML when the agent answers, posts the key pressed and every status
change, and the views answer with the TwiML of the pipeline's ``Instruction``.

``TWILIO_API_BASE_URL`` sends the library's requests to another host (tests run a local
server that speaks Twilio's REST shapes); empty means Twilio itself. Only the host is
swapped, the way Twilio documents for custom HTTP clients: the real library builds,
authenticates and sends every request.

Every callback Twilio sends (voice: ``calls.telephony.twilio_callbacks``; texts:
``texting.twilio_callbacks``) is checked here first: signed with the account's auth token
(``signed_by_twilio``), and holding its members as Twilio sends them (``malformed_member``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import requests
from django.conf import settings
from django.db.models import Model
from django.http import HttpRequest
from django.urls import reverse
from twilio.base.exceptions import (
    TwilioException,
    TwilioRestException,
    TwilioServiceException,
)
from twilio.http.http_client import TwilioHttpClient
from twilio.http.response import Response
from twilio.request_validator import RequestValidator
from twilio.rest import Client

from core.validation import digits_only
from providers.messaging import (
    OutgoingText,
    TextingUnavailable,
    TextOutcomeUnknown,
    TextProvider,
    TextRefused,
)
from providers.telephony import (
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


# --- the members of Twilio's callbacks, as Twilio sends them: a signature proves who
# signed, not that the values fit (a test tool or a leaked auth token signs anything).

_SID = re.compile(r"[A-Z]{2}[0-9a-fA-F]{32}")
_PRINTABLE = re.compile(r"[!-~]+")  # ASCII without spaces and control characters
# Seconds and error codes: at most 9 digits, which every integer column holds.
_NUMBER_DIGITS = 9
STATUS_LENGTH = 32


def max_length_of(model: type[Model], field: str) -> int:
    """The ``max_length`` of a text column: the longest value it stores."""
    length = getattr(model._meta.get_field(field), "max_length", None)
    if not isinstance(length, int):
        raise TypeError(f"{model.__name__}.{field} has no max_length")
    return length


def twilio_sid(value: str) -> bool:
    """A Twilio sid: two capital letters and 32 hex digits (``SM…``, ``MG…``, ``CA…``)."""
    return _SID.fullmatch(value) is not None


def printable(max_length: int) -> Callable[[str], bool]:
    """A phone number or a status word: printable ASCII, no space, at most ``max_length``."""
    return lambda value: (
        len(value) <= max_length and _PRINTABLE.fullmatch(value) is not None
    )


def number(value: str) -> bool:
    """A count of seconds or an error code: ASCII digits an integer column holds."""
    return len(value) <= _NUMBER_DIGITS and digits_only(value)


def storable_text(value: str) -> bool:
    """Free text (a lead's text): anything a text column holds, which is all but NUL."""
    return "\x00" not in value


@dataclass(frozen=True)
class Member:
    """One member of a callback's form: what a value of it must be (an empty value counts
    as absent), and whether Twilio always sends it."""

    valid: Callable[[str], bool]
    required: bool = False


Form = Mapping[str, Member]

STATUS_WORD = Member(printable(STATUS_LENGTH))


def malformed_member(request: HttpRequest, form: Form) -> str | None:
    """The name of the first member of ``form`` that this callback holds as Twilio never
    sends it (required and missing, too long, a character it never sends), else None.
    Every value of a repeated member is checked; the views read the last."""
    for name, member in form.items():
        values = request.POST.getlist(name)
        if member.required and not (values and values[-1]):
            return name
        if not all(member.valid(value) for value in values if value):
            return name
    return None


def signed_by_twilio(request: HttpRequest) -> bool:
    """Whether ``X-Twilio-Signature`` signs this request's public URL and form parameters
    with the account's auth token (Twilio signs the URL it called, not our internal host)."""
    signature = request.headers.get("X-Twilio-Signature", "")
    if not signature or not settings.TWILIO_AUTH_TOKEN:
        return False
    url = settings.PUBLIC_BASE_URL + request.get_full_path()
    return bool(
        RequestValidator(settings.TWILIO_AUTH_TOKEN).validate(
            url, request.POST, signature
        )
    )


# --- Voice


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


# --- Twilio Messaging

SERVICE_SID_PREFIX = "MG"


def status_callback_url(text_id: int) -> str:
    return settings.PUBLIC_BASE_URL + reverse(
        "texting-twilio:status", kwargs={"text_id": text_id}
    )


class TwilioTexts(TextProvider):
    name = "twilio"

    def send(self, text: OutgoingText) -> str:
        sender = (
            {"messaging_service_sid": text.sender}
            if text.sender.startswith(SERVICE_SID_PREFIX)
            else {"from_": text.sender}
        )
        try:
            message = twilio_client().messages.create(
                to=text.to,
                body=text.body,
                status_callback=status_callback_url(text.text_id),
                **sender,
            )
        except requests.ConnectTimeout as error:
            # Also a Timeout, but no connection was made: Twilio never saw the text.
            raise TextingUnavailable(
                f"Twilio could not be reached in time: {error}"
            ) from error
        except requests.Timeout as error:
            raise TextOutcomeUnknown(
                f"Twilio did not answer in time: {error}"
            ) from error
        except requests.RequestException as error:
            raise TextingUnavailable(f"Twilio could not be reached: {error}") from error
        except TwilioRestException as error:
            if int(error.status) == 429:
                raise TextingUnavailable(
                    f"Twilio is rate limiting: {error.msg}"
                ) from error
            if int(error.status) >= 500:
                raise TextOutcomeUnknown(
                    f"Twilio answered {error.status}: {error.msg}"
                ) from error
            raise TextRefused(
                f"Twilio refused it ({error.code}): {error.msg}"
            ) from error
        except TwilioException as error:
            raise TextRefused(f"Twilio refused it: {error}") from error
        return str(message.sid)
