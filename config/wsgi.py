import io
import os
from collections.abc import Callable, Iterable
from typing import Any

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")


def read_chunked_bodies(
    app: Callable[..., Iterable[bytes]],
) -> Callable[..., Iterable[bytes]]:
    """Give Django a request body sent with ``Transfer-Encoding: chunked``.

    Such a request has no Content-Length, and Django reads a body of Content-Length bytes
    only, so a chunked lead arrived as an empty form. gunicorn decodes the chunks and marks
    the stream as ending by itself (``wsgi.input_terminated``): the body is read here, at
    most one byte more than ``API_MAX_BODY_BYTES``, and handed on with its length, so the
    size limit (``core.middleware``) still refuses one too large."""
    from django.conf import settings

    def application(
        environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        if (
            "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
            and not environ.get("CONTENT_LENGTH")
            and environ.get("wsgi.input_terminated")
        ):
            body = environ["wsgi.input"].read(settings.API_MAX_BODY_BYTES + 1)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
        return app(environ, start_response)

    return application


def checked(app: Callable[..., Iterable[bytes]]) -> Callable[..., Iterable[bytes]]:
    """The application, once the provider settings are known good: a server with a
    mistyped provider fails to boot (``providers.checks.refuse_to_start``)."""
    from config.checks import refuse_to_start

    refuse_to_start("the web server")
    return app


application = read_chunked_bodies(checked(get_wsgi_application()))
