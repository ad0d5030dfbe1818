"""Log lines a machine can read: one event per line, as ``key=value`` pairs or as JSON.

``LOG_FORMAT`` (environment) picks the format of every line the service writes:

``kv`` (default)::

    time=2025-01-02T03:04:05.678Z level=INFO logger=calls.services event=call.answered call_id=12 response_time=7

``json``::

    {"time": "2025-01-02T03:04:05.678Z", "level": "INFO", "logger": "calls.services", "event": "call.answered", "call_id": 12, "response_time": 7}

Code logs an event with ``log_event(log, "call.answered", call_id=..., ...)``. A record
that is not an event (Django's, Celery's, a plain ``log.warning``) carries its text in
``message``; an exception's traceback is in ``exc``. Lines written inside a Celery task
also carry ``task`` and ``task_id``, and lines inside ``with log_context(...)`` its
fields. In ``kv``, a value with a space, quote, ``=``, backslash or control character,
or an empty one, is written as a JSON string (``reason="No active account found!"``);
``None`` is written as nothing (``agent_id=``).

Personal data stays out: pass ids, never a name, an email, a key or the document, and
pass phone numbers through ``mask_phone``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from django.db import transaction

FORMATS = ("kv", "json")
# Names a line always has; an event field of the same name is dropped.
_FIXED = ("time", "level", "logger", "event")
# A kv value written as is: no white space, quote, "=", backslash or control character.
_BARE = re.compile(r'[^\s"=\\\x00-\x1f\x7f]+')
_context: ContextVar[Mapping[str, Any]] = ContextVar(
    "log_context", default=MappingProxyType({})
)


def log_event(
    logger: logging.Logger, event: str, *, level: int = logging.INFO, **fields: Any
) -> None:
    """Log one event of a call's or a lead's life: a dotted name and its fields."""
    if logger.isEnabledFor(level):
        # The context is taken now: a handler may format the record later, elsewhere.
        context = {**_context.get(), **_task()}
        extra = {"event": event, "event_fields": fields, "log_context": context}
        logger.log(level, event, extra=extra)


def log_event_on_commit(logger: logging.Logger, event: str, **fields: Any) -> None:
    """``log_event`` once the caller's transaction commits: a rolled-back step never
    happened, so it is never logged."""
    transaction.on_commit(lambda: log_event(logger, event, **fields), robust=True)


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add ``fields`` to every line logged inside the block (in this thread or task)."""
    token = _context.set({**_context.get(), **fields})
    try:
        yield
    finally:
        _context.reset(token)


def mask_phone(number: str) -> str:
    """A phone number with all but its last four digits hidden: ``***0147``."""
    digits = [c for c in number if c.isdigit()]
    return "***" + "".join(digits[-4:]) if len(digits) > 4 else "***"


class EventFormatter(logging.Formatter):
    """Writes each record as one ``kv`` or ``json`` line (see the module docstring)."""

    def __init__(self, *args: Any, log_format: str = "kv", **kwargs: Any) -> None:
        if log_format not in FORMATS:
            raise ValueError(
                f"LOG_FORMAT must be one of {', '.join(FORMATS)}, not {log_format!r}."
            )
        super().__init__(*args, **kwargs)
        self.log_format = log_format

    def format(self, record: logging.LogRecord) -> str:
        fields = self.fields(record)
        if self.log_format == "json":
            return json.dumps(fields, ensure_ascii=False, default=str)
        return " ".join(f"{key}={_kv_value(value)}" for key, value in fields.items())

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        """The line's names and values, in order: time, level, logger, event, the rest."""
        moment = datetime.fromtimestamp(record.created, UTC)
        fields: dict[str, Any] = {
            "time": f"{moment:%Y-%m-%dT%H:%M:%S}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
        }
        event = getattr(record, "event", None)
        if event is not None:
            fields["event"] = event
            fields.update(
                (key, value)
                for key, value in getattr(record, "event_fields", {}).items()
                if key not in _FIXED
            )
        else:
            fields["message"] = record.getMessage()
        context = getattr(record, "log_context", None)
        if context is None:
            context = {**_context.get(), **_task()}
        for key, value in context.items():
            fields.setdefault(key, value)
        if record.exc_info:
            fields["exc"] = self.formatException(record.exc_info)
        elif record.exc_text:
            fields["exc"] = record.exc_text
        if record.stack_info:
            fields["stack"] = self.formatStack(record.stack_info)
        return fields


def _kv_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    if _BARE.fullmatch(text):
        return text
    return json.dumps(text, ensure_ascii=False)


def _task() -> dict[str, Any]:
    """The Celery task this line is written in, if any."""
    from celery._state import get_current_task

    task = get_current_task()
    if task is None or task.request.id is None:
        return {}
    return {"task": task.name, "task_id": task.request.id}
