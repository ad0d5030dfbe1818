"""The notifications sent upward from the lower apps.

Apps depend downward (``calls -> users -> accounts``), so a change to an agent (users) or to
an account's schedule (accounts) cannot call the call pipeline. ``duty_changed`` is sent
inside the transaction that made the change; the pipeline listens (``calls.apps``) and hands
a waiting call to each agent now free and on duty, in that transaction, dispatched on commit.

``account_created`` is sent by ``accounts.services.account_create`` inside its transaction;
scoring listens (``scoring.apps``) and gives the account the default scorecard.
"""

from django.dispatch import Signal

# Sent with ``agent_ids=[...]`` (agents created or changed) or ``account_ids=[...]`` (an
# account whose schedule, and so its agents' hours, changed).
duty_changed = Signal()

# Sent with ``account=<Account>``, just created.
account_created = Signal()
