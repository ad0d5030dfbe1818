"""One example event of each type: the OpenAPI schema's examples, and the same JSON as
the integrator's guide shows (tests/webhooks/test_events.py holds them equal)."""

from typing import Any

# The objects most events carry, the same in each example: one account, agent and lead,
# and the call once answered (agent_presses_one and call_completed show it earlier on).
ACCOUNT = {"id": 1, "name": "Demo Motors North"}
AGENT = {
    "first_name": "Alex",
    "last_name": "Morgan",
    "email": "alex.morgan@example.com",
    "code": "0001",
}
LEAD = {
    "first_name": "Sam",
    "last_name": "Rivera",
    "phone": "+13035550147",
    "email": "sam@example.com",
    "prospect_id": "WEB-1001",
}
ANSWERED_CALL = {
    "id": 12,
    "status": "ANSWER",
    "inbound": "",
    "outbound": "+13035550147",
    "click_to_call": 0,
    "date_received": "2026-11-23T17:04:05Z",
    "origination_time": "2026-11-23T17:04:05Z",
    "response_time": 9,
    "duration": 151,
    "attempts": 1,
    "agent": "Alex Morgan",
    "department": "Sales",
    "recording": "https://leads.example.com/calls/recordings/abc.wav",
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "lead_received": {
        "type": "lead_received",
        "id": "evt_6f1d0c9b8a7e6d5c4b3a2910",
        "created": "2026-11-23T17:04:05Z",
        "account": ACCOUNT,
        "lead_id": 7,
        "call_id": 12,
        "lead": LEAD,
        "message": "Lead received successfully.",
    },
    "lead_refused": {
        "type": "lead_refused",
        "id": "evt_0a1b2c3d4e5f60718293a4b5",
        "created": "2026-11-23T17:04:05Z",
        "account": ACCOUNT,
        "lead_id": 8,
        "call_id": None,
        "lead": {
            "first_name": "Sam",
            "last_name": "Rivera",
            "phone": "303-555-0147",
            "email": "sam@example.com",
            "prospect_id": "WEB-1002",
        },
        "reason": "no_rule",
        "message": "No parsing rule was found on the account for this lead.",
    },
    "agent_presses_one": {
        "type": "agent_presses_one",
        "id": "evt_1b2c3d4e5f60718293a4b5c6",
        "created": "2026-11-23T17:04:09Z",
        "account": ACCOUNT,
        "call": {
            **ANSWERED_CALL,
            "status": "DIALING",
            "response_time": None,
            "duration": None,
            "recording": None,
        },
        "agent": AGENT,
        "lead": LEAD,
    },
    "call_completed": {
        "type": "call_completed",
        "id": "evt_2c3d4e5f60718293a4b5c6d7",
        "created": "2026-11-23T17:06:40Z",
        "account": ACCOUNT,
        "call": {**ANSWERED_CALL, "recording": None},
        "agent": AGENT,
        "lead": LEAD,
    },
    "call_scored": {
        "type": "call_scored",
        "id": "evt_3d4e5f60718293a4b5c6d7e8",
        "created": "2026-11-23T18:30:00Z",
        "account": ACCOUNT,
        "call": ANSWERED_CALL,
        "agent": AGENT,
        "lead": LEAD,
        "scored_call": {
            "scored_at": "2026-11-23T18:30:00Z",
            "scored_by": "Robin Scorer",
            "first_name": "Sam",
            "last_name": "Rivera",
            "alt_phone": "",
            "email": "sam@example.com",
            "department": "Sales",
            "notes": "Wants a test drive on Saturday.",
            "appointment": {"date": "2026-11-28", "time": "10:30"},
            "call_end": "Appointment set",
            "alert": "",
            "lead_type": "New",
            "vehicles": {
                "current": {
                    "make": "Honda",
                    "model": "Civic",
                    "year": "2015",
                    "registration": "",
                    "summary": "",
                },
                "called_on": {
                    "make": "Toyota",
                    "model": "Camry",
                    "year": "2025",
                    "registration": "",
                    "summary": "",
                },
            },
            "categories": [
                {"name": "Greeting", "applied": True},
                {"name": "Asked for the appointment", "applied": True},
            ],
            "wow": False,
        },
    },
    "call_coached": {
        "type": "call_coached",
        "id": "evt_4e5f60718293a4b5c6d7e8f9",
        "created": "2026-11-24T09:00:00Z",
        "account": ACCOUNT,
        "call": ANSWERED_CALL,
        "agent": AGENT,
        "lead": LEAD,
        "coaching": {
            "notes": "Great rapport; confirm the appointment by text next time.",
            "coached_by": "Jordan Lee",
            "coached_at": "2026-11-24T09:00:00Z",
        },
    },
    "transcription_ready": {
        "type": "transcription_ready",
        "id": "evt_5f60718293a4b5c6d7e8f9a0",
        "created": "2026-11-23T17:08:00Z",
        "account": ACCOUNT,
        "call": ANSWERED_CALL,
        "agent": AGENT,
        "lead": LEAD,
        "transcription": {
            "text": "Agent: Hi Sam, this is Alex from Demo Motors...",
            "summary": "Test drive booked for Saturday.",
        },
    },
    "test_event": {
        "type": "test_event",
        "id": "evt_60718293a4b5c6d7e8f9a0b1",
        "created": "2026-11-23T17:00:00Z",
        "account": None,
        "message": "A test event sent from the service's admin.",
    },
}
