"""What the consent ledger tells the apps above it, inside the transaction of the write."""

from django.dispatch import Signal

# Entries were added to the ledger (``events``, a list of ``ConsentEvent``): the apps
# above report them (webhook events).
consent_recorded = Signal()
