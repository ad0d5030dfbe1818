"""OpenAPI description of click-to-call's key, for drf-spectacular."""

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class ClickToCallKeyScheme(OpenApiAuthenticationExtension):
    target_class = "clicktocall.authentication.ClickToCallKeyAuthentication"
    name = "clickToCallKey"

    def get_security_requirement(self, auto_schema):  # type: ignore[no-untyped-def]
        # The header, or the `api_key` member of the body (described there): a request
        # without the header is not refused for that alone.
        return [{self.name: []}, {}]

    def get_security_definition(self, auto_schema):  # type: ignore[no-untyped-def]
        return {
            "type": "apiKey",
            "in": "header",
            "name": "api_key",
            "description": "Also accepted as the `api_key` member of the JSON body.",
        }
