"""Card numbers and identity numbers out: taken from the transcript before anything reads
it, silenced in the stored recording, and Twilio's copy deleted (issue 38)."""

from __future__ import annotations

import io
import wave

import numpy as np
import pytest

from calls.models import Call, Recording
from calls.redaction import provider_recording_delete, silence
from core.models import Effect
from core.outbox import effect_run
from insights import engines
from insights.models import Transcription
from insights.redaction import luhn_valid, redact_turns
from insights.services import transcription_run
from providers.speech import Segment
from tests.accounts.factories import issue_scored_data_key
from tests.calls.fake_twilio import ACCOUNT_SID
from tests.insights.conftest import stored, wav_of

pytestmark = pytest.mark.django_db

VISA = "4111 1111 1111 1111"  # a test card number: passes the Luhn check


def turn(side: str, text: str, start: float = 0.0, end: float = 1.0) -> dict:
    return {"side": side, "start": start, "end": end, "text": text}


def said(turns: list[dict]) -> list[str]:
    return [t["text"] for t in redact_turns(turns)[0]]


def test_luhn():
    assert luhn_valid("4111111111111111")
    assert luhn_valid("378282246310005")  # American Express, 15 digits
    assert not luhn_valid("4111111111111112")


@pytest.mark.parametrize(
    "text",
    [
        f"Sure, it's {VISA}.",
        "Sure, it's 4111-1111-1111-1111.",
        "It is 4111111111111111",
        "four one one one one one one one one one one one one one one one",
        "three seven eight two eight two two four six three one oh oh oh five",
        "4111 dash 1111 dash 1111 dash 1111",
    ],
    ids=["groups", "dashes", "run", "spoken", "spoken-oh", "dash-words"],
)
def test_a_card_number_however_it_is_said_is_taken_out(text):
    (text_out,) = said([turn("lead", text)])
    assert "[card number]" in text_out
    assert not any(ch.isdigit() for ch in text_out)
    assert "one one one" not in text_out


def test_a_card_number_read_out_over_two_turns_is_one_number_out_of_both():
    turns = [
        turn("agent", "Go ahead with the card number.", 0, 2),
        turn("lead", "Okay it is 4111 1111", 3, 5),
        turn("lead", "1111 1111", 6.5, 8),
        turn("agent", "Thank you.", 9, 10),
    ]
    out, spans = redact_turns(turns)
    assert [t["text"] for t in out] == [
        "Go ahead with the card number.",
        "Okay it is [card number]",
        "[card number]",
        "Thank you.",
    ]
    assert [s.as_dict() for s in spans] == [
        {"side": "lead", "start": 3.0, "end": 8.0, "kind": "card number"}
    ]


def test_social_security_numbers_and_security_codes_are_taken_out():
    assert said(
        [
            turn("lead", "My social is 123 45 6789."),
            turn("lead", "It's 078-05-1120 I think."),
            turn("lead", "The security code is 737."),
            turn("lead", "And the CVV, um, 4321"),
        ]
    ) == [
        "My social is [social security number].",
        "It's [social security number] I think.",
        "The security code is [security code].",
        "And the CVV, um, [security code]",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "My number is 303 555 0123 and my zip is 80202.",
        "It's the 2025 RAV4 with 12000 miles, stock 4111111111111112.",
        "Can you come in at 10 30 on the 14th?",
        "The payment would be 450 a month for 72 months.",
        "I live at 123 45th Street, apartment 6789.",
    ],
    ids=["phone-and-zip", "not-luhn", "time", "payment", "address"],
)
def test_other_numbers_are_left_alone(text):
    assert said([turn("lead", text)]) == [text]


@pytest.fixture
def card_engine(monkeypatch):
    """An engine that hears the agent ask and the lead read a card number out."""
    heard = iter(
        [
            [Segment(0.5, 2.5, "Can I take a card for the deposit?")],
            [
                Segment(3.0, 4.0, "Yes."),
                Segment(4.5, 7.5, f"It's {VISA}, security code 123."),
            ],
        ]
    )
    monkeypatch.setattr(
        engines.FasterWhisperEngine,
        "transcribe",
        lambda self, audio, context=None, language="en": next(heard),
    )


