"""The messages waiting in one of the test's broker queues (its own Redis db), read back as
Celery wrote them: what the sweeps' tests count, instead of trusting what was meant to be
published."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from config.celery import app

TRANSCRIPTION = "transcription"


@dataclass(frozen=True)
class Message:
    task: str
    kwargs: dict[str, Any]
    timelimit: tuple[int | None, int | None]  # hard, soft (Celery's header order)


def _keys(channel: Any, queue: str) -> list[str]:
    return [channel._q_for_pri(queue, pri) for pri in channel.priority_steps]


def _message(raw: bytes) -> Message:
    payload = json.loads(raw)
    _, kwargs, _ = json.loads(base64.b64decode(payload["body"]))
    headers = payload["headers"]
    hard, soft = headers.get("timelimit") or (None, None)
    return Message(headers["task"], kwargs, (hard, soft))


def waiting(queue: str = TRANSCRIPTION) -> list[Message]:
    """Every message in ``queue``, in no particular order."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        return [
            _message(raw)
            for key in _keys(channel, queue)
            for raw in channel.client.lrange(key, 0, -1)
        ]


def taken(queue: str = TRANSCRIPTION) -> Message | None:
    """The next message of ``queue``, taken off it as a worker takes one (None if empty)."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        for key in _keys(channel, queue):
            raw = channel.client.rpop(key)
            if raw is not None:
                return _message(raw)
    return None


def emptied(queue: str = TRANSCRIPTION) -> None:
    """Drop every message in ``queue`` (as a broker that lost what it held)."""
    with app.connection_for_write() as connection:
        channel = connection.default_channel
        channel.client.delete(*_keys(channel, queue))


@pytest.fixture
def transcription_queue() -> Iterator[Any]:
    """The test's ``transcription`` queue, empty at the start and emptied at the end."""
    emptied()
    yield waiting
    emptied()
