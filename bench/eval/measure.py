"""Transcribe the evaluation set's audio through the project's own engine
(``insights.engines``: ``read_wav``, ``FasterWhisperEngine``, ``turns_from``) and score
it against the hand-written conversations: word error rate per channel and merged,
vehicle models and names heard, words of the call's context heard where they were not
said (a prompt leaking), and the real-time factor per channel.

    nice -n 10 .venv/bin/python -m bench.eval.measure --form 8k [--hints hotwords]
        [--resample engine|linear|band] [--decoding before|after] [--model PATH] [--only N]

Needs the audio first (``python -m bench.eval.speak``). WER: words lower-cased,
punctuation dropped, hyphens joined (CR-V = crv), digits spelled out on both sides.
"""

from __future__ import annotations

import argparse
import logging
import re
import time
from pathlib import Path
from typing import Any

from backoffice.evaluation import compact, word_errors, words
from bench.eval import django_setup
from bench.eval.conversations import Conversation, load

AUDIO = Path(__file__).resolve().parent / "audio"


def context_of(conversation: Conversation, *, short: bool = False) -> Any:
    """What the pipeline knows of the call before it is heard (``providers.speech``);
    ``short``: first names only and vehicles without their year (an experiment)."""
    from providers.speech import Context

    labels = conversation.labels
    names = (labels["agent_name"], labels["lead_name"], labels["dealer"])
    vehicles = tuple(v for v in (labels["vehicle"], labels["trade_in"]) if v)
    if short:
        names = (names[0].split()[0], names[1].split()[0], names[2])
        vehicles = tuple(re.sub(r"^\d{4} ", "", v) for v in vehicles)
    return Context(names=names, vehicles=vehicles)


class Tally:
    """The figures over the set, one conversation at a time."""

    def __init__(self) -> None:
        self.errors = {"agent": [0, 0], "lead": [0, 0], "merged": [0, 0]}
        self.vehicles = [0, 0]  # heard, discussed
        self.names = [0, 0]  # heard, said
        self.leaked: list[str] = []

    def add(
        self, conversation: Conversation, hypothesis: dict[str, str], context: Any
    ) -> str:
        """Score one conversation's text (``agent``, ``lead``, ``merged``); its row."""
        reference = {
            "agent": conversation.said_by("agent"),
            "lead": conversation.said_by("lead"),
            "merged": " ".join(line.text for line in conversation.lines if line.text),
        }
        row = []
        for key, totals in self.errors.items():
            ref, hyp = words(reference[key]), words(hypothesis[key])
            errors = word_errors(ref, hyp)
            totals[0] += errors
            totals[1] += len(ref)
            row.append(f"{key} {errors}/{len(ref)}")
        labels = conversation.labels
        if labels["vehicle_discussed"]:
            self.vehicles[1] += 1
            self.vehicles[0] += compact(labels["vehicle_discussed"]) in compact(
                hypothesis["merged"]
            )
        said, heard = words(reference["merged"]), words(hypothesis["merged"])
        for key in ("agent_name", "lead_name", "dealer"):
            name = words(labels[key])[0]  # a first name; a dealer's first word
            if name in said:
                self.names[1] += 1
                self.names[0] += name in heard
        if context is not None:  # the context's words heard where they were not said
            hints = set(words(re.sub(r"\d+", " ", context.hints())))  # no years
            for side in ("agent", "lead"):
                extra = set(words(hypothesis[side])) & hints
                extra -= set(words(reference[side]))
                self.leaked += [
                    f"{conversation.name}/{side}:{w}" for w in sorted(extra)
                ]
        return " ".join(row)

    def figures(self) -> dict[str, Any]:
        return {
            **{
                f"wer_{key}": round(100 * errors / max(count, 1), 1)
                for key, (errors, count) in self.errors.items()
            },
            "vehicles": f"{self.vehicles[0]}/{self.vehicles[1]}",
            "names": f"{self.names[0]}/{self.names[1]}",
            "leaked": len(self.leaked),
        }


