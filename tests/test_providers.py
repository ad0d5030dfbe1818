"""The provider seam (``providers``): one registry picks every kind of provider from its
setting, and each choice is an implementation of its kind's interface."""

from __future__ import annotations

import pytest

import providers
from insights.engines import FasterWhisperEngine, engine_for_settings
from insights.summaries import BuiltinSummariser, OpenAISummariser
from providers.messaging import TextProvider
from providers.speech import PermanentError
from providers.telephony import Provider
from providers.twilio import TwilioProvider, TwilioTexts
from texting.providers import SimulatorTexts


def test_every_telephony_and_messaging_choice_implements_its_interface():
    for name in providers.KINDS["telephony"].choices:
        provider = providers.telephony_named(name)
        assert isinstance(provider, Provider)
        assert provider.name == name
    for name in providers.KINDS["messaging"].choices:
        texts = providers.provider_named("messaging", name)
        assert isinstance(texts, TextProvider)
        assert texts.name == name


def test_calls_and_texts_follow_telephony_provider_but_a_test_account_is_simulated(
    settings,
):
    settings.TELEPHONY_PROVIDER = "twilio"

    assert isinstance(providers.telephony_for(is_test=False), TwilioProvider)
    assert isinstance(providers.messaging_for(is_test=False), TwilioTexts)
    assert providers.telephony_for(is_test=True).name == "simulator"
    assert isinstance(providers.messaging_for(is_test=True), SimulatorTexts)


def test_speech_to_text_is_built_from_its_settings_and_none_turns_it_off(settings):
    settings.TRANSCRIPTION_BACKEND = "faster_whisper"
    settings.TRANSCRIPTION_MODEL = "some-model"
    settings.TRANSCRIPTION_COMPUTE_TYPE = "float16"

    engine = providers.speech_to_text()

    assert isinstance(engine, FasterWhisperEngine)
    assert (engine.model, engine.compute_type) == ("some-model", "float16")
    settings.TRANSCRIPTION_BACKEND = "none"
    assert providers.speech_to_text() is None


def test_an_unknown_transcription_backend_is_a_permanent_error(settings):
    settings.TRANSCRIPTION_BACKEND = "abacus"

    with pytest.raises(PermanentError, match="unknown TRANSCRIPTION_BACKEND 'abacus'"):
        engine_for_settings()


def test_an_unknown_telephony_provider_is_refused(settings):
    settings.TELEPHONY_PROVIDER = "carrier-pigeon"

    with pytest.raises(providers.UnknownProvider):
        providers.telephony_for(is_test=False)


def test_the_summariser_follows_summary_backend(settings):
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = "http://127.0.0.1:9/"

    summariser = providers.summariser()

    assert isinstance(summariser, OpenAISummariser)
    assert summariser.url == "http://127.0.0.1:9/v1/chat/completions"
    settings.SUMMARY_BACKEND = "builtin"
    assert isinstance(providers.summariser(), BuiltinSummariser)
