"""Thin tasks: each calls a service and is safe to deliver twice."""

from __future__ import annotations

from celery import shared_task


@shared_task(acks_late=True)
def rollup_sweep_task() -> dict[str, int]:
    """Keep the dashboard's rollup in step: stale days computed again, ended days added."""
    from scoring.rollup_build import rollup_sweep

    return rollup_sweep()


@shared_task(acks_late=True)
def suggestions_learn_task() -> int:
    """Learn every account's suggestions from its scorers again (nightly); safe to run
    twice: each account's verdicts are replaced whole."""
    from scoring.learnt import suggesters_learn_all

    return suggesters_learn_all()
