"""The outside world of the multi-host test, each run as a process in a host of its own:

- ``receiver``: an integrator's webhook endpoint, HTTPS with a certificate of its own for
  its address, writing each POST it takes as a line of JSON (path, body) to a file;
- ``stt``: a speech-to-text server speaking OpenAI's shapes (``/v1/audio/transcriptions``,
  verbose_json), what ``TRANSCRIPTION_BACKEND=remote`` calls: a few fixed segments per
  channel after ``STT_SECONDS`` (a GPU's time for a channel: a transcription takes a while,
  so a host cut off is caught holding one), and no CPU;
- ``mail``: the dealer's CRM mail server (aiosmtpd), writing each message it takes as a
  line of JSON (recipients, the message as text) to a file.

No Django: ``python -m tests.multihost.servers receiver|stt|mail ADDRESS PORT DIR``.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

STT_SECONDS = 1.0


class _Quiet(BaseHTTPRequestHandler):
    timeout = 30

    def answer(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def certificate(directory: Path, address: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``address`` (what WEBHOOK_CA_BUNDLE trusts)."""
    cert, key = directory / "receiver-cert.pem", directory / "receiver-key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
         "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", f"/CN={address}",
         "-addext", f"subjectAltName=IP:{address}"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


def receiver(address: str, port: int, directory: Path) -> None:
    lock = threading.Lock()
    received = (directory / "received.jsonl").open("a")

    class Handler(_Quiet):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                line = {"path": self.path, "body": body.decode(errors="replace")}
                received.write(json.dumps(line) + "\n")
                received.flush()
            self.answer(200, b"ok", "text/plain")

    cert, key = certificate(directory, address)
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)

    class Server(ThreadingHTTPServer):
        daemon_threads = True

        def finish_request(self, request: Any, client_address: Any) -> None:
            try:
                tls = context.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
            super().finish_request(tls, client_address)

    serve(Server((address, port), Handler))


def stt(address: str, port: int, directory: Path) -> None:
    requests = (directory / "stt.log").open("a")

    class Handler(_Quiet):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            requests.write(f"{self.path} {len(body)}\n")
            requests.flush()
            if self.path.endswith("/audio/transcriptions"):
                if b'name="language"' not in body:  # which language is spoken
                    answer: dict[str, Any] = {"language": "english", "text": "..."}
                else:
                    time.sleep(STT_SECONDS)
                    answer = {
                        "task": "transcribe",
                        "language": "english",
                        "text": "...",
                        "segments": [
                            {
                                "id": 0,
                                "start": 0.2,
                                "end": 0.9,
                                "text": " Hello there.",
                            },
                            {
                                "id": 1,
                                "start": 1.0,
                                "end": 1.4,
                                "text": " About the car.",
                            },
                        ],
                    }
            else:  # a chat completion (a summary)
                answer = {
                    "choices": [
                        {"message": {"role": "assistant", "content": "A call."}}
                    ]
                }
            self.answer(200, json.dumps(answer).encode(), "application/json")

    serve(ThreadingHTTPServer((address, port), Handler))


def mail(address: str, port: int, directory: Path) -> None:
    from aiosmtpd.controller import Controller

    received = (directory / "mail.jsonl").open("a")

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
            line = {"to": list(envelope.rcpt_tos), "message": envelope.content.decode()}
            received.write(json.dumps(line) + "\n")
            received.flush()
            return "250 Message accepted for delivery"

    Controller(Handler(), hostname=address, port=port).start()
    print("serving", flush=True)
    threading.Event().wait()


def serve(server: ThreadingHTTPServer) -> None:
    server.daemon_threads = True
    print("serving", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    kind, address, port, directory = sys.argv[1:5]
    {"receiver": receiver, "stt": stt, "mail": mail}[kind](
        address, int(port), Path(directory)
    )
