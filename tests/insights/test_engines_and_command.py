"""The remote engine and the OpenAI-compatible summariser against a local server speaking
OpenAI's shapes, the builtin summary (written from the call's facts), and the
``transcribe_calls`` command."""

import io
import json
import threading
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from django.core.management import call_command

from calls.models import Call
from insights import engines
from insights.models import Transcription, TranscriptionStatus
from insights.remote import RemoteEngine
from insights.services import transcription_run
from insights.summaries import builtin_summary, builtin_written, summary_write
from providers.speech import Context
from tests.insights.conftest import record
from tests.scoring.factories import CallFactory

pytestmark = pytest.mark.django_db


class OpenAIFake:
    """POST /v1/audio/transcriptions (verbose_json) and /v1/chat/completions on loopback."""

    def __init__(self):
        self.requests: list[dict] = []
        self.status = 200
        self.answer = "Sam called."
        self.spoken = "english"  # the language a request without one is told
        self.transcribed = 0  # requests that named a language
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                fake.requests.append(
                    {"path": self.path, "headers": dict(self.headers), "body": body}
                )
                if fake.status != 200:
                    answer: dict[str, object] = {"error": {"message": "nope"}}
                elif self.path == "/v1/audio/transcriptions":
                    answer = fake.transcription(body, self.headers["Content-Type"])
                else:
                    answer = {
                        "choices": [
                            {"message": {"role": "assistant", "content": fake.answer}}
                        ]
                    }
                data = json.dumps(answer).encode()
                self.send_response(fake.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def transcription(self, body, content_type):
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {content_type}\r\n\r\n".encode() + body
        )
        fields = {
            part.get_param("name", header="content-disposition"): part.get_content()
            for part in message.iter_parts()
        }
        channels = engines.read_wav(fields["file"])
        if "language" not in fields:  # asked which language is spoken
            return {"language": self.spoken, "text": "...", "segments": []}
        # The engine sends the agent's channel first, then the lead's 4 s later in the call.
        self.transcribed += 1
        side, at = ("agent", 0) if self.transcribed % 2 else ("lead", 4)
        return {
            "task": "transcribe",
            "language": self.spoken,
            "duration": channels.seconds,
            "text": "...",
            "segments": [
                {
                    "id": 0,
                    "start": at + 0.5,
                    "end": at + 2,
                    "text": f" Hi from {side}.",
                },
                {"id": 1, "start": at + 2.4, "end": at + 3, "text": " Still me."},
                {"id": 2, "start": at + 9, "end": at + 10, "text": f" {side} again?"},
            ],
            "fields": {k: v for k, v in fields.items() if k != "file"},
        }

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake():
    server = OpenAIFake()
    yield server
    server.stop()


def test_the_remote_engine_posts_each_channel_and_reads_verbose_json(fake, settings):
    settings.TRANSCRIPTION_BACKEND = "remote"
    settings.TRANSCRIPTION_REMOTE_URL = fake.url
    settings.TRANSCRIPTION_REMOTE_KEY = "sk-test"
    settings.TRANSCRIPTION_REMOTE_MODEL = "whisper-1"
    engine = engines.engine_for_settings()
    assert engine is not None

    segments = engine.transcribe(np.zeros(16_000 * 12, "float32"))

    assert segments == [
        engines.Segment(0.5, 2.0, "Hi from agent."),
        engines.Segment(2.4, 3.0, "Still me."),
        engines.Segment(9.0, 10.0, "agent again?"),
    ]
    (sent,) = fake.requests
    assert sent["path"] == "/v1/audio/transcriptions"
    assert sent["headers"]["Authorization"] == "Bearer sk-test"
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {sent['headers']['Content-Type']}\r\n\r\n".encode()
        + sent["body"]
    )
    fields = {
        part.get_param("name", header="content-disposition"): part.get_content()
        for part in message.iter_parts()
    }
    assert fields["model"] == "whisper-1"
    assert fields["response_format"] == "verbose_json"
    assert fields["timestamp_granularities[]"] == "segment"
    assert engines.read_wav(fields["file"]).seconds == pytest.approx(12)


def test_the_remote_engine_sends_the_calls_context_as_the_prompt(fake):
    engine = RemoteEngine(url=fake.url, key="", model="whisper-1")
    context = Context(names=("Siobhan Kelly", "Wojciech Nowak"), vehicles=("CR-V",))

    engine.transcribe(np.zeros(16_000, "float32"), context=context)
    engine.transcribe(np.zeros(16_000, "float32"))

    prompts = []
    for sent in fake.requests:
        message = BytesParser(policy=HTTP).parsebytes(
            f"Content-Type: {sent['headers']['Content-Type']}\r\n\r\n".encode()
            + sent["body"]
        )
        names = [
            p.get_param("name", header="content-disposition")
            for p in message.iter_parts()
        ]
        prompts.append(
            next(
                (
                    p.get_content()
                    for p in message.iter_parts()
                    if p.get_param("name", header="content-disposition") == "prompt"
                ),
                None,
            )
        )
        assert "file" in names
    assert prompts == ["Siobhan Kelly, Wojciech Nowak, CR-V", None]


