"""The published schema keeps to the OpenAPI specification (openapi-spec-validator) and to
Redocly's recommended rules that apply to it (Redocly is an npm tool; its rules are
checked here, one test each, so they cannot regress)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from openapi_spec_validator import validate

from tests.openapi import openapi

METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


def operations() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(where, method, operation) of every path and webhook."""
    schema = openapi()
    for section in ("paths", "webhooks"):
        for where, item in schema.get(section, {}).items():
            for method, operation in item.items():
                if method in METHODS:
                    yield f"{section} {where}", method, operation


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for item in node:
            yield from refs(item)


def test_the_schema_is_valid_openapi():
    validate(openapi())


def test_the_schema_names_its_licence_and_servers():
    schema = openapi()
    licence = schema["info"]["license"]
    assert licence["name"]
    assert licence.get("url") or licence.get("identifier")
    assert schema["servers"]
    for server in schema["servers"]:
        url = server["url"]
        assert not url.endswith("/")
        assert urlsplit(url).hostname not in ("example.com", "localhost")
        assert server["description"]


def test_every_operation_has_a_summary_and_a_unique_url_safe_id():
    ids = []
    for where, method, operation in operations():
        assert operation.get("summary"), f"{method} {where} has no summary"
        assert re.fullmatch(r"[A-Za-z0-9_.~-]+", operation.get("operationId", "")), (
            where
        )
        ids.append(operation["operationId"])

    assert len(ids) == len(set(ids)) >= 10 + 11


def test_every_operation_answers_a_success_and_a_client_error():
    for where, method, operation in operations():
        statuses = set(operation["responses"])
        assert any(s.startswith("2") for s in statuses), (method, where)
        assert any(s.startswith("4") for s in statuses), (method, where)


def test_every_operation_declares_its_security_and_the_schemes_exist():
    schema = openapi()
    schemes = set(schema["components"]["securitySchemes"])
    used = set()
    for where, method, operation in operations():
        security = operation.get("security", schema.get("security"))
        assert security, f"{method} {where} declares no security"
        for requirement in security:
            used |= set(requirement)
    assert used <= schemes
    assert schemes <= used, "a security scheme no operation uses"


def test_every_tag_is_declared_and_described():
    declared = {tag["name"]: tag for tag in openapi().get("tags", [])}
    used = {tag for _, _, op in operations() for tag in op.get("tags", [])}

    assert used
    assert used <= set(declared)
    assert all(declared[name].get("description") for name in used)


def test_no_component_is_unused():
    schema = openapi()
    components = schema["components"]["schemas"]
    reachable: set[str] = set()
    outside = {k: v for k, v in schema.items() if k != "components"}
    pending = [r for r in refs(outside) if r.startswith("#/components/schemas/")]
    while pending:
        name = pending.pop().rsplit("/", 1)[1]
        if name not in reachable:
            reachable.add(name)
            pending.extend(refs(components[name]))

    assert set(components) - reachable == set()


def test_every_path_parameter_is_declared():
    for path, item in openapi()["paths"].items():
        named = set(re.findall(r"{([^}]+)}", path))
        for method, operation in item.items():
            declared = {
                p["name"] for p in operation.get("parameters", []) if p["in"] == "path"
            }
            assert declared == named, (method, path)


def test_a_429_always_says_when_to_retry():
    for where, method, operation in operations():
        limited = operation["responses"].get("429")
        if limited is not None:
            assert limited["headers"]["Retry-After"]["required"] is True, (
                method,
                where,
            )


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/users", "post"),
        ("/api/users/{user_id}", "get"),
        ("/api/users/{user_id}", "put"),
        ("/api/users/{user_id}", "delete"),
        ("/api/users/find/email", "get"),
        ("/api/users/find/phone", "get"),
        ("/api/users/find/available-user-code", "get"),
        ("/api/nl", "post"),
        ("/api/clicktocallv2", "post"),
        ("/api/scoreddata", "get"),
    ],
)
def test_every_endpoint_lists_its_limits(path, method):
    """Every request is counted against a rate limit and the body limit (the middleware
    reads Content-Length on every /api/ path)."""
    assert {"413", "429"} <= set(openapi()["paths"][path][method]["responses"])


def test_lead_intake_declares_both_credential_styles():
    operation = openapi()["paths"]["/api/nl"]["post"]
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]
    form_schema = openapi()["components"]["schemas"][
        form["schema"]["$ref"].rsplit("/", 1)[1]
    ]

    assert operation["security"] == [{"apiUser": [], "apiKey": []}, {}]
    assert {"xml", "apiuser", "apikey"} <= set(form_schema["properties"])
    assert form_schema["required"] == ["xml"]
    assert "get" not in openapi()["paths"]["/api/nl"]


def test_the_links_name_operations_that_exist():
    ids = {op["operationId"] for _, _, op in operations()}
    links = [
        link
        for _, _, op in operations()
        for response in op["responses"].values()
        for link in response.get("links", {}).values()
    ]

    assert links
    assert {link["operationId"] for link in links} <= ids
