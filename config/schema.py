"""The last touches of the OpenAPI schema (drf-spectacular's postprocessing hooks): the
deployment's server, an id and the signature scheme on each webhook, and the links that
say which member of an answer names the resource of the next operation (schemathesis's
stateful runs follow them)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

WEBHOOK_SIGNATURE = {
    "type": "apiKey",
    "in": "header",
    "name": "webhook-signature",
    "description": "Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of "
    '`"{webhook-id}.{webhook-timestamp}.{body}"` with the endpoint\'s secret; see the '
    'integrator\'s guide, "Webhooks".',
}

_USER_ID = {"user_id": "$response.body#/user/id"}
# operationId -> status -> link name -> (target operationId, parameters)
LINKS: dict[str, dict[str, dict[str, tuple[str, dict[str, str]]]]] = {
    "user_create": {
        "201": {
            "GetUser": ("user_get", _USER_ID),
            "UpdateUser": ("user_update", _USER_ID),
            "DeleteUser": ("user_delete", _USER_ID),
            "FindUserByEmail": (
                "user_find_by_email",
                {
                    "organizationId": "$response.body#/user/organizationIds/0",
                    "emailAddress": "$response.body#/user/emailAddress",
                },
            ),
            # A user created without a phone number has none to find it by (null).
            "FindUserByPhone": (
                "user_find_by_phone",
                {
                    "organizationId": "$response.body#/user/organizationIds/0",
                    "phoneNumber": "$response.body#/user/phoneNumber",
                },
            ),
        }
    },
    "user_get": {
        "200": {
            "UpdateUser": ("user_update", _USER_ID),
            "DeleteUser": ("user_delete", _USER_ID),
        }
    },
    "user_update": {"200": {"GetUser": ("user_get", _USER_ID)}},
    "click_to_call": {
        "201": {"GetCall": ("scored_data", {"callId": "$response.body#/callId"})}
    },
}


def finish_schema(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """Servers, webhook ids and security, and links: what Redocly's recommended rules
    and schemathesis's stateful runs look for, and drf-spectacular does not write."""
    result["servers"] = [
        {"url": settings.PUBLIC_BASE_URL, "description": "This deployment."}
    ]
    webhooks = result.get("webhooks") or {}
    if webhooks:
        schemes = result.setdefault("components", {}).setdefault("securitySchemes", {})
        schemes["webhookSignature"] = WEBHOOK_SIGNATURE
    for name, item in webhooks.items():
        for method, operation in item.items():
            operation.setdefault("operationId", f"webhook_{name}")
            operation.setdefault("security", [{"webhookSignature": []}])
            if method != "post":
                raise ValueError(f"webhook {name}: unexpected method {method}")
    operations = {
        operation["operationId"]: operation
        for item in result.get("paths", {}).values()
        for operation in item.values()
        if isinstance(operation, dict) and "operationId" in operation
    }
    for source, statuses in LINKS.items():
        for status, links in statuses.items():
            response = operations[source]["responses"][status]
            response["links"] = {
                name: {"operationId": target, "parameters": parameters}
                for name, (target, parameters) in links.items()
            }
    return result
