"""What scoring tells the apps above it, inside the transaction that made the change."""

from django.dispatch import Signal

# A call's score was saved with changes (``score``, ``changes``: member -> [old, new];
# empty for a first score that kept every default).
score_saved = Signal()
