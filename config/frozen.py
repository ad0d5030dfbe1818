"""What a worker process loads once, kept out of the garbage collector's way.

A web or Celery worker holds some 140,000 objects from start-up (Django, DRF, the apps'
modules, URL patterns, templates' caches) that live as long as it does. Python's full
collection walks every one of them: 60-300 ms on this machine, landing on whichever
request or task allocates at the wrong moment. ``gc.freeze()`` once start-up is over moves
them into a generation no collection visits; what requests allocate is collected as before.
"""

from __future__ import annotations

import gc


def load_then_freeze() -> None:
    """Import what the first request would (every view, through the URL patterns), then
    freeze everything alive: called once per worker process, after it has loaded the app."""
    from django.urls import get_resolver

    get_resolver().url_patterns  # noqa: B018  (importing the views is the point)
    gc.freeze()