def fields_of(sent):
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {sent['headers']['Content-Type']}\r\n\r\n".encode()
        + sent["body"]
    )
    return {
        part.get_param("name", header="content-disposition"): part.get_content()
        for part in message.iter_parts()
    }


def test_the_remote_engine_asks_the_server_which_language_a_channel_speaks(fake):
    engine = RemoteEngine(url=fake.url, key="", model="whisper-1")
    minute = np.zeros(16_000 * 60, "float32")
    fake.spoken = "spanish"

    assert engine.language_of(minute, languages=["en", "es"]) == "es"
    (asked,) = fake.requests
    fields = fields_of(asked)
    assert "language" not in fields
    # The first 30 seconds are enough to tell.
    assert engines.read_wav(fields["file"]).seconds == pytest.approx(30)

    fake.spoken = "es"  # a server answering codes
    assert engine.language_of(minute, languages=["en", "es"]) == "es"
    fake.spoken = "german"  # not a configured language: the dealer's
    assert engine.language_of(minute, languages=["en", "es"]) == "en"
    asked_so_far = len(fake.requests)
    assert engine.language_of(minute, languages=["en"]) == "en"
    assert len(fake.requests) == asked_so_far  # one language: nothing to ask

    engine.transcribe(minute, language="es")
    assert fields_of(fake.requests[-1])["language"] == "es"


def test_a_remote_server_error_is_transient_and_a_refusal_permanent(fake, settings):
    engine = RemoteEngine(url=fake.url, key="", model="whisper-1")
    audio = np.zeros(16_000, "float32")
    fake.status = 503
    with pytest.raises(engines.TransientError):
        engine.transcribe(audio)
    fake.status = 401
    with pytest.raises(engines.PermanentError):
        engine.transcribe(audio)
    nobody = RemoteEngine(url="http://127.0.0.1:9", key="", model="m")
    with pytest.raises(engines.TransientError):
        nobody.transcribe(audio)


def test_a_call_transcribed_by_the_remote_engine_joins_close_segments(
    fake, settings, call
):
    settings.TRANSCRIPTION_BACKEND = "remote"
    settings.TRANSCRIPTION_REMOTE_URL = fake.url
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = fake.url
    settings.SUMMARY_MODEL = "gpt-test"
    settings.SUMMARY_KEY = "sk-sum"
    record(call)
    Transcription.objects.create(call=call)

    job = transcription_run(call_id=call.pk)

    assert job is not None
    assert job.status == TranscriptionStatus.DONE
    assert job.engine == "remote"
    call.refresh_from_db()
    assert call.transcription.split("\n") == [
        "Alex Kim (00:00-00:03): Hi from agent. Still me.",
        "Sam Rivera (00:04-00:07): Hi from lead. Still me.",
        "Alex Kim (00:09-00:10): agent again?",
        "Sam Rivera (00:13-00:14): lead again?",
    ]
    assert call.summary == "Sam called."
    assert job.summary_evidence == [{"sentence": "Sam called.", "lines": []}]
    chat = json.loads(fake.requests[-1]["body"])
    assert fake.requests[-1]["path"] == "/v1/chat/completions"
    assert chat["model"] == "gpt-test"
    assert "Alex Kim (00:00-00:03)" in chat["messages"][-1]["content"]


def test_a_failing_summary_server_falls_back_to_the_builtin_summary(
    fake, settings, call
):
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = fake.url
    fake.status = 500
    turns = [{"side": "lead", "start": 0, "end": 1, "text": "Hi"}]
    assert summary_write(call=call, turns=turns, transcript="x") == builtin_written(
        call=call, turns=turns
    )


def turn(side, start, text):
    return {"side": side, "start": start, "end": start + 1, "text": text}


RESCHEDULED = [
    turn(
        "agent", 0, "Hi Sam, it's Alex at Demo Motors. You were looking at the RAV 4?"
    ),
    turn("lead", 2, "Yes. Does it come in blue?"),
    turn("agent", 4, "It does, in two shades. Are you trading anything in?"),
    turn("lead", 6, "No, I don't have a trade."),
    turn("agent", 8, "Can you come in Thursday at two thirty for a test drive?"),
    turn("lead", 10, "Thursday is bad. Could we do Friday at half past four instead?"),
    turn("agent", 12, "Sure, I have you down for Friday at half past four."),
]


