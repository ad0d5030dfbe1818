import socket
import threading

import pytest

from tests.users.picture_server import GIF, JPEG, MPO, PNG, WEBP, PictureServer
from users.pictures import (
    NOT_ALLOWED,
    NOT_DOWNLOADED,
    NOT_HTTPS,
    NOT_IMAGE,
    TOO_MANY_PIXELS,
    FetchedPicture,
    PictureError,
    fetch_picture,
)

TOO_LARGE = "The profile picture may not be larger than 5 MiB."


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = PictureServer(tmp_path_factory.mktemp("picture-server"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def picture_settings(settings, server):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = ["127.0.0.1"]
    settings.PROFILE_PICTURE_CA_BUNDLE = str(server.cert)
    settings.PROFILE_PICTURE_TIMEOUT = 5.0
    settings.PROFILE_PICTURE_MAX_BYTES = 5 * 1024 * 1024
    server.requests.clear()
    server.server_names.clear()


@pytest.fixture
def no_connections(monkeypatch):
    """Fail any attempt to open a connection: refusals must come before connecting."""
    attempts = []

    def connect(sock, address):
        attempts.append(address)
        raise AssertionError(f"connection attempted to {address}")

    monkeypatch.setattr(socket.socket, "connect", connect)
    yield
    assert attempts == []


@pytest.fixture
def dns(monkeypatch):
    """A resolver answering from a table; other names go to the real one. Records every name looked up."""
    table: dict[str, list[str]] = {}
    lookups: list[str] = []
    real_getaddrinfo = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        lookups.append(host)
        if host not in table:
            return real_getaddrinfo(host, port, *args, **kwargs)
        return [
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", (a, port, 0, 0))
            if ":" in a
            else (socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in table[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return table, lookups


def refusal(url: str) -> str:
    with pytest.raises(PictureError) as excinfo:
        fetch_picture(url)
    return str(excinfo.value)


@pytest.mark.parametrize(
    ("path", "content", "extension", "content_type"),
    [
        ("/picture.png", PNG, "png", "image/png"),
        ("/picture.jpg", JPEG, "jpg", "image/jpeg"),
        ("/picture.gif", GIF, "gif", "image/gif"),
        ("/picture.webp", WEBP, "webp", "image/webp"),
        ("/picture.mpo", MPO, "jpg", "image/jpeg"),
    ],
    ids=["png", "jpeg", "gif", "webp", "camera-jpeg"],
)
def test_fetch_picture_returns_the_bytes_and_format(
    server, path, content, extension, content_type
):
    picture = fetch_picture(server.url(path))

    assert picture == FetchedPicture(
        content=content, extension=extension, content_type=content_type
    )
    assert server.requests == [(path, f"127.0.0.1:{server.port}")]


def test_fetch_picture_names_the_format_from_the_bytes_not_the_content_type(server):
    assert fetch_picture(server.url("/png-labelled-text")).extension == "png"
    assert refusal(server.url("/text-labelled-png")) == NOT_IMAGE


def test_fetch_picture_connects_to_the_looked_up_address_and_verifies_the_hostname(
    server, dns
):
    table, lookups = dns
    table["localhost"] = ["127.0.0.1"]

    picture = fetch_picture(server.url("/picture.png", host="localhost"))

    assert picture.content == PNG
    # One lookup, then the connection goes to the vetted address (a second lookup could be rebound)...
    assert lookups.count("localhost") == 1
    # ...while TLS and HTTP still speak to the name in the URL.
    assert server.server_names == ["localhost"]
    assert server.requests == [("/picture.png", f"localhost:{server.port}")]


def test_fetch_picture_refuses_a_certificate_for_another_name(server, dns):
    table, _ = dns
    table["pictures.example"] = ["127.0.0.1"]

    assert (
        refusal(server.url("/picture.png", host="pictures.example")) == NOT_DOWNLOADED
    )
    assert server.server_names == ["pictures.example"]
    assert server.requests == []


def test_fetch_picture_refuses_an_untrusted_certificate(server, settings):
    settings.PROFILE_PICTURE_CA_BUNDLE = (
        None  # the system store does not know the self-signed certificate
    )

    assert refusal(server.url("/picture.png")) == NOT_DOWNLOADED
    assert server.requests == []


def test_fetch_picture_refuses_the_local_server_unless_its_address_is_allowed(
    server, settings, no_connections
):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = []

    assert refusal(server.url("/picture.png")) == NOT_ALLOWED


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1/picture.png",
        "HTTP://127.0.0.1/picture.png",
        "ftp://127.0.0.1/picture.png",
        "//127.0.0.1/picture.png",
        "picture.png",
        "",
        "https:///picture.png",
        "https://127.0.0.1:99999/picture.png",
        "https://[::1/picture.png",
    ],
)
def test_fetch_picture_refuses_anything_but_an_https_url(url, no_connections):
    assert refusal(url) == NOT_HTTPS


def test_fetch_picture_refuses_credentials_in_the_url(server, no_connections):
    assert (
        refusal(server.url("/picture.png", host="user:secret@127.0.0.1")) == NOT_ALLOWED
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://10.0.0.1/x.png",
        "https://172.16.0.1/x.png",
        "https://192.168.1.1/x.png",
        "https://169.254.169.254/latest/meta-data/",
        "https://100.64.0.1/x.png",
        "https://127.0.0.2/x.png",
        "https://0.0.0.0/x.png",
        "https://224.0.0.1/x.png",
        "https://255.255.255.255/x.png",
        "https://[::1]/x.png",
        "https://[::]/x.png",
        "https://[::ffff:127.0.0.1]/x.png",
        "https://[::ffff:10.0.0.1]/x.png",
        "https://[2002:7f00:1::]/x.png",
        "https://[fe80::1]/x.png",
        "https://[fc00::1]/x.png",
        "https://[fec0::1]/x.png",
        "https://[ff02::1]/x.png",
        "https://[64:ff9b::7f00:1]/x.png",
    ],
)
def test_fetch_picture_refuses_internal_addresses_before_connecting(
    url, no_connections
):
    assert refusal(url) == NOT_ALLOWED


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "127.1"])
def test_fetch_picture_refuses_loopback_spelled_unusually(
    host, settings, no_connections
):
    settings.PROFILE_PICTURE_ALLOWED_ADDRESSES = []

    assert refusal(f"https://{host}/x.png") == NOT_ALLOWED


