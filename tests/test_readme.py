"""The shell blocks of the README and of every document beside it (CONTRIBUTING.md, docs/)
run as written, in order, against a live server (gunicorn and a Celery worker on the test
database, seeded by seed_demo as `make run` seeds), and every request answers what the
document says it answers. Each document runs in a shell and on a server of its own.

The one substitution is the server's port (``localhost:8000``). A block is skipped only
when the line before it says ``<!-- readme-test: skip (why) -->``. A comment line
``# NNN ...`` documents the answer of one curl in its block, in order: NNN is the status
and what follows, when given, the body: JSON members that must be present with those
values (a number stands for any number: ids and counts differ between runs), or text
that must match the body with white space collapsed.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from calls.models import Call, CallAttempt, CallOrigin, CallStatus
from config.celery import app
from leads.models import Lead
from tests.processes import (
    ROOT,
    free_port,
    service_env,
    start_gunicorn,
    start_worker,
    wait_for,
)
from texting.models import Direction, Purpose, Text

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FENCE = re.compile(r"^```(\S*)\s*$")
SKIP = re.compile(r"^<!-- readme-test: skip \(.+\) -->$")
ANSWER = re.compile(r"^\s*#\s*(\d{3})(?:\s+(.*?))?\s*$")
DOCUMENTED_BASE = "localhost:8000"

# Every document with shell blocks: how many of them are marked to skip, and at least how
# many run.
DOCUMENTS = {
    # `make run` itself and the appointment walkthrough (a command beside it); the demo
    # and each interface's blocks run
    "README.md": (2, 5),
    "CONTRIBUTING.md": (1, 0),  # a contributor's test run
    # the appointments and consent endpoints: the README runs them
    "docs/integrators-guide.md": (2, 4),
    "docs/operations.md": (
        2,
        0,
    ),  # the production set-up and Sentinel, with placeholders
    "docs/crm-and-alerts.md": (1, 0),  # `make run` with a mail catcher
    # the GPU worker, transcribing every past call, the engine's check on its host,
    # the evaluation set's measure, and understanding a recording or a labelled set
    "docs/transcription.md": (6, 0),
}

# Every curl of a block goes through this function: it keeps each answer's status and body
# (numbered in order, under the block's number) and passes the body on, so pipes still work.
CURL_RECORDER = r"""
curl() {
  _n=$(ls "$README_CALLS" | grep -c '\.status$' || true)
  _f="$README_CALLS/$(printf '%02d-%03d' "$README_BLOCK" "$_n")"
  command curl -o "$_f.body" -w '%{http_code}' "$@" > "$_f.status" || return $?
  cat "$_f.body"
}
"""


@dataclass(frozen=True)
class Block:
    number: int
    line: int  # where it starts in its file, for messages
    shell: str  # "sh" or "bash"
    text: str

    def answers(self) -> list[tuple[str, str]]:
        """The documented (status, body) of each curl, in order."""
        return [
            (found.group(1), found.group(2) or "")
            for found in map(ANSWER.match, self.text.splitlines())
            if found
        ]


def shell_blocks(path: Path) -> tuple[list[Block], list[int]]:
    """The file's sh and bash blocks to run, and the lines of the ones marked to skip."""
    blocks: list[Block] = []
    skipped: list[int] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening or not opening.group(1):
            index += 1
            continue
        end = next(
            i for i in range(index + 1, len(lines)) if lines[i].startswith("```")
        )
        if opening.group(1) in ("sh", "bash", "shell", "console"):
            assert opening.group(1) in ("sh", "bash"), (
                f"{path.name}:{index + 1}: mark shell blocks sh (POSIX) or bash"
            )
            previous = lines[index - 1] if index else ""
            if SKIP.match(previous):
                skipped.append(index + 1)
            else:
                blocks.append(
                    Block(
                        number=len(blocks),
                        line=index + 1,
                        shell=opening.group(1),
                        text="\n".join(lines[index + 1 : end]),
                    )
                )
        index = end + 1
    return blocks, skipped


