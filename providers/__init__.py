"""The provider seam: every outside service the product uses sits behind an interface,
and the implementation is chosen and configured the same way for each kind.

A kind's setting names the implementation (``KINDS``: the setting's value -> the dotted
path of a class); the class builds itself from its own settings (``from_settings``). A
test account's calls and texts always go to the simulator, whatever the setting says. A
value that names no provider, or a choice without the settings it needs, fails the system
checks (``providers.checks``): ``manage.py`` commands refuse to start.

======================  ========================  ==========================================
kind (interface)        setting                   values
======================  ========================  ==========================================
telephony               ``TELEPHONY_PROVIDER``    ``simulator``, ``twilio``
(``providers.telephony.Provider``)
messaging               ``TELEPHONY_PROVIDER``    ``simulator``, ``twilio`` (texts go through
(``providers.messaging.TextProvider``)             the same carrier as calls)
speech                  ``TRANSCRIPTION_BACKEND`` ``faster_whisper``, ``remote``, ``none``
(``providers.speech.SpeechToText``)
summariser              ``SUMMARY_BACKEND``       ``builtin``, ``openai``
(``providers.summaries.Summariser``)
======================  ========================  ==========================================

Twilio (its client and the check of its request signatures) is in one place,
``providers.twilio``, for calls and texts alike; the simulator's clock
(``SIMULATOR_TIME_SCALE``) is ``providers.clock``.

The implementations that play callbacks into an app (the simulators) or read its models
live in that app and are named here by dotted path, resolved when asked for, as Django's
settings name backends: this package imports no app.

E-mail stays Django's own mechanism: ``EMAIL_BACKEND`` already is a setting naming a
backend class by dotted path (Django's SMTP backend, ``core.mail.ConsoleEmailBackend``,
django-anymail's providers), resolved by ``django.core.mail.get_connection`` and swapped
by the tests' own backend; a second registry in front of it would only repeat it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from django.conf import settings
from django.utils.module_loading import import_string

from providers.messaging import TextProvider
from providers.speech import SpeechToText
from providers.summaries import Summariser
from providers.telephony import Provider


@dataclass(frozen=True)
class Kind:
    """How one kind of provider is chosen: ``setting`` names one of ``choices`` (its
    class's dotted path, or None for "switched off"); ``on_test`` is the choice for a test
    account's work; ``otherwise`` the choice for a value not in ``choices`` ("": refused).
    ``needs`` names the settings a choice cannot work without. A value no kind of its
    setting knows, or a choice without what it needs, stops start-up (``providers.checks``)."""

    setting: str
    choices: Mapping[str, str | None]
    on_test: str = ""
    otherwise: str = ""
    needs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


TWILIO_CREDENTIALS = ("TWILIO_ACCOUNT_SID", "TWILIO_AUTH_TOKEN")


KINDS: dict[str, Kind] = {
    "telephony": Kind(
        setting="TELEPHONY_PROVIDER",
        choices={
            "simulator": "calls.telephony.simulator.SimulatorProvider",
            "twilio": "providers.twilio.TwilioProvider",
        },
        on_test="simulator",
        needs={"twilio": TWILIO_CREDENTIALS},
    ),
    "messaging": Kind(
        setting="TELEPHONY_PROVIDER",
        choices={
            "simulator": "texting.providers.SimulatorTexts",
            "twilio": "providers.twilio.TwilioTexts",
        },
        on_test="simulator",
        otherwise="simulator",
        needs={"twilio": TWILIO_CREDENTIALS},
    ),
    "speech": Kind(
        setting="TRANSCRIPTION_BACKEND",
        choices={
            "faster_whisper": "insights.engines.FasterWhisperEngine",
            "remote": "insights.remote.RemoteEngine",
            "none": None,
        },
        needs={"remote": ("TRANSCRIPTION_REMOTE_URL",)},
    ),
    "summariser": Kind(
        setting="SUMMARY_BACKEND",
        choices={
            "builtin": "insights.summaries.BuiltinSummariser",
            "openai": "insights.summaries.OpenAISummariser",
        },
        otherwise="builtin",
    ),
}


class UnknownProvider(LookupError):
    """A kind's setting names no provider of that kind."""


def provider_name(kind: str, *, is_test: bool = False) -> str:
    """The name of the provider of ``kind`` that work (a test account's, or not) goes to."""
    chosen = KINDS[kind]
    if is_test and chosen.on_test:
        return chosen.on_test
    name = str(getattr(settings, chosen.setting))
    if name in chosen.choices:
        return name
    if chosen.otherwise:
        return chosen.otherwise
    raise UnknownProvider(f"unknown {chosen.setting} {name!r}")


def provider_named(kind: str, name: str) -> Any:
    """The provider of ``kind`` registered under ``name``, configured from the settings;
    None for a kind switched off (``none``)."""
    try:
        path = KINDS[kind].choices[name]
    except KeyError:
        raise UnknownProvider(f"no {kind} provider {name!r}") from None
    return None if path is None else import_string(path).from_settings()


def provider_for(kind: str, *, is_test: bool = False) -> Any:
    """The configured provider of ``kind`` (the simulator for a test account's work)."""
    return provider_named(kind, provider_name(kind, is_test=is_test))


# The kinds, typed.


def telephony_named(name: str) -> Provider:
    """The telephony provider registered under ``name`` (a leg keeps the one it was dialed with)."""
    return cast(Provider, provider_named("telephony", name))


def telephony_for(*, is_test: bool) -> Provider:
    """The configured telephony provider; a test account's calls always go to the simulator."""
    return cast(Provider, provider_for("telephony", is_test=is_test))


def messaging_for(*, is_test: bool) -> TextProvider:
    """The configured texting provider; a test account's texts always go to the simulator."""
    return cast(TextProvider, provider_for("messaging", is_test=is_test))


def speech_to_text() -> SpeechToText | None:
    """The configured speech-to-text engine, or None when transcription is off."""
    return cast(SpeechToText | None, provider_for("speech"))


def summariser() -> Summariser:
    """The configured summariser."""
    return cast(Summariser, provider_for("summariser"))
