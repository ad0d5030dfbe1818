"""The calls app's public services; they live in the call pipeline (``calls.pipeline``,
whose docstring says which module holds what)."""

from calls.pipeline.dispatch import (
    attempt_dial,
    call_again,
    call_queue,
    call_setup,
)
from calls.pipeline.events import call_event
from calls.pipeline.fair import SetupPriority
from calls.pipeline.records import call_recording_reissue, call_transcription_save
from calls.pipeline.recovery import attempt_settle, calls_answered_finish, calls_sweep
from calls.pipeline.transitions import call_cancel, dialing_settings
from calls.pipeline.waiting import agents_on_duty_hand_over, calls_hand_over

__all__ = [
    "SetupPriority",
    "agents_on_duty_hand_over",
    "attempt_dial",
    "attempt_settle",
    "call_again",
    "call_cancel",
    "call_event",
    "call_queue",
    "call_recording_reissue",
    "call_setup",
    "call_transcription_save",
    "calls_answered_finish",
    "calls_hand_over",
    "calls_sweep",
    "dialing_settings",
]
