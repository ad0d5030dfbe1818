"""The service's own OpenAPI schema, as integrators download it from ``/api/schema/``, and
a check of a real answer against the operation and status it describes (jsonschema, with
``$ref`` resolved by a ``referencing`` registry over the whole document)."""

from __future__ import annotations

import json
from functools import cache
from typing import Any
from urllib.parse import quote

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

URI = "urn:leadcall:openapi"


@cache
def openapi() -> dict[str, Any]:
    """The schema ``/api/schema/`` serves, as plain JSON."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(schema))  # type: ignore[no-any-return]


@cache
def _registry() -> Registry:
    resource = Resource.from_contents(openapi(), default_specification=DRAFT202012)
    return Registry().with_resource(URI, resource)


def _pointer(*parts: str) -> str:
    escaped = (part.replace("~", "~0").replace("/", "~1") for part in parts)
    return quote("/" + "/".join(escaped), safe="/~")


def _body(response: Any) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return bytes(response.content)


def assert_described(response: Any, method: str, path: str) -> Any:
    """Fail unless the operation ``method path`` lists the response's status and media type
    and its body (and required headers) match the schema given there. Returns the body."""
    operation = openapi()["paths"][path][method.lower()]
    status = str(response.status_code)
    assert status in operation["responses"], (
        f"{method} {path} answered {status}, which its schema does not list "
        f"({sorted(operation['responses'])})"
    )
    described = operation["responses"][status]
    media_type = response["Content-Type"].split(";")[0].strip()
    assert media_type in described.get("content", {}), (
        f"{method} {path} {status} answered {media_type}, not in the schema"
    )
    raw = _body(response)
    body = json.loads(raw) if media_type == "application/json" else raw.decode()
    ref = (
        URI
        + "#"
        + _pointer(
            "paths",
            path,
            method.lower(),
            "responses",
            status,
            "content",
            media_type,
            "schema",
        )
    )
    Draft202012Validator(
        {"$ref": ref},
        registry=_registry(),
        format_checker=Draft202012Validator.FORMAT_CHECKER,
    ).validate(body)
    for name, header in described.get("headers", {}).items():
        if header.get("required"):
            assert response.has_header(name), f"{status} without its {name} header"
            value = response[name]
            Draft202012Validator(header["schema"]).validate(
                int(value) if header["schema"].get("type") == "integer" else value
            )
    return body