def subset(documented: Any, actual: Any) -> bool:
    """Whether ``actual`` holds what ``documented`` shows (see the module's docstring)."""
    if isinstance(documented, dict):
        return isinstance(actual, dict) and all(
            key in actual and subset(value, actual[key])
            for key, value in documented.items()
        )
    if isinstance(documented, list):
        return (
            isinstance(actual, list)
            and len(documented) == len(actual)
            and all(map(subset, documented, actual))
        )
    if documented is None or isinstance(documented, bool):
        return actual is documented
    if isinstance(documented, int | float):
        return isinstance(actual, int | float) and not isinstance(actual, bool)
    return documented == actual


def body_matches(documented: str, body: str) -> bool:
    if not documented:
        return True
    try:
        shown = json.loads(documented)
    except ValueError:
        return " ".join(documented.split()) == " ".join(body.split())
    try:
        return subset(shown, json.loads(body))
    except ValueError:
        return False


def run_blocks(
    blocks: list[Block], *, port: int, cwd: Path, calls: Path
) -> subprocess.CompletedProcess[str]:
    """Run the blocks in order in one shell, as a reader pastes them; stops at the first
    failing command (``set -e``). bash runs the whole script when any block is bash."""
    shell = "bash" if any(block.shell == "bash" for block in blocks) else "sh"
    script = ["set -e", CURL_RECORDER]
    for block in blocks:
        script += [
            f"README_BLOCK={block.number}",
            block.text.replace(DOCUMENTED_BASE, f"localhost:{port}"),
            f'echo "@@ block {block.number} done"',
        ]
    calls.mkdir()
    return subprocess.run(
        [shell],
        input="\n".join(script) + "\n",
        cwd=cwd,
        env={**service_env(), "README_CALLS": str(calls)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def check_answers(
    name: str, blocks: list[Block], run: subprocess.CompletedProcess[str], calls: Path
) -> None:
    done = {int(n) for n in re.findall(r"^@@ block (\d+) done$", run.stdout, re.M)}
    for block in blocks:
        assert block.number in done, (
            f"{name}:{block.line}: the block failed (exit {run.returncode})\n"
            f"{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
        )
        answered = [
            (path.read_text(), path.with_suffix(".body").read_text())
            for path in sorted(calls.glob(f"{block.number:02d}-*.status"))
        ]
        documented = block.answers()
        assert len(answered) == len(documented), (
            f"{name}:{block.line}: {len(answered)} requests, {len(documented)} "
            f"documented answers (a '# NNN' comment under each curl)"
        )
        for (status, body), (want_status, want_body) in zip(
            answered, documented, strict=True
        ):
            said = (
                f"{name}:{block.line}: answered {status} {body[:600]}\n"
                f"documented {want_status} {want_body}"
            )
            assert status == want_status, said
            assert body_matches(want_body, body), said


def call_states(calls: Any) -> list[Any]:
    return [
        (
            call.pk,
            call.status,
            call.attempts,
            call.next_attempt_at,
            [
                (a.leg, a.agent_id, a.outcome, a.ended_at)
                for a in call.attempts_log.all()
            ],
        )
        for call in calls
    ]


@pytest.fixture
def live(tmp_path):
    """The server a reader has after `make run`: demo data, var/demo.env, gunicorn and a
    worker with the scheduler; returns the port and the folder commands run in."""
    call_command(
        "seed_demo",
        "--env-file",
        str(tmp_path / "var" / "demo.env"),
        stdout=StringIO(),
        stderr=StringIO(),
    )
    app.control.purge()
    port = free_port()
    # As `make run`: speech in the simulator's calls, and the shipped model transcribing
    # them (the worker takes every queue, `transcription` included).
    env = service_env(SIMULATOR_SPEECH="1", TRANSCRIPTION_BACKEND="faster_whisper")
    worker = start_worker(tmp_path, env=env, beat=True)
    web = start_gunicorn(tmp_path, env=env, port=port)
    yield port, tmp_path
    web.stop()
    worker.stop()


def documents() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        *sorted((ROOT / "docs").rglob("*.md")),
    ]


def test_every_document_with_shell_blocks_is_run():
    """A new document's shell blocks run (or say why not) once it is listed in DOCUMENTS."""
    with_blocks = set()
    for path in documents():
        blocks, skipped = shell_blocks(path)
        if blocks or skipped:
            with_blocks.add(str(path.relative_to(ROOT)))
    assert with_blocks == set(DOCUMENTS)


@pytest.mark.parametrize("document", DOCUMENTS)
def test_document_blocks_run_as_written_and_answer_as_documented(document, request):
    blocks, skipped = shell_blocks(ROOT / document)
    skips, at_least = DOCUMENTS[document]
    assert len(skipped) == skips, (document, skipped)
    assert len(blocks) >= at_least, document
    if not blocks:
        return
    port, folder = request.getfixturevalue("live")

    run = run_blocks(blocks, port=port, cwd=folder, calls=folder / "calls")

    check_answers(document, blocks, run, folder / "calls")
    if document == "README.md":
        the_demo_happened()


def the_demo_happened() -> None:
    """What the README's demo says happens after its blocks: the calls and the texts."""
    # The demo's calls happen: the lead is answered, the busy lead is dialed three times
    # on the (scaled) cadence and ends BUSY, the click-to-call call is set up.
    leads = list(Lead.objects.exclude(call=None).order_by("pk"))
    assert len(leads) == 2, leads
    first, busy = (lead.call for lead in leads)
    assert first is not None  # the leads were picked for having a call
    assert busy is not None
    click = Call.objects.filter(origin=CallOrigin.CLICK_TO_CALL).latest("pk")
    demo_calls = Call.objects.filter(pk__in=[first.pk, busy.pk, click.pk])
    try:
        wait_for(
            lambda: (
                demo_calls.filter(status__in=[CallStatus.ANSWER, CallStatus.BUSY])
                .exclude(ended_at=None)
                .count()
                == 3
            ),
            timeout=120,
            what="the demo's calls to end",
        )
    except AssertionError as error:
        raise AssertionError(f"{error}: {call_states(demo_calls)}") from None
    first.refresh_from_db()
    busy.refresh_from_db()
    click.refresh_from_db()
    assert (first.status, first.attempts) == (CallStatus.ANSWER, 1)
    assert (busy.status, busy.attempts) == (CallStatus.BUSY, 3)
    assert click.status == CallStatus.ANSWER
    assert click.phone == "+13035550177"
    # docs/texting.md (and the README's "Texting the lead"): the busy lead is texted,
    # answers "Call me please", the reply reaches the agent who took the call, and a new
    # call is placed at once.
    wait_for(
        lambda: Text.objects.filter(
            lead_phone=busy.phone, direction=Direction.IN, queued_call__isnull=False
        ).exists(),
        timeout=60,
        what="the busy lead's reply to queue a call",
    )
    texts = Text.objects.filter(account=busy.account, lead_phone=busy.phone)
    texted = texts.get(call=busy, purpose=Purpose.NOT_REACHED)
    assert texted.body.startswith("Hi Sam, this is Demo Motors North.")
    assert texted.handed_at is not None
    reply = texts.get(direction=Direction.IN)
    assert (reply.call, reply.body) == (busy, "Call me please")
    assert reply.queued_call is not None
    assert reply.queued_call.origin == CallOrigin.TEXT_REPLY
    assert busy.agent is not None
    assert texts.filter(purpose=Purpose.FORWARD, recipient=busy.agent).exists()
    # The User API's example agent (Jane) is never on duty: no call rang her.
    assert not CallAttempt.objects.filter(number="+13035550123").exists()


def test_no_document_points_outside_the_repository():
    assert len(documents()) >= 3
    for document in documents():
        text = document.read_text()
        assert "../shared" not in text, document
        assert "/work/" not in text, document
        for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
            if not re.match(r"https?://", target):
                assert (document.parent / target).resolve().is_relative_to(ROOT)
                assert (document.parent / target).exists(), (document, target)
