"""``make bench`` part 10, understanding calls: the service's own evaluation
(``manage.py insights_eval``, backoffice/evaluation.py) over calls written by hand, not
by the simulator's generator, with the configured engine on this machine's CPU
(TRANSCRIPTION_BACKEND=faster_whisper; the shipped model, Whisper base, unless
TRANSCRIPTION_MODEL or TRANSCRIPTION_SHIPPED_MODEL names another):

1. the evaluation set (bench/eval/conversations/, 20 labelled dealer calls) and the
   held-back set (bench/eval/heldback/, 6 calls nobody tuned for) spoken by
   bench/eval/speak.py, with espeak-ng voices unlike the simulator's, at 16 kHz and as
   8 kHz µ-law telephone audio, to bench/eval/audio/ (the held-back set to its
   ``heldback/``); audio newer than its call's file and the code that speaks it is
   reused;
2. ``insights_eval --json`` in a process of its own for each of ``PASSES``: the perfect
   transcripts, the 16 kHz audio and the 8 kHz audio of the evaluation set, the
   held-back set's perfect transcripts and its 8 kHz audio, and the second held-back
   set's perfect transcripts (bench/eval/heldback2/, 8 calls never tuned on);
3. their figures as rows against the issue's aims (bench/report.py ``insights_rows``).

The burst of leads with the transcription worker busy is part 4d (``bench/run.py``):
``busy()`` below is what that worker does when it has a backlog, run in a process of its
own beside the burst (``python -m bench.insights``), on a simulated recording.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from backoffice.evaluation import load

ROOT = Path(__file__).resolve().parent.parent
EVAL = ROOT / "bench" / "eval"
CALLS = EVAL / "conversations"
HELD_BACK = EVAL / "heldback"
HELD_BACK_2 = EVAL / "heldback2"
AUDIO = EVAL / "audio"
FORMS = ("16k", "8k")
# What the audio is made from: a change to any of them speaks the sets again.
SPEAKING_CODE = (
    EVAL / "speak.py",
    ROOT / "calls" / "audio.py",
    ROOT / "calls" / "telephony" / "speech.py",
)
# insights_eval's line on stderr for each recording it has understood.
UNDERSTOOD = re.compile(r"^\s+(?P<name>\S+) \((?P<form>16k|8k)\): ")


@dataclass(frozen=True)
class Pass:
    """One ``insights_eval`` run: the calls in ``calls`` understood in ``form``
    (``transcript``, ``16k`` or ``8k``)."""

    key: str
    label: str
    calls: Path
    form: str


PASSES = (
    Pass("transcripts", "perfect transcripts", CALLS, "transcript"),
    Pass("16k", "16 kHz audio", CALLS, "16k"),
    Pass("8k", "8 kHz telephone audio", CALLS, "8k"),
    Pass("held back", "held-back transcripts", HELD_BACK, "transcript"),
    Pass("held back 8k", "held-back 8 kHz telephone audio", HELD_BACK, "8k"),
    Pass("held back 2", "second held-back transcripts", HELD_BACK_2, "transcript"),
)


@dataclass(frozen=True)
class Measured:
    """A pass's figures: ``insights_eval``'s JSON document of its form, the appointments
    its set's labels hold, and the pass's seconds (the model's loading included)."""

    label: str
    figures: dict[str, Any]
    appointments: int
    seconds: float


def audio_of(calls: Path) -> Path:
    """Where a set's recordings are spoken to."""
    return AUDIO if calls == CALLS else AUDIO / calls.name


def spoken(calls: Path, out: Path) -> bool:
    """Whether every call in ``calls`` has its recordings in ``out``, each newer than the
    call's file and the code that speaks it."""
    code = max(path.stat().st_mtime for path in SPEAKING_CODE)
    for path in sorted(calls.glob("*.txt")):
        made = max(code, path.stat().st_mtime)
        for form in FORMS:
            wav = out / f"{path.stem}.{form}.wav"
            if not wav.exists() or wav.stat().st_mtime < made:
                return False
    return True


def streamed(
    command: list[str],
    env: dict[str, str],
    each: Callable[[str], None],
    *,
    output: IO[str] | None = None,
) -> None:
    """``command`` run to its end in ROOT, ``each`` called with every line it writes:
    stderr's when ``output`` takes its stdout, else both. A failure raises
    ``CalledProcessError`` with its last lines; the process does not outlive the call."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=output if output is not None else subprocess.PIPE,
        stderr=subprocess.PIPE if output is not None else subprocess.STDOUT,
        text=True,
    )
    lines = process.stderr if output is not None else process.stdout
    assert lines is not None
    last: collections.deque[str] = collections.deque(maxlen=40)
    try:
        for line in lines:
            last.append(line.rstrip("\n"))
            each(line.rstrip("\n"))
        returncode = process.wait()
    finally:
        if process.poll() is None:  # interrupted: stop what was started here
            process.kill()
            process.wait()
        lines.close()
    if returncode:
        raise subprocess.CalledProcessError(returncode, command, stderr="\n".join(last))


def speak(calls: Path, env: dict[str, str], progress: Callable[[str], None]) -> None:
    """The set in ``calls`` spoken to its audio folder, unless it already is."""
    out = audio_of(calls)
    if spoken(calls, out):
        progress(f"10 {calls.name}: its audio in {out.relative_to(ROOT)} is up to date")
        return
    progress(f"10 {calls.name}: speaking it to {out.relative_to(ROOT)}, 16 and 8 kHz")
    speak_to = [sys.executable, "-m", "bench.eval.speak", str(out), "--calls"]
    streamed([*speak_to, str(calls)], env, lambda line: progress(f"10 spoken {line}"))


def evaluate(
    run: Pass, env: dict[str, str], progress: Callable[[str], None]
) -> dict[str, Any]:
    """``insights_eval``'s figures of ``run``'s form: its calls' perfect transcripts
    (``--transcripts-only``), or its recordings in that form and no other."""
    total = len(list(run.calls.glob("*.txt")))
    command = [sys.executable, "manage.py", "insights_eval", str(run.calls), "--json"]
    done = 0

    def heard(line: str) -> None:
        nonlocal done
        if understood := UNDERSTOOD.match(line):
            done += 1
            progress(f"10 {run.label}: {done}/{total} {understood['name']}")

    with tempfile.TemporaryDirectory(prefix="bench-insights-") as scratch:
        if run.form == "transcript":
            command.append("--transcripts-only")
        else:
            audio = Path(scratch) / "audio"
            audio.mkdir()
            for wav in sorted(audio_of(run.calls).glob(f"*.{run.form}.wav")):
                (audio / wav.name).symlink_to(wav)
            command += ["--audio", str(audio)]
        answer = Path(scratch) / "figures.json"
        with answer.open("w") as output:
            streamed(command, env, heard, output=output)
        figures = json.loads(answer.read_text())
    found = [f for f in figures if f["form"] == run.form]
    scored = found[0]["calls"] if found else 0
    if scored != total:  # a recording missing: these would not be the set's figures
        raise RuntimeError(
            f"insights_eval scored {scored} of the {total} calls of {run.calls} "
            f"in form {run.form}"
        )
    return found[0]


def labelled_appointments(calls: Path) -> int:
    """How many of the set's calls are labelled with an appointment agreed."""
    return sum(1 for call in load(calls) if call.value("appointment"))


def measure(
    env: dict[str, str], progress: Callable[[str], None]
) -> dict[str, Measured]:
    """Part 10: the sets spoken, then every pass's figures, by its key."""
    env = {**env, "TRANSCRIPTION_BACKEND": "faster_whisper"}
    for calls in dict.fromkeys(run.calls for run in PASSES if run.form != "transcript"):
        speak(calls, env, progress)
    measured = {}
    for run in PASSES:
        progress(f"10 {run.label}: insights_eval {run.calls.relative_to(ROOT)}")
        started = time.perf_counter()
        figures = evaluate(run, env, progress)
        measured[run.key] = Measured(
            run.label,
            figures,
            labelled_appointments(run.calls),
            time.perf_counter() - started,
        )
    return measured


def model_named(env: dict[str, str]) -> str:
    """The model the passes ran, as the settings choose it (config/settings/base.py)."""
    if env.get("TRANSCRIPTION_MODEL"):
        return env["TRANSCRIPTION_MODEL"]
    return f"the shipped model {env.get('TRANSCRIPTION_SHIPPED_MODEL') or 'base'}"


def busy() -> None:
    """What the transcription worker does with a backlog: transcribe, again and again
    (part 4d runs this in a process beside the burst)."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.production")
    django.setup()
    from calls.telephony.conversation import Facts, conversation_script
    from calls.telephony.speech import conversation_audio
    from core.priority import yield_cpu_to_calls
    from insights.engines import engine_for_settings, read_wav

    yield_cpu_to_calls(session=True)  # as transcription_task does
    facts = Facts(
        agent_name="Ana Diaz",
        dealer="Demo Motors North",
        first_name="Sam",
        last_name="Rivera",
        vehicle="2025 Toyota Camry",
        trade_in="2016 Honda Civic",
    )
    recording = conversation_audio(conversation_script(facts, seed=1000), seconds=75)
    engine = engine_for_settings()
    assert engine is not None
    channels = read_wav(recording.wav)
    while True:
        for channel in (channels.agent, channels.lead):
            assert channel is not None  # a simulated recording has both sides
            engine.transcribe(channel)


def main(argv: list[str]) -> None:
    """Without arguments, the busy transcription worker of part 4d."""
    if argv:
        raise SystemExit("usage: python -m bench.insights")
    busy()


if __name__ == "__main__":
    main(sys.argv[1:])
