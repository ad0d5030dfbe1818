"""Lead intake (interface C): ``POST /api/nl`` with the ADF document in the form field
``xml``, or as the request body itself (``Content-Type: application/xml`` or ``text/xml``)
with the credentials as headers."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import (
    OpenApiResponse,
    PolymorphicProxySerializer,
    extend_schema,
    inline_serializer,
)
from rest_framework import serializers
from rest_framework.parsers import BaseParser, FormParser, MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from accounts.authentication import LeadFormAuthentication, credential_of
from accounts.keys import key_prefix
from core.api import REASON, ContentNegotiation, Forbidden, NotFound, PayloadTooLarge
from core.logging import log_context, log_event
from core.schema import RATE_LIMITED, RETRY_AFTER
from core.throttling import CredentialRateThrottle
from leads.services import lead_receive

NO_POST_DATA = "No POST data received. This endpoint expects POST data."
XML_BLANK = "XML cannot be blank"

log = logging.getLogger(__name__)


class XmlBodyParser(BaseParser):
    """The request body is the ADF document itself, as many lead senders post it; it
    becomes the ``xml`` member, and the credentials come from the headers.

    It is handed on as bytes: the ADF parser reads them in the encoding the document's
    XML declaration names (or its byte-order mark), which a charset parameter of the
    content type cannot overrule."""

    media_type = "application/xml"

    def parse(
        self,
        stream: Any,
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> dict[str, bytes]:
        # The size limit (core.middleware) refused a longer Content-Length before the
        # view ran; reading at most one byte past it keeps this bounded whatever came in.
        body: bytes = stream.read(settings.API_MAX_BODY_BYTES + 1)
        if len(body) > settings.API_MAX_BODY_BYTES:
            raise PayloadTooLarge()
        return {"xml": body}


class TextXmlBodyParser(XmlBodyParser):
    media_type = "text/xml"


def _document(request: Request) -> str | bytes:
    """The ADF document: the ``xml`` form field (text), or the request body or a file
    uploaded as the field (``curl -F xml=@lead.xml``), both bytes."""
    value: Any = request.data.get("xml") if hasattr(request.data, "get") else None
    if hasattr(value, "read"):
        value = value.read()
    return value if isinstance(value, str | bytes) else ""


def _key_prefix(request: Request) -> str | None:
    """The public prefix of the key the request authenticated with (form field or header)."""
    key: Any = request.data.get("apikey") if hasattr(request.data, "get") else None
    if not isinstance(key, str) or not key.strip():
        key = request.headers.get("apikey", "")
    return key_prefix(key.strip())


class LeadForm(serializers.Serializer):
    """The form of lead intake: the document and, unless they are sent as the `apiuser`
    and `apikey` headers, the credentials. Blank ones are refused with 403: `API Username
    cannot be blank`, `API Key cannot be blank`, `XML cannot be blank`."""

    xml = serializers.CharField(help_text="The ADF XML document.")
    apiuser = serializers.CharField(
        required=False,
        help_text="API user issued by support; required unless sent as the `apiuser` header.",
    )
    apikey = serializers.CharField(
        required=False,
        help_text="API key issued by support; required unless sent as the `apikey` header.",
    )


# What a document of several prospects adds to the first prospect's answer, and what a
# lead sent again adds to the first answer.
_REPEATS: dict[str, serializers.Field] = {
    "duplicate": serializers.BooleanField(
        required=False, help_text="Present (true) when the same lead was sent before."
    ),
    "leadIds": serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        help_text="A document of several prospects: the lead of each, in order.",
    ),
}

ACCEPTED = inline_serializer(
    "LeadAccepted",
    {
        "result": serializers.ChoiceField(choices=["Success"]),
        "leadId": serializers.IntegerField(),
        "message": serializers.CharField(),
        **_REPEATS,
    },
)


# The document as the request body; credentials in the apiuser and apikey headers. (No
# `example` member: schemathesis, which fuzzes this schema, refuses schema examples.)
ADF_BODY = {
    "type": "string",
    "description": "The ADF XML document, in the encoding its XML declaration names "
    "(UTF-8 without one). Credentials: the `apiuser` and `apikey` headers.",
}


REASON_BODY = inline_serializer(
    "Reason", {"reason": serializers.CharField(), **_REPEATS}
)
ANSWER = PolymorphicProxySerializer(
    component_name="LeadAnswer",
    serializers=[ACCEPTED, REASON_BODY],
    resource_type_field_name=None,
)


def _reason(text: str) -> OpenApiResponse:
    return OpenApiResponse(REASON_BODY, description=text)


class LeadReceiveSchema(AutoSchema):
    """drf-spectacular marks a body required only when every media type's schema says
    so, and a plain string schema (the XML body) never does; a lead always needs one."""

    def _get_request_body(self, direction: str = "request") -> dict[str, Any] | None:
        body: dict[str, Any] | None = super()._get_request_body(direction)
        if body is not None:
            body["required"] = True
        return body


@extend_schema(tags=["Lead intake"])
class LeadReceiveApi(APIView):
    # GET is answered 404 (the documented "No POST data received."), so neither the Allow
    # header (OPTIONS, 405s) nor the schema offers it.
    authentication_classes: list[type] = []
    content_negotiation_class = ContentNegotiation
    throttle_classes = [CredentialRateThrottle]
    throttle_scope = "leads"
    parser_classes = [FormParser, MultiPartParser, XmlBodyParser, TextXmlBodyParser]
    error_shape = REASON
    schema = LeadReceiveSchema()

    @extend_schema(
        operation_id="lead_receive",
        summary="Receive an ADF lead",
        # The header style is a security scheme; the form fields (described in the body)
        # are the other way, so a request without the headers is not refused for it.
        auth=[{"apiUser": [], "apiKey": []}, {}],  # type: ignore[list-item]
        parameters=[RETRY_AFTER],
        description=(
            "The ADF document goes in the form field `xml` next to `apiuser` and "
            "`apikey`, or is the request body itself (`Content-Type: application/xml` "
            "or `text/xml`) with `apiuser` and `apikey` as request headers. The answers "
            "are the same either way. A GET is answered 404: `No POST data received. "
            "This endpoint expects POST data.`"
        ),
        request={
            "application/x-www-form-urlencoded": LeadForm,
            "multipart/form-data": LeadForm,
            "application/xml": ADF_BODY,
            "text/xml": ADF_BODY,
        },
        responses={
            200: OpenApiResponse(
                ANSWER,
                description="Accepted (`result`, `leadId`, `message`), a duplicate "
                "(`duplicate: true`), or Do Not Process (`reason`: Lead was successfully "
                "parsed as a Do Not Process lead.).",
            ),
            400: _reason(
                "Unable to parse XML. Please check that the XML is well-formed and try again."
            ),
            403: _reason(
                "Blank apiuser, apikey or xml, or credentials that match no account."
            ),
            413: _reason("The body or the XML document is larger than 1 MiB."),
            415: _reason(
                'Neither a form nor an XML body: `Unsupported content type "..."`.'
            ),
            422: _reason(
                "No active account found! / No parsing rule was found on the account for this lead. / The lead has no prospect id. / The document is not an ADF lead: no adf/prospect element."
            ),
            429: _reason(RATE_LIMITED),
        },
    )
    def post(self, request: Request) -> Response:
        credential = credential_of(request)
        # Every line of this lead's intake names the credential and the key's public prefix.
        with log_context(api_user=credential.api_user, key_prefix=_key_prefix(request)):
            xml = _document(request)
            if not xml.strip():
                log_event(
                    log,
                    "lead.refused",
                    level=logging.WARNING,
                    organization_id=credential.organization_id,
                    credential_id=credential.pk,
                    reason="blank_xml",
                    status=403,
                )
                raise Forbidden(XML_BLANK)
            answer = lead_receive(credential=credential, raw_xml=xml)
        return Response(answer.body, status=answer.status)

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        raise NotFound(NO_POST_DATA)

    @property
    def allowed_methods(self) -> list[str]:
        return [m for m in super().allowed_methods if m not in ("GET", "HEAD")]

    def perform_authentication(self, request: Request) -> None:
        # GET has no form to read credentials from: it is answered 404 before anything else.
        if request.method == "POST":
            request.auth = LeadFormAuthentication().authenticate(request)[1]