def test_a_transcription_never_holds_the_number_and_the_recording_is_silenced(
    whisper, call, client, admin_client, card_engine, django_capture_on_commit_callbacks
):
    recording = stored(call, seconds=10, wav=wav_of(10, agent=0.3, lead=0.3))
    Transcription.objects.create(call=call)
    key = issue_scored_data_key(call.account)

    with django_capture_on_commit_callbacks():
        transcription_run(call_id=call.pk)

    call = Call.objects.get(pk=call.pk)
    assert "4111" not in call.transcription
    assert "[card number]" in call.transcription
    assert "[security code]" in call.transcription
    assert all("4111" not in t["text"] for t in call.transcript_turns)
    assert call.redactions == [
        {"side": "lead", "start": 4.5, "end": 7.5, "kind": "card number"},
        {"side": "lead", "start": 4.5, "end": 7.5, "kind": "security code"},
    ]
    body = client.get(
        "/api/scoreddata",
        {"apikey": key, "callId": call.pk},
    ).content.decode()
    assert "4111" not in body
    assert "[card number]" in body

    page = admin_client.get(f"/calls/{call.pk}/").content.decode()
    assert "4111" not in page
    assert (
        "2 numbers taken out of this transcript and silenced in the recording" in page
    )

    (effect,) = Effect.objects.filter(kind="calls.recording_silence")
    effect_run(effect_id=effect.pk)
    recording = Recording.objects.get(pk=recording.pk)
    with recording.audio.open("rb") as audio, wave.open(io.BytesIO(audio.read())) as w:
        rate = w.getframerate()
        pcm = np.frombuffer(w.readframes(w.getnframes()), "<i2").reshape(-1, 2)
    lead, agent = pcm[:, 1], pcm[:, 0]
    assert not lead[int(4.5 * rate) : int(7.5 * rate)].any()  # silenced
    assert lead[int(1 * rate) : int(4 * rate)].any()  # the rest kept
    assert lead[int(8 * rate) :].any()
    assert agent[int(4.5 * rate) : int(7.5 * rate)].any()  # the agent's side kept


def test_an_account_that_does_not_redact_keeps_the_numbers(
    whisper, call, card_engine, django_capture_on_commit_callbacks
):
    call.account.redact_numbers = False
    call.account.save()
    stored(call, seconds=10, wav=wav_of(10, agent=0.3, lead=0.3))
    Transcription.objects.create(call=call)

    transcription_run(call_id=call.pk)

    call = Call.objects.get(pk=call.pk)
    assert VISA in call.transcription
    assert call.redactions == []
    assert not Effect.objects.filter(kind="calls.recording_silence").exists()


def test_silence_is_idempotent_and_keeps_the_format():
    data = wav_of(3, agent=0.5, lead=0.5, rate=8000)
    spans = [{"side": "agent", "start": 1.0, "end": 2.0, "kind": "card number"}]
    count, once = silence(data, spans)
    assert count > 0
    again, twice = silence(once, spans)
    assert (again, twice) == (0, once)
    with wave.open(io.BytesIO(twice)) as w:
        assert (w.getnchannels(), w.getframerate(), w.getsampwidth()) == (2, 8000, 2)


def test_twilios_copy_is_deleted_once_and_a_copy_already_gone_counts_as_deleted(
    twilio_settings, fake_twilio
):
    sid = "RE" + "c" * 32
    fake_twilio.recordings[sid] = wav_of(1)
    url = f"{fake_twilio.url}/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/{sid}.wav"

    assert provider_recording_delete(source_url=url, call_id=1) is True
    assert sid not in fake_twilio.recordings
    assert provider_recording_delete(source_url=url, call_id=1) is False
    deletes = [r.path for r in fake_twilio.requests if r.method == "DELETE"]
    assert deletes == [f"/2010-04-01/Accounts/{ACCOUNT_SID}/Recordings/{sid}.json"] * 2
