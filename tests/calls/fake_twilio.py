"""A local stand-in for Twilio's REST API (the Calls and Messages resources of API
2010-04-01).

It listens on 127.0.0.1 on a free port, checks HTTP basic auth against the account it was
made for, answers in Twilio's JSON shapes (call and message resources, and error bodies with Twilio's
codes), and records every request it receives so tests can assert exactly what the
official library sent. It also serves recording media (``Recordings/<sid>.wav``), as
Twilio does to a download authenticated with the account's SID and auth token.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest

CALLS = re.compile(r"^/2010-04-01/Accounts/(?P<account>[^/]+)/Calls\.json$")
CALL = re.compile(
    r"^/2010-04-01/Accounts/(?P<account>[^/]+)/Calls/(?P<sid>[^/]+)\.json$"
)
MESSAGES = re.compile(r"^/2010-04-01/Accounts/(?P<account>[^/]+)/Messages\.json$")
RECORDING = re.compile(
    r"^/2010-04-01/Accounts/(?P<account>[^/]+)/Recordings/(?P<sid>[^/]+)\.json$"
)
RECORDING_MEDIA = re.compile(
    r"^/2010-04-01/Accounts/(?P<account>[^/]+)/Recordings/(?P<sid>[^/]+)\.wav$"
)
E164 = re.compile(r"^\+[1-9]\d{1,14}$")
ENDED = {"completed", "canceled", "busy", "no-answer", "failed"}
SERVICE_SID = re.compile(r"^MG[0-9a-f]{32}$")
MAX_BODY = 1600
# GSM-7's basic set: a body of these alone is sent 160 characters a segment (153 when
# split), any other character makes it UCS-2 (70, and 67 when split).
GSM7 = set(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)


@dataclass
class Recorded:
    method: str
    path: str
    auth: tuple[str, str] | None
    headers: dict[str, str]
    form: dict[str, list[str]]

    def one(self, name: str) -> str:
        """The single value of a form parameter (fails if it was sent zero or several times)."""
        (value,) = self.form[name]
        return value


@dataclass
class FakeTwilio:
    account_sid: str
    auth_token: str
    requests: list[Recorded] = field(default_factory=list)
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Recording media by sid, served (behind the same basic auth) as ``<sid>.wav``.
    recordings: dict[str, bytes] = field(default_factory=dict)
    # (status, body) answered instead of the next requests, in order: outages on purpose.
    failures: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    # Seconds to wait before answering the next requests, in order (a slow Twilio; the
    # request is handled as usual, so it may have been acted on when the client gave up).
    stalls: list[float] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}"

    def start(self) -> FakeTwilio:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                fake._handle(self)

            def do_GET(self) -> None:
                fake._handle(self)

            def do_DELETE(self) -> None:
                fake._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def fail_next(
        self,
        status: int,
        *,
        code: int | None = None,
        message: str = "Service Unavailable",
    ) -> None:
        self.failures.append((status, _error(status, code or status, message)))

    # --- request handling --------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length).decode() if length else ""
        recorded = Recorded(
            method=handler.command,
            path=handler.path,
            auth=_basic_auth(handler.headers.get("Authorization", "")),
            headers=dict(handler.headers.items()),
            form=parse_qs(body, keep_blank_values=True),
        )
        with self._lock:
            self.requests.append(recorded)
            status, payload = self._answer(recorded)
            stall = self.stalls.pop(0) if self.stalls else 0.0
        time.sleep(stall)
        if isinstance(payload, bytes):
            data, content_type = payload, "audio/x-wav"
        else:
            data = json.dumps(payload).encode()
            content_type = "application/json; charset=utf-8"
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _answer(self, request: Recorded) -> tuple[int, dict[str, Any] | bytes]:
        if self.failures:
            return self.failures.pop(0)
        if request.auth != (self.account_sid, self.auth_token):
            return 401, _error(401, 20003, "Authenticate")
        if request.method == "DELETE":
            return self._delete(request.path.partition("?")[0])
        if request.method == "GET":
            return self._get(request.path)
        if request.method != "POST":
            return 405, _error(405, 20004, "Method not allowed")
        if (match := CALLS.match(request.path)) and match[
            "account"
        ] == self.account_sid:
            return self._create(request.form)
        if (match := CALL.match(request.path)) and match["account"] == self.account_sid:
            return self._update(match["sid"], request.form)
        if (match := MESSAGES.match(request.path)) and match[
            "account"
        ] == self.account_sid:
            return self._send(request.form)
        return 404, _error(
            404, 20404, f"The requested resource {request.path} was not found"
        )

    def _get(self, full_path: str) -> tuple[int, dict[str, Any] | bytes]:
        path, _, query = full_path.partition("?")
        if match := RECORDING_MEDIA.match(path):
            if match["account"] == self.account_sid and match["sid"] in self.recordings:
                return 200, self.recordings[match["sid"]]
        elif (match := CALLS.match(path)) and match["account"] == self.account_sid:
            return 200, self._list(path, parse_qs(query))
        elif (
            (match := CALL.match(full_path))
            and match["account"] == self.account_sid
            and match["sid"] in self.calls
        ):
            return 200, self.calls[match["sid"]]
        return 404, _error(
            404, 20404, f"The requested resource {full_path} was not found"
        )

    def _delete(self, path: str) -> tuple[int, dict[str, Any] | bytes]:
        """Twilio deletes a recording with 204 No Content; one it has not is a 404."""
        match = RECORDING.match(path)
        if (
            match
            and match["account"] == self.account_sid
            and self.recordings.pop(match["sid"], None) is not None
        ):
            return 204, b""
        return 404, _error(404, 20404, f"The requested resource {path} was not found")

    def add_child(self, parent_sid: str, *, to: str, **fields: Any) -> str:
        """A call Twilio placed from a ``<Dial>`` on ``parent_sid`` (a lead's leg), with
        ``fields`` (status, duration ...) over the defaults; returns its sid."""
        _, call = self._create({"To": [to], "From": ["+10000000000"], "Url": ["x"]})
        call.update(parent_call_sid=parent_sid, direction="outbound-dial", **fields)
        return str(call["sid"])

    def _list(self, path: str, query: dict[str, list[str]]) -> dict[str, Any]:
        """One page of the calls list, filtered by ``ParentCallSid`` as Twilio's is."""
        parent = query.get("ParentCallSid", [None])[0]
        size = int(query.get("PageSize", ["50"])[0])
        found = [
            call
            for call in reversed(list(self.calls.values()))  # newest first
            if parent is None or call["parent_call_sid"] == parent
        ][:size]
        return {
            "calls": found,
            "end": max(len(found) - 1, 0),
            "first_page_uri": f"{path}?PageSize={size}&Page=0",
            "next_page_uri": None,
            "page": 0,
            "page_size": size,
            "previous_page_uri": None,
            "start": 0,
            "uri": f"{path}?PageSize={size}&Page=0",
        }

    def _create(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        to, from_ = form.get("To", [""])[0], form.get("From", [""])[0]
        if not to:
            return 400, _error(400, 21201, "No 'To' number is specified")
        if not from_:
            return 400, _error(400, 21603, "A 'From' phone number is required.")
        if not E164.match(to):
            return 400, _error(400, 21211, f"Invalid 'To' Phone Number: {to}")
        if not any(name in form for name in ("Url", "Twiml", "ApplicationSid")):
            return 400, _error(400, 21205, "Url parameter is required.")
        sid = "CA" + secrets.token_hex(16)
        now = formatdate(usegmt=True)
        call = {
            "account_sid": self.account_sid,
            "annotation": None,
            "answered_by": None,
            "api_version": "2010-04-01",
            "caller_name": None,
            "date_created": now,
            "date_updated": now,
            "direction": "outbound-api",
            "duration": None,
            "end_time": None,
            "forwarded_from": None,
            "from": from_,
            "from_formatted": from_,
            "group_sid": None,
            "parent_call_sid": None,
            "phone_number_sid": None,
            "price": None,
            "price_unit": "USD",
            "queue_time": "0",
            "sid": sid,
            "start_time": None,
            "status": "queued",
            "subresource_uris": {
                "notifications": f"/2010-04-01/Accounts/{self.account_sid}/Calls/{sid}/Notifications.json",
                "recordings": f"/2010-04-01/Accounts/{self.account_sid}/Calls/{sid}/Recordings.json",
            },
            "to": to,
            "to_formatted": to,
            "trunk_sid": None,
            "uri": f"/2010-04-01/Accounts/{self.account_sid}/Calls/{sid}.json",
        }
        self.calls[sid] = call
        return 201, call

    def _update(
        self, sid: str, form: dict[str, list[str]]
    ) -> tuple[int, dict[str, Any]]:
        call = self.calls.get(sid)
        if call is None:
            return 404, _error(
                404,
                20404,
                f"The requested resource /2010-04-01/Accounts/{self.account_sid}/Calls/{sid}.json was not found",
            )
        status = form.get("Status", [""])[0]
        if status:
            if status not in {"completed", "canceled"}:
                return 400, _error(400, 21218, f"Invalid value for 'Status': {status}")
            if call["status"] not in ENDED:
                call["status"] = "completed" if status == "completed" else "canceled"
                call["date_updated"] = formatdate(usegmt=True)
        return 200, call

    def _send(self, form: dict[str, list[str]]) -> tuple[int, dict[str, Any]]:
        """A message created as Twilio's Messages resource does: queued when sent from a
        number, accepted (the service picks the number) when sent through a Messaging
        Service."""
        to = form.get("To", [""])[0]
        from_ = form.get("From", [""])[0]
        service = form.get("MessagingServiceSid", [""])[0]
        body = form.get("Body", [""])[0]
        if not to:
            return 400, _error(400, 21604, "A 'To' phone number is required.")
        if not from_ and not service:
            return 400, _error(400, 21603, "A 'From' phone number is required.")
        if not E164.match(to):
            return 400, _error(
                400, 21211, f"The 'To' number {to} is not a valid phone number."
            )
        if from_ and not E164.match(from_):
            return 400, _error(
                400, 21212, f"The 'From' number {from_} is not a valid phone number."
            )
        if service and not SERVICE_SID.match(service):
            return 400, _error(
                400,
                20404,
                f"The requested resource MessagingService {service} was not found",
            )
        if not body and "MediaUrl" not in form:
            return 400, _error(400, 21602, "Message body is required.")
        if len(body) > MAX_BODY:
            return 400, _error(
                400,
                21617,
                "The concatenated message body exceeds the 1600 character limit.",
            )
        sid = "SM" + secrets.token_hex(16)
        now = formatdate(usegmt=True)
        uri = f"/2010-04-01/Accounts/{self.account_sid}/Messages/{sid}.json"
        message = {
            "account_sid": self.account_sid,
            "api_version": "2010-04-01",
            "body": body,
            "date_created": now,
            "date_sent": None,
            "date_updated": now,
            "direction": "outbound-api",
            "error_code": None,
            "error_message": None,
            "from": from_ or None,
            "messaging_service_sid": service or None,
            "num_media": "0",
            "num_segments": str(segments(body)),
            "price": None,
            "price_unit": "USD",
            "sid": sid,
            "status": "queued" if from_ else "accepted",
            "subresource_uris": {
                "media": uri.removesuffix(".json") + "/Media.json",
            },
            "to": to,
            "uri": uri,
        }
        self.messages[sid] = message
        return 201, message


def segments(body: str) -> int:
    """How many segments Twilio splits a body into (GSM-7, else UCS-2)."""
    single, split = (160, 153) if set(body) <= GSM7 else (70, 67)
    if len(body) <= single:
        return 1
    return -(-len(body) // split)


def _error(status: int, code: int, message: str) -> dict[str, Any]:
    return {
        "code": code,
        "message": message,
        "more_info": f"https://www.twilio.com/docs/errors/{code}",
        "status": status,
    }


def _basic_auth(header: str) -> tuple[str, str] | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    user, _, password = base64.b64decode(encoded).decode().partition(":")
    return user, password


# The account the tests' fake answers for, and the public origin Twilio signs callbacks to.
ACCOUNT_SID = "AC0123456789abcdef0123456789abcdef"
AUTH_TOKEN = "0f1e2d3c4b5a69788796a5b4c3d2e1f0"
BASE = "https://leads.example.test"


@pytest.fixture
def fake_twilio() -> Any:
    fake = FakeTwilio(account_sid=ACCOUNT_SID, auth_token=AUTH_TOKEN).start()
    yield fake
    fake.stop()


@pytest.fixture
def twilio_settings(settings: Any, fake_twilio: FakeTwilio) -> Any:
    """The service on Twilio, its REST requests sent to the fake (use with usefixtures)."""
    settings.TELEPHONY_PROVIDER = "twilio"
    settings.TWILIO_ACCOUNT_SID = ACCOUNT_SID
    settings.TWILIO_AUTH_TOKEN = AUTH_TOKEN
    settings.TWILIO_API_BASE_URL = fake_twilio.url
    settings.PUBLIC_BASE_URL = BASE
    return settings
