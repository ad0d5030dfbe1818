"""What every page's layout needs: the signed-in user's roles, for the navigation, and for
an agent the count of coaching they have not read (the navigation's badge)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from scoring.selectors import Roles, roles_of


def pages(request: HttpRequest) -> dict[str, Any]:
    # Lazy: the admin and the APIs never read them, so they never pay their queries.
    roles = SimpleLazyObject(lambda: roles_of(request.user))  # type: ignore[arg-type]

    def unread() -> int:
        from scoring.coaching import coaching_unread_count

        held: Roles = roles  # type: ignore[assignment]
        if not held.agent:
            return 0
        return coaching_unread_count(agent=request.user)  # type: ignore[arg-type]

    return {"roles": roles, "unread_coaching": SimpleLazyObject(unread)}
