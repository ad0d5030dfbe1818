"""Browsers ask every site for /favicon.ico: the service answers with its own icon (a file
in the repository, never a CDN's), not a 404 logged twice a page view."""

from __future__ import annotations

import logging

from django.conf import settings


def test_favicon_is_served_at_the_root_without_logging(client, caplog):
    with caplog.at_level(logging.INFO):
        response = client.get("/favicon.ico")

    assert response.status_code == 200
    assert response["Content-Type"] in {"image/x-icon", "image/vnd.microsoft.icon"}
    icon = settings.BASE_DIR / "static" / "root" / "favicon.ico"
    assert b"".join(response.streaming_content) == icon.read_bytes()
    assert icon.read_bytes()[:4] == b"\0\0\1\0"  # an ICO file
    assert not [r for r in caplog.records if "favicon" in r.getMessage()]
