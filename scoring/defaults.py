"""The scorecard every new account starts with (also used by the migration that gave
existing accounts theirs): plain data, no models."""

DEFAULT_CATEGORIES = [
    (
        "Greeted the customer by name",
        "Used the lead's name within the first 15 seconds.",
    ),
    (
        "Introduced self and dealership",
        "Said their own name and the dealership's name.",
    ),
    ("Confirmed the vehicle of interest", "Named the vehicle the lead asked about."),
    ("Asked about a trade-in", "Asked whether the customer has a vehicle to trade."),
    ("Built rapport", "Listened, answered in a friendly tone, did not rush."),
    (
        "Answered the customer's questions",
        "Gave clear answers or promised a follow-up.",
    ),
    (
        "Offered alternatives",
        "Suggested other vehicles when the one asked about is gone.",
    ),
    ("Asked for the appointment", "Asked the customer to come in."),
    ("Set a date and time", "Agreed a concrete day and time for the visit."),
    ("Confirmed contact details", "Confirmed phone number or email before hanging up."),
]
DEFAULT_CHOICES = {
    "call_end": [
        "Appointment set",
        "Callback requested",
        "Information given",
        "Not interested",
        "Already purchased",
        "Wrong number",
        "Voicemail",
    ],
    "alert": ["Hot lead", "Unhappy customer", "Manager follow-up", "Poor audio"],
    "department": ["Sales", "Service", "Parts", "Finance"],
}
