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

# The default call-end reasons that mean an appointment was set: a score giving one
# must give the appointment date (ScorecardChoice.needs_appointment).
DEFAULT_APPOINTMENT_CALL_ENDS = ["Appointment set"]

# What suggests each default category or list entry to the scorer (scoring/suggestions.py):
# phrases one per line, the side that says them, and a limit in seconds from the start.
# Every default name has one. The call ends the call's facts decide (voicemail, wrong
# number, already purchased, appointment set, not interested, callback requested,
# information given: scoring.suggestions.FACT_CALL_ENDS) use their phrases only when the
# facts decide no call end.
DEFAULT_CATEGORY_RULES: dict[str, tuple[str, str, int | None]] = {
    "Greeted the customer by name": ("{first_name}", "agent", 20),
    "Introduced self and dealership": (
        "this is\nfrom\nmy name is\nover at\nhere at\n"
        r"re:\b(?:it's|I'm)\s+\w+\s+(?:with|at)\b",
        "agent",
        None,
    ),
    "Confirmed the vehicle of interest": (
        "{vehicle}\nlooking at\ninterested in\nasked about\nenquired about\n"
        "inquired about\nenquiry about\ninquiry about\nrequest about\ncalling about\n"
        "following up on",
        "agent",
        None,
    ),
    "Asked about a trade-in": (
        "trade\ntrading\ntrade-in\nappraisal\nappraise\nreplacing",
        "agent",
        None,
    ),
    "Built rapport": (
        "how are you\nhow's your\nhow is your\nhow was your\nhow have you been\n"
        "hope you\ncongratulations\ncongrats\nsorry to hear\nI hear you\n"
        "completely understand\ntotally understand\nunderstandable\nit happens\n"
        "no pressure\nmy pleasure\nhappy to help\nappreciate\ngreat question\n"
        "good question\nthat makes sense\nyou'll love\nenjoy\ngreat choice\n"
        "good choice\nhave a great\nweather",
        "agent",
        None,
    ),
    "Answered the customer's questions": (
        "{questions_answered}\ngood question\ngreat question\nlet me check\n"
        "let me find out\nI'll find out\nI'll check\nget back to you\nit comes with\n"
        "it does\nyes it does\nwe do have\nwe have",
        "agent",
        None,
    ),
    "Offered alternatives": (
        "we also have\nanother option\nalternative\nsimilar\nI could show you\n"
        "something similar\nhave you thought about\nhave you considered\n"
        "have you looked at\nsuit you better\nmight suit\nmiddle ground\n"
        "another model\nanother trim\ndifferent trim\n"
        r"re:\b(?:the|a|an)\s+\w+(?:\s+\w+)?\s+instead\b",
        "agent",
        None,
    ),
    "Asked for the appointment": (
        "come in\nappointment\n{weekday}\ntest drive\nstop by\ncome by\nswing by\n"
        "drop by\ndrop in\npop in\ncome see\ncome and see\ncome down\nget here\n"
        "see it in person",
        "agent",
        None,
    ),
    "Set a date and time": ("{appointment}", "either", None),
    "Confirmed contact details": (
        "best number\nphone number\nemail address\nyour email\nbest email\n"
        "confirm your\nreach you at\nstill the best\nyour number\nyour cell\n"
        "your phone\nyour mobile\nfor email\nending in\ndot com\nat gmail\n"
        "at outlook\nat yahoo\nat hotmail\nat icloud",
        "agent",
        None,
    ),
}
DEFAULT_CHOICE_RULES: dict[tuple[str, str], tuple[str, str, int | None]] = {
    ("call_end", "Appointment set"): (
        "I have you down for\nsee you then\nyou're all set\nyou're booked",
        "agent",
        None,
    ),
    ("call_end", "Callback requested"): (
        "call me back\ncall back\ncall me later\ngive me a call",
        "lead",
        None,
    ),
    ("call_end", "Information given"): (
        "I'll send you\nI'll email you\nI'll text you\nsend you the\nemail you the\n"
        "text you the",
        "agent",
        None,
    ),
    ("call_end", "Not interested"): (
        "not interested\nno longer interested\nstop calling\ntake me off",
        "lead",
        None,
    ),
    ("call_end", "Already purchased"): (
        "already bought\nalready purchased\nbought one\nbought elsewhere\n"
        "went with another dealer",
        "lead",
        None,
    ),
    ("call_end", "Wrong number"): (
        "wrong number\nwrong person\ndidn't fill out\ndid not fill out",
        "lead",
        None,
    ),
    ("call_end", "Voicemail"): (
        "leave a message\nafter the tone\nafter the beep\nvoicemail\nmailbox",
        "lead",
        None,
    ),
    ("alert", "Hot lead"): (
        "ready to buy\nbuy today\nbuying today\nright away\nas soon as possible\n"
        "ASAP\npaying cash\nneed a car",
        "lead",
        None,
    ),
    ("alert", "Unhappy customer"): (
        "too expensive\nunhappy\nfrustrated\nupset\nterrible\nripped off\n"
        "complaint\ndisappointed\nannoyed\nfed up\nridiculous\nwaste of time",
        "lead",
        None,
    ),
    ("alert", "Manager follow-up"): ("manager", "lead", None),
    ("alert", "Poor audio"): (
        "can't hear you\ncan you hear me\nbreaking up\nyou're cutting out\n"
        "bad connection\nsay that again",
        "either",
        None,
    ),
}
# The rules the defaults had before issue 38, kept for the migration that moves
# scorecards still on them to the rules above (0012).
PREVIOUS_CATEGORY_RULES: dict[str, tuple[str, str, int | None]] = {
    "Greeted the customer by name": ("{first_name}", "agent", 20),
    "Introduced self and dealership": ("this is\nfrom", "agent", None),
    "Confirmed the vehicle of interest": ("looking at\ninterested in", "agent", None),
    "Asked about a trade-in": ("trade in\ntrading in\ntrade-in", "agent", None),
    "Asked for the appointment": (
        "come in\nappointment\n{weekday}\ntest drive",
        "agent",
        None,
    ),
    "Set a date and time": (
        r"re:\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b.*\b(at|around)\b",
        "either",
        None,
    ),
}
PREVIOUS_CHOICE_RULES: dict[tuple[str, str], tuple[str, str, int | None]] = {
    ("call_end", "Appointment set"): (
        "I have you down for\nsee you then",
        "agent",
        None,
    ),
    ("call_end", "Callback requested"): ("call me back", "lead", None),
    ("call_end", "Not interested"): ("not interested", "lead", None),
    ("alert", "Manager follow-up"): ("manager", "lead", None),
    ("alert", "Unhappy customer"): ("too expensive\ncancel\nunhappy", "lead", None),
}

