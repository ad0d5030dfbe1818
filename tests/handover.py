"""Hand-overs to the broker held back in a test: every outbox hands its rows over through
``core.handover.hand_over``, the one seam replaced here."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def hold_hand_overs(
    monkeypatch: pytest.MonkeyPatch,
    task: str,
    then: Callable[..., object] | None = None,
) -> None:
    """Hand-overs of ``task`` (its dotted name) are not sent, their rows not marked:
    ``then``, if given, is called instead with the task's keyword arguments and the
    hand-over's ``countdown``. Every other task is handed over as before."""
    from core import handover

    passed_on = handover.hand_over

    def hand_over(sent: Any, *, kwargs: dict[str, Any], **options: Any) -> bool:
        if sent.name != task:
            return passed_on(sent, kwargs=kwargs, **options)
        if then is not None:
            then(**kwargs, countdown=options.get("countdown"))
        return True

    monkeypatch.setattr(handover, "hand_over", hand_over)
