"""Cards that apps above scoring add to the call page: scoring never imports them (DESIGN.md:
lower apps never import higher ones), they register here when they start (``ready``).
Each panel is a callable ``(call, user) -> (template name, context)``, or None to show
nothing to that user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from calls.models import Call
from users.models import User

Panel = Callable[[Call, User], tuple[str, dict[str, Any]] | None]
CALL_PANELS: list[Panel] = []


def call_panels(*, call: Call, user: User) -> list[tuple[str, dict[str, Any]]]:
    """The registered panels' cards for ``user`` on ``call``'s page, in registration order."""
    return [card for panel in CALL_PANELS if (card := panel(call, user)) is not None]
