"""What every page's layout needs: the signed-in user's roles, for the navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from scoring.selectors import roles_of


def pages(request: HttpRequest) -> dict[str, Any]:
    # Lazy: the admin and the APIs never read it, so they never pay its query.
    return {"roles": SimpleLazyObject(lambda: roles_of(request.user))}  # type: ignore[arg-type]
