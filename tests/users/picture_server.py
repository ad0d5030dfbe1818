"""A local HTTPS server with a self-signed certificate, serving pictures and misbehaving on request."""

from __future__ import annotations

import io
import ssl
import struct
import subprocess
import threading
import time
import zlib
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from PIL import Image

from users.pictures import MAX_SIDE

LARGE_BYTES = 6 * 1024 * 1024


def _image(
    image_format: str, size: tuple[int, int] = (8, 8), mode: str = "RGB"
) -> bytes:
    buffer = io.BytesIO()
    Image.new(mode, size, "red" if mode == "RGB" else 0).save(buffer, image_format)
    return buffer.getvalue()


def _mpo() -> bytes:
    """A multi-picture JPEG, as many cameras write: Pillow calls it MPO."""
    buffer = io.BytesIO()
    first, second = Image.new("RGB", (8, 8), "red"), Image.new("RGB", (8, 8), "blue")
    first.save(buffer, "MPO", save_all=True, append_images=[second])
    return buffer.getvalue()


def _png_claiming(width: int, height: int) -> bytes:
    """A tiny PNG whose header claims width x height pixels: a decompression bomb in 70 bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data))
            + kind
            + data
            + struct.pack(">I", zlib.crc32(kind + data))
        )

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(b"\0"))
        + chunk(b"IEND", b"")
    )


PNG = _image("PNG")
JPEG = _image("JPEG")
GIF = _image("GIF")
WEBP = _image("WEBP")
BMP = _image("BMP")
MPO = _mpo()
WIDE_PNG = _image("PNG", (MAX_SIDE + 1, 1), mode="L")
BOMB_PNG = _png_claiming(100_000, 100_000)


class _Handler(BaseHTTPRequestHandler):
    server: PictureServer
    timeout = 10  # a stuck client never holds a server thread for long

    def do_GET(self) -> None:
        self.server.requests.append((self.path, self.headers["Host"]))
        route = self.server.routes.get(self.path)
        if route is None:
            self.send_error(404)
        else:
            route(self)

    def send(
        self, body: bytes, content_type: str, *, declare_length: bool = True
    ) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        if declare_length:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location: str) -> None:
        self.send_response(302)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


class PictureServer(ThreadingHTTPServer):
    """Serves on 127.0.0.1 (random port); each connection is TLS, handshaken in its own thread."""

    daemon_threads = True
    handler_class: type[BaseHTTPRequestHandler] = _Handler

    def __init__(self, directory: Path) -> None:
        self.cert = directory / "cert.pem"
        key = directory / "key.pem"
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(key), "-out", str(self.cert), "-days", "1", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True,
        )  # fmt: skip
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(self.cert, key)
        self.server_names: list[str | None] = []
        self.context.sni_callback = lambda _sock, name, _context: (
            self.server_names.append(name)
        )
        self.requests: list[tuple[str, str]] = []
        super().__init__(("127.0.0.1", 0), _Handler)
        self.port = self.server_address[1]
        self.routes = self._routes()
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join()

    def finish_request(self, request: Any, client_address: Any) -> None:
        try:
            tls = self.context.wrap_socket(request, server_side=True)
        except (
            OSError
        ):  # the client refused the certificate, as it should when it does not trust it
            return
        try:
            self.handler_class(tls, client_address, self)
        finally:
            tls.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients hang up on purpose (too large, too slow); that is the point

    def _routes(self) -> dict[str, Callable[[_Handler], None]]:
        port = self.port

        def slow(handler: _Handler) -> None:
            time.sleep(2)
            handler.send(PNG, "image/png")

        def drip(handler: _Handler) -> None:
            # Every read succeeds well within any socket timeout; only a total deadline stops it.
            handler.send_response(200)
            handler.send_header("Content-Length", "1000")
            handler.end_headers()
            for _ in range(100):
                handler.wfile.write(b"x")
                handler.wfile.flush()
                time.sleep(0.05)

        def chain(hops: int) -> Callable[[_Handler], None]:
            return lambda h: h.redirect(
                f"/chain/{hops - 1}" if hops > 1 else "/picture.png"
            )

        def dawdle(hops: int) -> Callable[[_Handler], None]:
            def route(handler: _Handler) -> None:
                time.sleep(0.3)
                handler.redirect(f"/dawdle/{hops - 1}" if hops else "/picture.png")

            return route

        routes: dict[str, Callable[[_Handler], None]] = {
            "/picture.png": lambda h: h.send(PNG, "image/png"),
            "/picture.jpg": lambda h: h.send(JPEG, "image/jpeg"),
            "/picture.gif": lambda h: h.send(GIF, "image/gif"),
            "/picture.webp": lambda h: h.send(WEBP, "image/webp"),
            "/picture.mpo": lambda h: h.send(MPO, "image/jpeg"),
            "/picture.bmp": lambda h: h.send(BMP, "image/bmp"),
            "/undeclared/picture.png": lambda h: h.send(
                PNG, "image/png", declare_length=False
            ),
            "/png-labelled-text": lambda h: h.send(PNG, "text/plain"),
            "/text-labelled-png": lambda h: h.send(
                b"hello, not a picture\n", "image/png"
            ),
            "/truncated.png": lambda h: h.send(PNG[: len(PNG) // 2], "image/png"),
            "/wide.png": lambda h: h.send(WIDE_PNG, "image/png"),
            "/bomb.png": lambda h: h.send(BOMB_PNG, "image/png"),
            "/large": lambda h: h.send(b"\0" * LARGE_BYTES, "image/png"),
            "/large-undeclared": lambda h: h.send(
                b"\0" * LARGE_BYTES, "image/png", declare_length=False
            ),
            "/slow": slow,
            "/drip": drip,
            "/redirect/png": lambda h: h.redirect("/picture.png"),
            "/redirect/http": lambda h: h.redirect(
                f"http://127.0.0.1:{port}/picture.png"
            ),
            "/redirect/other-loopback": lambda h: h.redirect(
                f"https://127.0.0.2:{port}/picture.png"
            ),
            "/redirect/nowhere": lambda h: h.redirect(""),
            "/redirect/loop": lambda h: h.redirect("/redirect/loop"),
        }
        for hops in range(1, 5):  # /chain/N is N redirects away from the picture
            routes[f"/chain/{hops}"] = chain(hops)
        for hops in range(3):
            routes[f"/dawdle/{hops}"] = dawdle(hops)
        return routes
