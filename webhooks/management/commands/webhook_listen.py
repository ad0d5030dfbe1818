"""Receive an organization's webhooks on this machine, to try them against ``make run``.

Starts a small HTTP receiver on 127.0.0.1, registers it as an endpoint of the organization
(plain HTTP to loopback: only where ``WEBHOOK_ALLOW_LOCAL_HTTP`` is on, as in make run's
settings), checks each delivery's signature with the endpoint's secret as the integrator's
guide says, prints the event and answers 204; a bad signature gets 401. Ctrl-C removes the
endpoint.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import Organization
from accounts.selectors import organization_by_ref
from webhooks.models import WebhookEndpoint
from webhooks.services import webhook_endpoint_create, webhook_endpoint_delete
from webhooks.signing import delivery_verify

HOST = "127.0.0.1"
BODY_SHOWN = 200  # characters of each event's body printed
MAX_BODY = 1_048_576


class Command(BaseCommand):
    help = (
        "Listen for an organization's webhooks on 127.0.0.1 (registered as its endpoint "
        "until Ctrl-C), verify each delivery's signature and print the event."
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Set once listening, for a caller running the command in a thread (the tests).
        self.server: ThreadingHTTPServer | None = None
        self.endpoint: WebhookEndpoint | None = None
        self.listening = threading.Event()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--organization",
            required=True,
            help="Register the receiver for this organization (id or exact name).",
        )
        parser.add_argument(
            "--port",
            type=int,
            default=8765,
            help="Port on 127.0.0.1 to listen on (default 8765; 0: any free port).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        organization = _organization(options["organization"])
        try:
            server = ThreadingHTTPServer((HOST, options["port"]), _Receiver)
        except OSError as error:
            raise CommandError(
                f"Cannot listen on {HOST}:{options['port']}: {error}"
            ) from None
        url = f"http://{HOST}:{server.server_port}/"
        try:
            endpoint, secret = webhook_endpoint_create(
                organization=organization,
                url=url,
                description=f"webhook_listen on {HOST}:{server.server_port}",
            )
        except ValidationError as error:
            server.server_close()
            raise CommandError(
                f"{' '.join(error.messages)} (plain HTTP to loopback is accepted only "
                "with WEBHOOK_ALLOW_LOCAL_HTTP on, as in make run's settings)"
            ) from None
        server.secret = secret  # type: ignore[attr-defined]
        server.command = self  # type: ignore[attr-defined]
        self.server, self.endpoint = server, endpoint
        self.stdout.write(
            f"Listening on {url} as endpoint {endpoint.pk} of {organization.name} "
            f"(secret {endpoint.secret_prefix}...). Ctrl-C stops and removes it."
        )
        self.stdout.flush()
        self.listening.set()
        if threading.current_thread() is threading.main_thread():
            # SIGTERM (kill, a supervisor, a closed terminal's shell) stops it as Ctrl-C
            # does: the endpoint is removed, not left registered to a dead port.
            signal.signal(signal.SIGTERM, _interrupt)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
            webhook_endpoint_delete(endpoint=endpoint)
            self.stdout.write(f"Stopped; endpoint {endpoint.pk} removed.")

    def delivery_print(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


class _Receiver(BaseHTTPRequestHandler):
    server: Any

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._answer(413)
            return
        body = self.rfile.read(length)
        headers = {name.lower(): value for name, value in self.headers.items()}
        command: Command = self.server.command
        if not delivery_verify(
            self.server.secret, headers=headers, body=body, now=time.time()
        ):
            command.delivery_print(
                f"REFUSED {headers.get('webhook-id', '?')}: bad or stale signature (401)"
            )
            self._answer(401)
            return
        try:
            event = json.loads(body)
            kind = event.get("type", "?")
        except (ValueError, AttributeError):
            kind = "?"
        text = body.decode("utf-8", "replace")
        short = text if len(text) <= BODY_SHOWN else text[:BODY_SHOWN] + "..."
        command.delivery_print(f"{kind} {headers.get('webhook-id', '?')} {short}")
        self._answer(204)

    def _answer(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: each delivery is printed once, above."""


def _organization(ref: str) -> Organization:
    organization = organization_by_ref(ref)
    if organization is None:
        raise CommandError(f"No organization with id or name {ref.strip()!r}.")
    return organization
