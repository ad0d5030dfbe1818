"""What handoffs tell the apps above it, inside the transaction of the change."""

from django.dispatch import Signal

# An open handoff passed its account's limit and is escalated, once (``handoff``):
# notify tells the managers.
handoff_escalated = Signal()
