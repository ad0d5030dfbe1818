"""The OpenAPI schema's settings (drf-spectacular): titles, tags, hooks, webhooks."""

SPECTACULAR_SETTINGS = {
    "TITLE": "Lead-to-call service",
    "DESCRIPTION": "User API, lead intake, click-to-call, scored call data, "
    "appointments and consent.",
    "VERSION": "1.0.0",
    # The service is not open source: no SPDX licence names it.
    "LICENSE": {"name": "Proprietary", "identifier": "LicenseRef-Proprietary"},
    "TAGS": [
        {
            "name": "User API",
            "description": "Create, update, retrieve, find and delete an organization's "
            "users (headers apiuser and apikey).",
        },
        {
            "name": "Lead intake",
            "description": "ADF XML leads, as a form field or as the body; each becomes "
            "a call between a lead and an agent.",
        },
        {
            "name": "Click-to-call",
            "description": "Connect an agent and a lead by phone (key api_key).",
        },
        {
            "name": "Scored call data",
            "description": "An account's calls with their scores, as JSON or XML "
            "(the account's scored-data key).",
        },
        {
            "name": "Appointments",
            "description": "An account's appointments, read and marked confirmed, kept, "
            "no-show or cancelled (the account's scored-data key).",
        },
        {
            "name": "Consent",
            "description": "An account's consent ledger: revocations and consents an "
            "integrator records, a number's state and history (the account's "
            "scored-data key).",
        },
    ],
    # Servers, webhook ids and security, links (config/schema.py); the default hook first.
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "config.schema.finish_schema",
    ],
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    # The events the service posts to integrators' endpoints (webhooks/schema.py); the
    # webhooks section needs OpenAPI 3.1.
    "OAS_VERSION": "3.1.0",
    "WEBHOOKS": [
        f"webhooks.schema.{event}"
        for event in [
            "lead_received",
            "lead_refused",
            "agent_presses_one",
            "call_completed",
            "call_scored",
            "call_coached",
            "transcription_ready",
            "text_sent",
            "text_received",
            "lead_opted_out",
            "appointment_set",
            "appointment_confirmed",
            "appointment_kept",
            "appointment_no_show",
            "appointment_cancelled",
            "consent_given",
            "consent_revoked",
            "test_event",
        ]
    ],
}
