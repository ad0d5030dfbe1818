"""Small helpers of the pages' templates."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.exceptions import ObjectDoesNotExist
from django.utils.html import format_html

from scoring.figures import Bar, value_axis

register = template.Library()


@register.filter
def seconds(value: int | None) -> str:
    """95 -> "1:35"."""
    if value is None:
        return ""
    minutes, rest = divmod(int(value), 60)
    return f"{minutes}:{rest:02d}"


@register.filter
def score_of(call: Any) -> Any:
    """The call's score, or None (a reverse one-to-one raises when there is none)."""
    try:
        return call.score
    except ObjectDoesNotExist:
        return None


@register.filter
def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f}%"


@register.filter
def secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.0f} s"


@register.simple_tag(takes_context=True)
def sort_link(context: Any, key: str, label: str) -> str:
    """A column heading that sorts by ``key``; a second click reverses it."""
    request = context["request"]
    current = request.GET.get("sort", "")
    query = request.GET.copy()
    query.pop("page", None)
    query["sort"] = f"-{key}" if current == key else key
    arrow = " ▲" if current == key else " ▼" if current == f"-{key}" else ""
    return format_html('<a href="?{}">{}{}</a>', query.urlencode(), label, arrow)


@register.filter
def field(form: Any, name: str) -> Any:
    """``form|field:name``: a bound field by a name held in a variable."""
    return form[name]


@register.filter
def vehicle(form: Any, which: str) -> Any:
    return form.vehicle_fields(which)


@register.filter
def bar_y(height: float) -> str:
    """Where a bar of ``height`` (0..100) starts in a chart 110 units tall (labels below)."""
    return f"{110 - float(height):.1f}"


@register.filter
def value_ticks(bars: list[Bar]) -> list[dict[str, float]]:
    """The value axis of a chart of ``bars``: each gridline's value and its height on
    the bars' scale (0..100), the axis' top being the height of 100."""
    axis = value_axis(max((bar.value for bar in bars), default=0))
    return [{"value": value, "height": 100 * value / axis[-1]} for value in axis]
