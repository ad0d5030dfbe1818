"""What the admin pages of several apps share."""

from typing import Any

from django.http import HttpRequest


class ReadOnlyAdminMixin:
    """Rows that a workflow owns (leads, calls): support looks, and acts only through actions."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
