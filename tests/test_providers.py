"""The provider seam (``providers``): one registry picks every kind of provider from its
setting, and each choice is an implementation of its kind's interface."""

from __future__ import annotations

import io
import subprocess

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError
from django.test import override_settings

import providers
from insights.engines import FasterWhisperEngine, engine_for_settings
from insights.summaries import BuiltinSummariser, OpenAISummariser
from providers.messaging import TextProvider
from providers.speech import PermanentError
from providers.telephony import Provider
from providers.twilio import TwilioProvider, TwilioTexts
from tests.processes import BIN, ROOT, service_env
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


# --- start-up refuses a provider setting that names no provider, or one left without
# what it needs (providers.checks)


def refusal(**values: str) -> str:
    """What ``manage.py check`` says as it refuses to start with ``values``."""
    with override_settings(**values), pytest.raises(SystemCheckError) as refused:
        call_command("check")
    return str(refused.value)


@pytest.mark.parametrize(
    ("setting", "value", "choices"),
    [
        ("TELEPHONY_PROVIDER", "twilo", "simulator, twilio"),
        ("TRANSCRIPTION_BACKEND", "whisper", "faster_whisper, remote, none"),
        ("SUMMARY_BACKEND", "opanai", "builtin, openai"),
    ],
)
def test_a_provider_setting_naming_no_provider_stops_start_up(setting, value, choices):
    said = refusal(**{setting: value})

    assert f"(providers.E001) {setting} is '{value}', which names no provider." in said
    assert f"HINT: Set {setting} to one of: {choices}." in said


def test_twilio_without_its_credentials_stops_start_up_once_for_calls_and_texts():
    said = refusal(
        TELEPHONY_PROVIDER="twilio", TWILIO_ACCOUNT_SID="AC123", TWILIO_AUTH_TOKEN=""
    )

    assert said.count("(providers.E002)") == 1
    assert (
        "(providers.E002) TWILIO_AUTH_TOKEN is empty, and TELEPHONY_PROVIDER 'twilio' "
        "needs it." in said
    )
    assert "TWILIO_ACCOUNT_SID is empty" not in said


def test_a_remote_transcription_server_without_its_address_stops_start_up():
    said = refusal(TRANSCRIPTION_BACKEND="remote", TRANSCRIPTION_REMOTE_URL="")

    assert "(providers.E002) TRANSCRIPTION_REMOTE_URL is empty" in said


@pytest.mark.parametrize(
    "values",
    [
        # base.py's defaults, and every choice with what it needs.
        {
            "TELEPHONY_PROVIDER": "simulator",
            "TRANSCRIPTION_BACKEND": "faster_whisper",
            "SUMMARY_BACKEND": "builtin",
        },
        {
            "TELEPHONY_PROVIDER": "twilio",
            "TWILIO_ACCOUNT_SID": "AC123",
            "TWILIO_AUTH_TOKEN": "secret",
            "TRANSCRIPTION_BACKEND": "remote",
            "TRANSCRIPTION_REMOTE_URL": "http://127.0.0.1:9",
            "SUMMARY_BACKEND": "openai",
        },
        {"TRANSCRIPTION_BACKEND": "none"},
    ],
)
def test_the_defaults_and_every_configured_choice_start(values):
    with override_settings(**values):
        call_command("check", stdout=io.StringIO())


# --- the processes that do not run Django's checks themselves refuse too (config.checks)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("process", ["gunicorn", "celery"])
def test_a_web_server_or_worker_with_a_mistyped_provider_stops_at_start(
    tmp_path, process
):
    env = service_env(TELEPHONY_PROVIDER="twilo", LOG_LEVEL="INFO")
    gunicorn = [str(BIN / "gunicorn"), "-c", "config/gunicorn.py", "--workers", "1"]
    celery = [str(BIN / "celery"), "-A", "config", "worker", "-Q", "webhooks"]
    args = (
        [*gunicorn, "--bind", "127.0.0.1:0", "config.wsgi:application"]
        if process == "gunicorn"
        else [*celery, "--concurrency=1", "--without-gossip", "--without-mingle"]
    )
    started = subprocess.run(
        args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    said = started.stdout + started.stderr
    assert started.returncode != 0
    assert "refuses to start" in said
    assert "TELEPHONY_PROVIDER is 'twilo', which names no provider" in said