def test_fetch_picture_refuses_a_hostname_resolving_to_a_private_address(
    dns, no_connections
):
    table, _ = dns
    table["intranet.example"] = ["10.1.2.3"]

    assert refusal("https://intranet.example/x.png") == NOT_ALLOWED


def test_fetch_picture_refuses_a_hostname_if_any_of_its_addresses_is_private(
    dns, no_connections
):
    table, _ = dns
    table["mixed.example"] = ["93.184.216.34", "2606:2800:220:1::", "10.0.0.1"]

    assert refusal("https://mixed.example/x.png") == NOT_ALLOWED


def test_fetch_picture_refuses_a_hostname_that_does_not_resolve(
    monkeypatch, no_connections
):
    def getaddrinfo(*args, **kwargs):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)

    assert refusal("https://nowhere.example/x.png") == NOT_DOWNLOADED


def test_fetch_picture_refuses_a_non_image(server):
    assert refusal(server.url("/text-labelled-png")) == NOT_IMAGE
    assert refusal(server.url("/truncated.png")) == NOT_IMAGE


def test_fetch_picture_refuses_image_formats_other_than_png_jpeg_gif_webp(server):
    assert refusal(server.url("/picture.bmp")) == NOT_IMAGE


def test_fetch_picture_refuses_a_decompression_bomb(server):
    assert refusal(server.url("/bomb.png")) == TOO_MANY_PIXELS


def test_fetch_picture_refuses_an_image_wider_than_the_limit(server):
    assert refusal(server.url("/wide.png")) == TOO_MANY_PIXELS


@pytest.mark.parametrize("path", ["/large", "/large-undeclared"])
def test_fetch_picture_refuses_more_than_5_mib(server, path):
    assert refusal(server.url(path)) == TOO_LARGE


@pytest.mark.parametrize("path", ["/picture.png", "/undeclared/picture.png"])
def test_fetch_picture_accepts_exactly_the_size_limit(server, settings, path):
    settings.PROFILE_PICTURE_MAX_BYTES = len(PNG)
    assert fetch_picture(server.url(path)).content == PNG

    settings.PROFILE_PICTURE_MAX_BYTES = len(PNG) - 1
    assert refusal(server.url(path)).startswith(
        "The profile picture may not be larger than"
    )


