"""A webhook receiver for tests: the picture server's HTTPS (self-signed, 127.0.0.1), taking
POSTs, recording each, and answering as a test scripts it."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.users.picture_server import PictureServer


@dataclass(frozen=True)
class Received:
    path: str
    headers: dict[str, str]  # lower-case names
    body: bytes

    @property
    def event(self) -> dict[str, Any]:
        return json.loads(self.body)


@dataclass(frozen=True)
class Answer:
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0  # seconds before answering (longer than the timeout: a timeout)


class _Handler(BaseHTTPRequestHandler):
    server: Receiver
    timeout = 30

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {name.lower(): value for name, value in self.headers.items()}
        answer = self.server.next_answer(self.path)
        self.server.record(Received(self.path, headers, body))
        if answer.delay:
            time.sleep(answer.delay)
        self.send_response(answer.status)
        for name, value in answer.headers:
            self.send_header(name, value)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, format: str, *args: Any) -> None:
        pass


class Receiver(PictureServer):
    handler_class = _Handler

    def __init__(self, directory: Path) -> None:
        self.received: list[Received] = []
        self._scripts: dict[str, list[Answer]] = {}
        self._lock = threading.Lock()
        super().__init__(directory)

    def script(self, path: str, *answers: Answer | int) -> None:
        """Answer the next POSTs to ``path`` so, in order; then 200."""
        self._scripts[path] = [
            a if isinstance(a, Answer) else Answer(a) for a in answers
        ]

    def next_answer(self, path: str) -> Answer:
        with self._lock:
            queued = self._scripts.get(path) or []
            return queued.pop(0) if queued else Answer()

    def record(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)

    def clear(self) -> None:
        with self._lock:
            self.received.clear()
            self._scripts.clear()

    def events(self, path: str | None = None) -> list[dict[str, Any]]:
        with self._lock:
            return [r.event for r in self.received if path is None or r.path == path]