def run(args: argparse.Namespace) -> dict[str, Any]:
    django_setup()
    logging.getLogger("faster_whisper").setLevel(logging.WARNING)
    from calls import audio
    from insights import engines

    if args.resample == "linear":
        engines.upsample = lambda samples, rate: audio.resample(
            samples, rate, engines.RATE
        )
    elif args.resample == "band":
        engines.upsample = lambda samples, rate: audio.resample_band_limited(
            samples, rate, engines.RATE
        )
    engine: Any = (
        LegacyEngine(model=args.model)
        if args.decoding == "before"
        else engines.FasterWhisperEngine(model=args.model, hints=args.hints)
    )
    if args.no_silence_guard:  # keep segments over silence: what the guard removes
        engine.kept = lambda segment, audio, hints: not engines.looping(segment.text)
    conversations = load()[: args.only or None]
    tally = Tally()
    engine_seconds = channel_seconds = 0.0
    for index, conversation in enumerate(conversations):
        data = (AUDIO / f"{conversation.name}.{args.form}.wav").read_bytes()
        channels = engines.read_wav(data)
        assert channels.agent is not None
        context = (
            context_of(conversation, short=args.short) if args.hints != "none" else None
        )
        if not index:  # the model loaded outside the timing
            engine.transcribe(channels.agent[: engines.RATE])
        started = time.perf_counter()
        heard = {
            side: engine.transcribe(samples, context=context)
            for side, samples in (("agent", channels.agent), ("lead", channels.lead))
        }
        engine_seconds += time.perf_counter() - started
        channel_seconds += 2 * channels.seconds
        hypothesis = {
            side: " ".join(s.text for s in segments) for side, segments in heard.items()
        }
        turns = engines.turns_from(heard["agent"], heard["lead"])
        hypothesis["merged"] = " ".join(t["text"] for t in turns)
        row = tally.add(conversation, hypothesis, context)
        if args.verbose:
            print(conversation.name, row)
            for side in ("agent", "lead"):
                print(f"  {side}: {hypothesis[side]}")
    result = {
        "form": args.form,
        "model": Path(engine.model).name,
        "decoding": args.decoding,
        "hints": args.hints,
        "resample": args.resample,
        "short": args.short,
        "silence_guard": not args.no_silence_guard,
        **tally.figures(),
        "rtf_per_channel": round(engine_seconds / max(channel_seconds, 1e-9), 3),
    }
    print(result)
    if tally.leaked:
        print("leaked:", " ".join(tally.leaked))
    return result


class LegacyEngine:
    """The engine as it decoded before issue 38 (temperature 0 only, no guards, no
    context): the baseline. Built lazily so a run without it needs no change here."""

    def __new__(cls, *, model: str) -> Any:
        from insights import engines

        class Legacy(engines.FasterWhisperEngine):
            def options(self, context: Any, language: str = "en") -> dict[str, Any]:
                return {
                    "language": language,
                    "vad_filter": True,
                    "beam_size": self.BEAM_SIZE,
                    "temperature": 0.0,
                    "condition_on_previous_text": False,
                    "word_timestamps": True,
                }

            def kept(self, segment: Any, audio: Any, hints: str) -> bool:
                return True

        return Legacy(model=model, hints="none")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--form", choices=("16k", "8k"), default="8k")
    parser.add_argument(
        "--hints", choices=("none", "prompt", "hotwords"), default="none"
    )
    parser.add_argument(
        "--resample", choices=("engine", "band", "linear"), default="engine"
    )
    parser.add_argument("--decoding", choices=("before", "after"), default="after")
    parser.add_argument("--model", default="")
    parser.add_argument("--only", type=int, default=0)
    parser.add_argument("--no-silence-guard", action="store_true")
    parser.add_argument("--short", action="store_true", help="first names, no years")
    parser.add_argument("--verbose", action="store_true")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