def test_fetch_picture_refuses_a_404(server):
    assert refusal(server.url("/missing.png")) == NOT_DOWNLOADED


def test_fetch_picture_follows_a_redirect(server):
    assert fetch_picture(server.url("/redirect/png")).content == PNG
    assert [path for path, _ in server.requests] == ["/redirect/png", "/picture.png"]


def test_fetch_picture_follows_three_redirects_and_no_more(server):
    assert fetch_picture(server.url("/chain/3")).content == PNG

    assert refusal(server.url("/chain/4")) == NOT_DOWNLOADED
    assert refusal(server.url("/redirect/loop")) == NOT_DOWNLOADED


def test_fetch_picture_refuses_a_redirect_to_http(server):
    assert refusal(server.url("/redirect/http")) == NOT_HTTPS


def test_fetch_picture_refuses_a_redirect_to_an_address_that_is_not_allowed(server):
    assert refusal(server.url("/redirect/other-loopback")) == NOT_ALLOWED
    assert [path for path, _ in server.requests] == ["/redirect/other-loopback"]


def test_fetch_picture_refuses_a_redirect_without_location(server):
    assert refusal(server.url("/redirect/nowhere")) == NOT_DOWNLOADED


# Longer than any deadline a test sets, so only a fetch that gave up leaves it unfinished.
STALL_CAP_SECONDS = 30


@pytest.fixture
def stalling(server):
    """Routes that stall until the test releases them (or STALL_CAP_SECONDS pass) and
    record whether they finished: a fetch that returned while one is still stalling
    gave up at its own deadline, not the server's."""
    release, finished = threading.Event(), threading.Event()

    def silent(handler):
        # No response at all until released.
        if not release.wait(STALL_CAP_SECONDS):
            handler.send(PNG, "image/png")
        finished.set()

    def drip(handler):
        # A byte at a time, each read well within any socket timeout: only a total
        # deadline stops the download.
        handler.send_response(200)
        handler.send_header("Content-Type", "image/png")
        handler.send_header("Content-Length", "1000000")
        handler.end_headers()
        try:
            for _ in range(int(STALL_CAP_SECONDS / 0.05)):
                if release.wait(0.05):
                    break
                handler.wfile.write(b"x")
                handler.wfile.flush()
        except OSError:
            pass  # the client hung up
        finished.set()

    server.routes.update({"/stall/silent": silent, "/stall/drip": drip})
    yield finished
    release.set()
    finished.wait(STALL_CAP_SECONDS)
    del server.routes["/stall/silent"], server.routes["/stall/drip"]


@pytest.mark.parametrize("path", ["/stall/silent", "/stall/drip"])
def test_fetch_picture_gives_up_at_the_total_deadline(server, settings, stalling, path):
    settings.PROFILE_PICTURE_TIMEOUT = 0.5

    assert refusal(server.url(path)) == NOT_DOWNLOADED
    assert not stalling.is_set(), "the fetch waited for the server to finish"
    assert [p for p, _ in server.requests] == [path]


def test_fetch_picture_gives_up_when_redirects_together_pass_the_deadline(
    server, settings
):
    # Three hops of 0.3 s: each within the timeout, together not.
    settings.PROFILE_PICTURE_TIMEOUT = 0.5

    assert refusal(server.url("/dawdle/2")) == NOT_DOWNLOADED
    assert "/picture.png" not in [p for p, _ in server.requests]


def test_fetch_picture_follows_slow_redirects_within_the_deadline(server):
    assert fetch_picture(server.url("/dawdle/2")).content == PNG


def test_fetch_picture_gives_up_on_a_slow_lookup(monkeypatch, settings, server):
    settings.PROFILE_PICTURE_TIMEOUT = 0.5
    release, answered = threading.Event(), threading.Event()

    def getaddrinfo(host, port, *args, **kwargs):
        # Answers the picture server's address, but only once released.
        release.wait(STALL_CAP_SECONDS)
        answered.set()
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    try:
        assert (
            refusal(f"https://slow-dns.example:{server.port}/picture.png")
            == NOT_DOWNLOADED
        )
        assert not answered.is_set(), "the fetch waited for the resolver"
    finally:
        release.set()
        answered.wait(STALL_CAP_SECONDS)
    assert server.requests == []
