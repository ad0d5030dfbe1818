"""The scheduler's entries (Celery beat, run by the ``worker`` process with -B) and the
sweeps every worker sends when it connects to the broker again: read by
config/settings/base.py."""

from datetime import timedelta

import environ
from celery.schedules import crontab

env = environ.Env()

CELERY_BEAT_SCHEDULE = {
    "calls-sweep": {
        "task": "calls.tasks.calls_sweep_task",
        "schedule": timedelta(seconds=env.float("CALLS_SWEEP_SECONDS", default=10)),
    },
    # Schedules open on the minute: agents coming on duty are handed waiting calls then,
    # not at the next sweep.
    "calls-hand-over-at-openings": {
        "task": "calls.tasks.calls_hand_over_task",
        "schedule": crontab(minute="*"),
    },
    "leads-sweep": {
        "task": "leads.tasks.leads_sweep_task",
        "schedule": timedelta(seconds=env.float("LEADS_SWEEP_SECONDS", default=30)),
    },
    "webhooks-sweep": {
        "task": "webhooks.tasks.webhooks_sweep_task",
        "schedule": timedelta(seconds=env.float("WEBHOOKS_SWEEP_SECONDS", default=10)),
        "options": {"queue": "webhooks"},
    },
    "webhook-events-prune": {
        "task": "webhooks.tasks.webhook_events_prune_task",
        "schedule": timedelta(hours=1),
        "options": {"queue": "webhooks"},
    },
    "texts-sweep": {
        "task": "texting.tasks.texts_sweep_task",
        "schedule": timedelta(seconds=env.float("TEXTS_SWEEP_SECONDS", default=10)),
    },
    "messages-sweep": {
        "task": "notify.tasks.messages_sweep_task",
        "schedule": timedelta(seconds=env.float("MESSAGES_SWEEP_SECONDS", default=10)),
    },
    # E-mails to leads due (a retry, a cadence's later step) or never handed over.
    "lead-emails-sweep": {
        "task": "emails.tasks.lead_emails_sweep_task",
        "schedule": timedelta(
            seconds=env.float("LEAD_EMAILS_SWEEP_SECONDS", default=10)
        ),
    },
    # Side effects (write-backs, alerts, texts, suggestions: core.outbox) the broker never
    # got, or whose hand-over was lost.
    "effects-sweep": {
        "task": "core.tasks.effects_sweep_task",
        "schedule": timedelta(seconds=env.float("EFFECTS_SWEEP_SECONDS", default=10)),
    },
    # Leads waiting for an agent too long, agents missing offers in a row; reports due.
    "alerts-sweep": {
        "task": "notify.tasks.alerts_sweep_task",
        "schedule": timedelta(seconds=env.float("ALERTS_SWEEP_SECONDS", default=30)),
    },
    # Handoffs open past their account's limit: escalated to the managers, once each.
    "handoffs-sweep": {
        "task": "handoffs.tasks.handoffs_sweep_task",
        "schedule": timedelta(seconds=env.float("HANDOFFS_SWEEP_SECONDS", default=60)),
    },
    # Morning reports: at 07:00 in each manager's timezone, looked for every 5 minutes.
    "reports-due": {
        "task": "notify.tasks.reports_due_task",
        "schedule": timedelta(minutes=5),
    },
    "insights-sweep": {
        "task": "insights.tasks.insights_sweep_task",
        "schedule": timedelta(seconds=env.float("INSIGHTS_SWEEP_SECONDS", default=60)),
    },
    "api-keys-prune": {
        "task": "accounts.tasks.api_keys_prune_task",
        "schedule": timedelta(hours=1),
    },
    # The dashboard's rollup: days changed since computed again, each day added once it
    # has ended in its account's timezone (scoring/rollup_build.py).
    "rollup-sweep": {
        "task": "scoring.tasks.rollup_sweep_task",
        "schedule": timedelta(seconds=env.float("ROLLUP_SWEEP_SECONDS", default=60)),
    },
    # Suggestions that learn from the scorers (scoring/learnt.py), each night while the
    # dealers sleep; minutes of CPU, so on the transcription queue, away from the calls.
    "learn-suggestions": {
        "task": "scoring.tasks.suggestions_learn_task",
        "schedule": crontab(hour=3, minute=30),
        "options": {"queue": "transcription"},
    },
}

# The scheduler of due rows (appointment reminders, texts that waited for the morning,
# follow-up steps): each tick hands over the rows falling due in the next two seconds with
# an `eta` at their due time, so each reaches the provider within a second of its time;
# the slower sweeps stay the safety net. DUE_SCHEDULER=false (the bench's baseline) leaves
# texts to their 10 s sweep and hands follow-up steps over as often as that sweep runs.
DUE_SCHEDULER = env.bool("DUE_SCHEDULER", default=True)
DUE_TICK = timedelta(seconds=env.float("DUE_TICK_SECONDS", default=1))
# A tick still queued when the next is sent is dropped, so a busy worker never works
# through a backlog of them.
_TICK_EXPIRES = {"expires": 2 * DUE_TICK.total_seconds()}
CELERY_BEAT_SCHEDULE["cadence-due"] = {
    "task": "cadence.tasks.steps_due_task",
    "schedule": DUE_TICK
    if DUE_SCHEDULER
    else CELERY_BEAT_SCHEDULE["texts-sweep"]["schedule"],
    "options": _TICK_EXPIRES,
}
if DUE_SCHEDULER:
    CELERY_BEAT_SCHEDULE["texts-due"] = {
        "task": "texting.tasks.texts_due_task",
        "schedule": DUE_TICK,
        "options": _TICK_EXPIRES,
    }

# Sent by every worker each time it (re)connects to the broker (config/celery.py), so work
# left to the sweeps during a broker outage is handed over the moment it is back.
SWEEPS_ON_CONNECT = [
    "calls-sweep",
    "leads-sweep",
    "webhooks-sweep",
    "texts-sweep",
    "messages-sweep",
    "lead-emails-sweep",
    "effects-sweep",
]
