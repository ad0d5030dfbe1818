"""A headline figure's change in words: shares change by percentage points, one of them
"1 pt", more "pts"."""

from __future__ import annotations

import pytest

from scoring.changes import Change, Headline

RATE = Headline("answer_rate", "Answer rate", "percent", "up")


@pytest.mark.parametrize(
    ("now", "before", "text"),
    [
        (51.0, 50.0, "+1 pt"),
        (49.0, 50.0, "\u22121 pt"),
        (52.5, 50.0, "+2.5 pts"),
        (50.4, 50.0, "+0.4 pts"),
    ],
)
def test_a_share_changes_by_1_pt_or_by_pts(now, before, text):
    assert Change(RATE, now, before).delta_text == text
