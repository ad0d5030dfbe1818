"""OpenAPI descriptions of the credential styles, for drf-spectacular."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ApiUserKeyScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ApiUserKeyAuthentication"
    name = ["apiUser", "apiKey"]

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return [
            {"type": "apiKey", "in": "header", "name": "apiuser"},
            {"type": "apiKey", "in": "header", "name": "apikey"},
        ]


class ScoredDataKeyScheme(OpenApiAuthenticationExtension):
    target_class = "accounts.authentication.ScoredDataKeyAuthentication"
    name = "scoredDataKey"

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "apiKey",
            "in": "query",
            "name": "apikey",
            "description": "The account's scored-data key; also accepted as `apiKey`.",
        }