# The default rules as issue 38 left them, kept for the migration that moves scorecards
# still on them to the rules above (0013): categories that also read what the call
# established ({vehicle}, {questions_answered}, {appointment}), more ways people say
# things, and no "cancel" in "Unhappy customer" (a polite cancellation is not unhappy).
RULES_BEFORE_0013_CATEGORIES: dict[str, tuple[str, str, int | None]] = {
    "Introduced self and dealership": ("this is\nfrom\nmy name is", "agent", None),
    "Confirmed the vehicle of interest": (
        "looking at\ninterested in\nasked about\nenquired about\ninquired about",
        "agent",
        None,
    ),
    "Asked about a trade-in": ("trade in\ntrading in\ntrade-in", "agent", None),
    "Built rapport": (
        "how are you\nhow's your day\nhow is your day\nappreciate\ngreat question\n"
        "good question\nhappy to help\nno problem\nI understand\nthat makes sense",
        "agent",
        None,
    ),
    "Answered the customer's questions": (
        "good question\ngreat question\nlet me check\nlet me find out\n"
        "I'll find out\nI'll check\nget back to you\nit comes with\nit does\n"
        "yes it does\nwe do have\nwe have",
        "agent",
        None,
    ),
    "Offered alternatives": (
        "we also have\nanother option\nalternative\nsimilar\ninstead\n"
        "I could show you\nsomething similar",
        "agent",
        None,
    ),
    "Asked for the appointment": (
        "come in\nappointment\n{weekday}\ntest drive\nstop by\ncome by",
        "agent",
        None,
    ),
    "Set a date and time": (
        r"re:\b(today|tomorrow|monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b"
        r".*\b(at|around|noon|midday|morning|afternoon)\b",
        "either",
        None,
    ),
    "Confirmed contact details": (
        "best number\nphone number\nemail address\nyour email\nbest email\n"
        "confirm your\nreach you at\nstill the best",
        "agent",
        None,
    ),
}
RULES_BEFORE_0013_CHOICES: dict[tuple[str, str], tuple[str, str, int | None]] = {
    ("alert", "Unhappy customer"): (
        "too expensive\ncancel\nunhappy\nfrustrated\nupset\nterrible\nripped off\n"
        "complaint",
        "lead",
        None,
    ),
}

# The roles each permission template (group) starts with, by permission codename of
# scoring.Score; reach is decided by the permissions, so a group may be renamed.
TEMPLATE_PERMISSIONS = {
    "Agent": ("take_calls",),
    "Scorer": ("score_calls",),
    "Manager": ("coach_account_calls",),
    "Global Manager": ("coach_organization_calls",),
}
