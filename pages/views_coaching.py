"""The coaching pages: the managers' coaching queue, and the agent's own page (their unread
coaching first, then their trends). Reads through scoring/coaching.py, scoped there."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_safe

from scoring.coaching import (
    COACHED_SHOWN,
    LOW_SCORE_PERCENT,
    QUEUE_SHOWN,
    TREND_WEEKS,
    agent_trends,
    coaching_given,
    coaching_queue,
    coaching_read,
    coaching_unread,
)
from scoring.selectors import roles_of
from users.models import User


def _user(request: HttpRequest) -> User:
    return request.user  # type: ignore[return-value]


@login_required
@require_safe
def coaching(request: HttpRequest) -> HttpResponse:
    """Scored calls worth coaching and not coached yet, oldest first; then the coaching
    given lately and whether each agent has read it."""
    user = _user(request)
    if not roles_of(user).manager:
        raise PermissionDenied("Coaching is for managers.")
    queue = coaching_queue(user=user)
    shown = list(queue[:QUEUE_SHOWN])
    context = {
        "section": "coaching",
        "queue": shown,
        "queue_total": len(shown) if len(shown) < QUEUE_SHOWN else queue.count(),
        "given": coaching_given(user=user)[:COACHED_SHOWN],
        "low_percent": LOW_SCORE_PERCENT,
    }
    return render(request, "pages/coaching.html", context)


@login_required
@require_safe
def agent_home(request: HttpRequest) -> HttpResponse:
    """The agent's own page: coaching not read yet, the coaching read lately, and their
    average score and response time per week."""
    agent = _user(request)
    context = {
        "section": "mine",
        "unread": list(coaching_unread(agent=agent)),
        "read": coaching_read(agent=agent)[:10],
        "trends": agent_trends(agent=agent, today=timezone.localdate()),
        "weeks": TREND_WEEKS,
    }
    return render(request, "pages/agent_home.html", context)
