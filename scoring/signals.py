"""What scoring tells the apps above it, inside the transaction that made the change."""

from django.dispatch import Signal

# A call's score was saved with changes (``score``, ``changes``: member -> [old, new];
# empty for a first score that kept every default).
score_saved = Signal()

# The rollup computed an account's days ``first``..``last`` (``account_id``, ``zone``: a
# ZoneInfo), inside its transaction under the account's lock, after deleting and writing
# its own rows: the apps above roll their figures up beside them (their rows of those
# days replaced). ``first`` None: the account's rollup was dropped (delete every row).
rollup_written = Signal()
