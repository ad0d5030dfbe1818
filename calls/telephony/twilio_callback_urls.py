"""Twilio's callbacks, mounted at ``calls/twilio/`` (see ``calls.telephony.twilio_callbacks``);
Twilio is configured with these paths, so they never change."""

from django.urls import path

from calls.telephony import twilio_callbacks

app_name = "twilio"
urlpatterns = [
    path(
        "agent/<int:attempt_id>/answer",
        twilio_callbacks.agent_answer,
        name="agent-answer",
    ),
    path(
        "agent/<int:attempt_id>/gather",
        twilio_callbacks.agent_gather,
        name="agent-gather",
    ),
    path(
        "agent/<int:attempt_id>/status",
        twilio_callbacks.agent_status,
        name="agent-status",
    ),
    path(
        "agent/<int:attempt_id>/dial-action",
        twilio_callbacks.agent_dial_action,
        name="agent-dial-action",
    ),
    path(
        "lead/<int:attempt_id>/status", twilio_callbacks.lead_status, name="lead-status"
    ),
    path(
        "lead/<int:attempt_id>/recording",
        twilio_callbacks.lead_recording,
        name="lead-recording",
    ),
]