def test_the_openai_summariser_is_sent_the_facts_with_their_lines(fake, settings, call):
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = fake.url
    fake.answer = (
        "Sam spoke with Alex about the RAV4 and booked a test drive for Friday."
    )

    written = summary_write(call=call, turns=RESCHEDULED, transcript="the lines")

    assert written.text == fake.answer
    asked = json.loads(fake.requests[-1]["body"])["messages"]
    assert "State only the facts listed" in asked[0]["content"]
    assert asked[1]["content"].startswith(
        "Facts:\n- Sam Rivera spoke with Alex Kim about the Toyota RAV4, with no trade-in."
        " (lines 1, 4)\n- A test drive was set for Friday, "
    )
    assert "\n\nTranscript:\nthe lines" in asked[1]["content"]
    assert written.evidence == [{"sentence": fake.answer, "lines": [0, 3, 5, 6]}]


@pytest.mark.parametrize(
    "answer",
    [
        "Sam booked a test drive for Thursday at 2:30 PM.",  # the cancelled day
        "No appointment was set.",
        "Sam will come in on Monday.",
    ],
)
def test_an_openai_summary_stating_what_the_facts_do_not_hold_is_not_used(
    fake, settings, call, answer
):
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = fake.url
    fake.answer = answer
    written = summary_write(call=call, turns=RESCHEDULED, transcript="x")
    assert written == builtin_written(call=call, turns=RESCHEDULED)


def test_the_openai_summariser_is_not_asked_about_a_voicemail(fake, settings, call):
    settings.SUMMARY_BACKEND = "openai"
    settings.SUMMARY_URL = fake.url
    voicemail = [
        turn("lead", 0, "You've reached Sam, please leave a message after the tone."),
        turn(
            "agent", 3, "Hi Sam, Alex from Demo Motors, call me back when you get this."
        ),
    ]
    written = summary_write(call=call, turns=voicemail, transcript="x")
    assert written.text == "Voicemail: Alex Kim left a message."
    assert written.evidence == [
        {"sentence": "Voicemail: Alex Kim left a message.", "lines": [0, 1]}
    ]
    assert fake.requests == []


def test_the_builtin_summary_tells_what_was_said_not_what_the_form_says(call):
    summary = builtin_written(call=call, turns=RESCHEDULED)
    assert summary.text == (
        "Sam Rivera spoke with Alex Kim about the Toyota RAV4, with no trade-in. "
        "A test drive was set for Friday, "
        f"{_friday_after(call):%B} {_friday_after(call).day} at 4:30 PM."
    )
    assert [item["lines"] for item in summary.evidence] == [[0, 3], [5, 6]]
    callback = builtin_summary(
        call=call,
        turns=[
            turn("lead", 0, "I'm driving, can you call me back tomorrow?"),
            turn("agent", 1, "Of course, I will call you back tomorrow."),
        ],
    )
    assert callback.startswith(
        "Sam Rivera spoke with Alex Kim. The lead asked to be called back on "
    )
    refused = builtin_summary(
        call=call, turns=[turn("lead", 0, "No thanks, I am not interested any more.")]
    )
    assert refused == (
        "Sam Rivera spoke with Alex Kim. The lead said they were not interested."
    )


def _friday_after(call):
    from datetime import timedelta
    from zoneinfo import ZoneInfo

    day = call.received_at.astimezone(ZoneInfo(call.account.timezone)).date()
    ahead = (4 - day.weekday()) % 7 or 7
    return day + timedelta(days=ahead)


def test_transcribe_calls_transcribes_recorded_calls_with_progress(
    whisper, account, call
):
    record(call)
    other_account = CallFactory()  # another account's call, left out with --account
    transcribed = CallFactory(account=account, agent=call.agent)
    record(transcribed, seed=11)
    Transcription.objects.create(call=transcribed, status=TranscriptionStatus.DONE)
    err, out = io.StringIO(), io.StringIO()

    call_command("transcribe_calls", account=account.pk, stdout=out, stderr=err)

    assert Transcription.objects.get(call=call).status == TranscriptionStatus.DONE
    assert "Toyota" in Call.objects.get(pk=call.pk).transcription
    assert not Call.objects.get(pk=transcribed.pk).transcription  # done: left alone
    assert not Transcription.objects.filter(call=other_account).exists()
    assert "Transcribing" in err.getvalue()
    assert "1/1" in err.getvalue()
    assert out.getvalue().startswith("1 calls: 1 transcribed, 0 failed")

    out = io.StringIO()
    call_command(
        "transcribe_calls", again=True, limit=1, stdout=out, stderr=io.StringIO()
    )
    assert out.getvalue().startswith("1 calls: 1 transcribed")
