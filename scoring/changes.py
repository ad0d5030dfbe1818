"""A headline figure beside the same figure for the previous period: the change, its
direction and whether that direction is good, said in words as well as colour.

Counts change by a number, shares by percentage points, response times by seconds; a
change that rounds to nothing at the figure's precision is level.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from django.template.defaultfilters import pluralize

Kind = Literal["count", "percent", "seconds"]
# Which way is good: "up" (more is better), "down" (less is better), None (neither: more
# leads is not the agents' doing).
Better = Literal["up", "down"] | None

ARROWS = {"up": "▲", "down": "▼", "level": "▶"}


@dataclass(frozen=True)
class Headline:
    """One headline figure of the dashboard: its key in ``Figures.headline`` and how to read it."""

    key: str
    label: str
    kind: Kind
    better: Better


def _rounded(value: float, kind: Kind) -> float:
    return round(value, 1) if kind == "percent" else round(value)


def _text(value: float | None, kind: Kind) -> str:
    if value is None:
        return "—"
    if kind == "percent":
        return f"{value:.0f}%"
    if kind == "seconds":
        return f"{value:.0f} s"
    return f"{value:.0f}"


@dataclass(frozen=True)
class Change:
    """A figure now and in the previous period of the same length."""

    headline: Headline
    value: float | None
    previous: float | None

    @property
    def key(self) -> str:
        return self.headline.key

    @property
    def label(self) -> str:
        return self.headline.label

    @property
    def delta(self) -> float | None:
        """Now minus before, at the figure's precision (None when either is unknown)."""
        if self.value is None or self.previous is None:
            return None
        return _rounded(self.value - self.previous, self.headline.kind)

    @property
    def direction(self) -> Literal["up", "down", "level"] | None:
        delta = self.delta
        if delta is None:
            return None
        return "up" if delta > 0 else "down" if delta < 0 else "level"

    @property
    def verdict(self) -> Literal["better", "worse", "level", "neutral"] | None:
        """ "better" or "worse" by the figure's good direction; "neutral" when it has none."""
        direction = self.direction
        if direction is None:
            return None
        if direction == "level":
            return "level"
        if self.headline.better is None:
            return "neutral"
        return "better" if direction == self.headline.better else "worse"

    @property
    def arrow(self) -> str:
        return ARROWS.get(self.direction or "", "")

    @property
    def value_text(self) -> str:
        return _text(self.value, self.headline.kind)

    @property
    def previous_text(self) -> str:
        return _text(self.previous, self.headline.kind)

    @property
    def delta_text(self) -> str:
        """ "+3", "-2.5 pts" (a minus sign), "+12 s"; "no change"; "—" when there is nothing to compare."""
        delta = self.delta
        if delta is None:
            return "—"
        if delta == 0:
            return "no change"
        sign = "+" if delta > 0 else "\u2212"  # a minus sign
        size = abs(delta)
        if self.headline.kind == "percent":
            return f"{sign}{size:g} pt{pluralize(size)}"
        if self.headline.kind == "seconds":
            return f"{sign}{size:.0f} s"
        return f"{sign}{size:.0f}"

    @property
    def verdict_text(self) -> str:
        """The verdict in words, for those who do not see the colour."""
        return {
            "better": "better",
            "worse": "worse",
            "level": "level",
            "neutral": "neither better nor worse",
            None: "nothing to compare",
        }[self.verdict]

    @property
    def good_text(self) -> str:
        better = self.headline.better
        return (
            "higher is better"
            if better == "up"
            else "lower is better"
            if better == "down"
            else ""
        )
