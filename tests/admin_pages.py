"""Admin pages as a browser sees them: the form a page renders, posted as a browser would."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import lxml.html
from django.http import HttpResponse
from django.test import Client

if TYPE_CHECKING:
    from users.models import User


def form_data(response: HttpResponse, form_id: str) -> dict[str, list[str]]:
    """What a browser posts for the form ``form_id`` of the page, untouched: text as rendered,
    checked boxes only, and for a select its selected option or, with none selected, its first
    option (hidden inputs and the inlines' empty-form templates included, as a browser sends them)."""
    page = lxml.html.fromstring(response.content.decode())
    form = page.get_element_by_id(form_id)
    data: dict[str, list[str]] = {}
    for name, value in form.form_values():
        data.setdefault(name, []).append(value)
    # lxml leaves out an input without a value attribute; a browser sends it empty.
    for element in form.inputs:
        if (
            element.tag == "input"
            and element.name
            and element.name not in data
            and "disabled" not in element.attrib
            and not element.checkable
            and element.type not in ("submit", "image", "reset", "file")
        ):
            data[element.name] = [""]
    return data


def typed(
    data: dict[str, list[str]], fields: Mapping[str, str | None]
) -> dict[str, list[str]]:
    """``data`` with the named fields typed over or chosen, as a person would; ``None``
    unticks a checkbox (a browser sends nothing for it)."""
    changed = dict(data)
    for name, value in fields.items():
        if value is None:
            changed.pop(name, None)
        else:
            changed[name] = [value]
    return changed


def text_of(response: HttpResponse) -> str:
    """The page's visible text, white space collapsed: what a person reads."""
    page = lxml.html.fromstring(response.content.decode())
    for hidden in page.xpath("//script|//style|//*[contains(@class, 'empty-form')]"):
        hidden.drop_tree()
    return " ".join(page.text_content().split())


SUPPORT_PASSWORD = "Sup-port-7"


def sign_in_support(client: Client, *, tz: str = "America/Chicago") -> User:
    """Sign ``client`` in as support staff (``support_user``)."""
    user = support_user(tz=tz)
    client.force_login(user)
    return user


def support_user(*, tz: str = "America/Chicago") -> User:
    """Support staff: staff, not a superuser, with every permission of the service's apps,
    working in ``tz``; their password is ``SUPPORT_PASSWORD``."""
    from django.contrib.auth.models import Permission

    from users.models import User

    user = User.objects.create_user(
        username=f"support{User.objects.count()}@example.com",
        password=SUPPORT_PASSWORD,
        is_staff=True,
        timezone=tz,
    )
    user.user_permissions.set(
        Permission.objects.filter(
            content_type__app_label__in=[
                "accounts",
                "users",
                "leads",
                "calls",
                "webhooks",
                "insights",
                "core",  # the outbox's effects and the sweeps' items set aside
            ]
        )
    )
    return user
