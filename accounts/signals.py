"""The notifications sent upward from the lower apps.

Apps depend downward (``calls -> users -> accounts``), so a change to an agent (users) or to
an account's schedule (accounts) cannot call the call pipeline. ``duty_changed`` is sent
inside the transaction that made the change; the pipeline listens (``calls.apps``) and hands
a waiting call to each agent now free and on duty, in that transaction, dispatched on commit.

``account_created`` is sent by ``accounts.services.account_create`` inside its transaction;
scoring listens (``scoring.apps``) and gives the account the default scorecard.

``number_used`` asks the apps above which of their accounts use a number (texting's
sending numbers), so a number is refused to a second organization whichever app sets it.
"""

from django.dispatch import Signal

# Sent with ``agent_ids=[...]`` (agents created or changed) or ``account_ids=[...]`` (an
# account whose schedule, and so its agents' hours, changed).
duty_changed = Signal()

# Sent with ``account=<Account>``, just created.
account_created = Signal()

# Sent with ``number=<str>`` (an E.164 number or a Messaging Service SID): each receiver
# answers with the ids of the accounts that use the number in its app (texting: the
# accounts texting from it as their sending number). Caller IDs are accounts' own and not
# asked for. ``accounts.selectors.number_holders`` reads the answers: a number an account
# calls or texts from belongs to one organization.
number_used = Signal()
