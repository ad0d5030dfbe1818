"""Twilio's callbacks, mounted at ``calls/twilio/`` (see ``calls.webhooks``)."""

from django.urls import path

from calls import webhooks

urlpatterns = [
    path(
        "agent/<int:attempt_id>/answer",
        webhooks.agent_answer,
        name="twilio-agent-answer",
    ),
    path(
        "agent/<int:attempt_id>/gather",
        webhooks.agent_gather,
        name="twilio-agent-gather",
    ),
    path(
        "agent/<int:attempt_id>/status",
        webhooks.agent_status,
        name="twilio-agent-status",
    ),
    path(
        "agent/<int:attempt_id>/dial-action",
        webhooks.agent_dial_action,
        name="twilio-agent-dial-action",
    ),
    path(
        "lead/<int:attempt_id>/status", webhooks.lead_status, name="twilio-lead-status"
    ),
    path(
        "lead/<int:attempt_id>/recording",
        webhooks.lead_recording,
        name="twilio-lead-recording",
    ),
]
