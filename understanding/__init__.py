"""What a call established, read from its transcript: pure functions, no models, no
database. ``understand`` turns the transcript's turns and a ``Context`` (who, the lead
form's vehicles as recognition hints, when the call was made) into ``Facts``, each with
the transcript lines that support it; ``summary_sentences`` writes the summary from the
facts alone. Insights (the summary) and scoring (the scorer's suggestions) both read it.

The rules read English (``LANGUAGES``): a call in another language gets no facts from
them, and its summary says so (``insights.summaries.other_language_summary``).
"""

from understanding.facts import (
    Appointment,
    Callback,
    Context,
    Evidence,
    Facts,
    Flag,
    Line,
    Objection,
    Question,
    Revocation,
    TradeIn,
    Vehicle,
    VehicleFact,
    lines_of,
)
from understanding.reading import understand
from understanding.summary import Sentence, summary_sentences

# The languages whose words the rules know (ISO 639-1 codes).
LANGUAGES = ("en",)

__all__ = [
    "LANGUAGES",
    "Appointment",
    "Callback",
    "Context",
    "Evidence",
    "Facts",
    "Flag",
    "Line",
    "Objection",
    "Question",
    "Revocation",
    "Sentence",
    "TradeIn",
    "Vehicle",
    "VehicleFact",
    "lines_of",
    "summary_sentences",
    "understand",
]
