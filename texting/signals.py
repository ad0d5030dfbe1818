"""What texting tells the apps above it, inside the transaction that stored the text."""

from django.dispatch import Signal

# A lead texted a reply that is no keyword of texting's own (not an opt-out, START, HELP
# or a reply that reads like an opt-out): ``text`` (inbound, with its call when known). A
# receiver returns True when the reply was its own (an appointment's C): texting then
# does not read it as a "call me" reply.
lead_replied = Signal()

# The pipeline reached a step that may have the lead told something automatically
# (``texting.triggers``): ``call`` and ``purpose`` (``Purpose.INSTANT``: a lead just
# arrived; ``Purpose.NOT_REACHED``: its last attempt found nobody), whether or not the
# account texts it. Sent in the pipeline's transaction: a receiver records (an outbox
# effect), it never sends. E-mail to leads (``emails``) listens.
automatic_touch = Signal()
