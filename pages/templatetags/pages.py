"""Small helpers of the pages' templates."""

from __future__ import annotations

from typing import Any

from django import template
from django.core.exceptions import ObjectDoesNotExist
from django.utils.html import format_html

from providers.clock import time_scale
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


@register.simple_tag
def simulated_clock(attempts: Any) -> str:
    """Where the simulator runs faster or slower than real time (``make run`` plays it at
    ``SIMULATOR_TIME_SCALE=0.1``), a simulated call's clock times are real while its
    durations and recording are simulated seconds: said under its timeline, so the
    three tell one story."""
    scale = time_scale()
    if scale == 1 or not any(a.provider == "simulator" for a in attempts):
        return ""
    pace = f"{1 / scale:g} times faster" if scale < 1 else f"{scale:g} times slower"
    return (
        f"A simulated call, played {pace} than real time: the times are the real clock's, "
        "the durations and the recording are in simulated seconds."
    )


@register.filter
def value_ticks(bars: list[Bar]) -> list[dict[str, float]]:
    """The value axis of a chart of ``bars``: each gridline's value and its height on
    the bars' scale (0..100), the axis' top being the height of 100."""
    axis = value_axis(max((bar.value for bar in bars), default=0))
    return [{"value": value, "height": 100 * value / axis[-1]} for value in axis]


@register.filter
def fraction(value: float | None) -> str:
    """A share from 0 to 1 as a whole percent ("—" where there is none)."""
    return "—" if value is None else f"{value * 100:.0f}%"
