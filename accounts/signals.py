"""The one notification sent upward from the lower apps: agents may have come on duty.

Apps depend downward (``calls -> users -> accounts``), so a change to an agent (users) or to
an account's schedule (accounts) cannot call the call pipeline. It is sent inside the
transaction that made the change; the pipeline listens (``calls.apps``) and hands a waiting
call to each agent now free and on duty, in that transaction, dispatched on commit.
"""

from django.dispatch import Signal

# Sent with ``agent_ids=[...]`` (agents created or changed) or ``account_ids=[...]`` (an
# account whose schedule, and so its agents' hours, changed).
duty_changed = Signal()
