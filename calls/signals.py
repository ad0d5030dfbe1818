"""What the calls app tells the apps above it (DESIGN.md: lower apps never import higher
ones). Each is sent inside the transaction that made the change; a receiver that starts
work elsewhere does so on commit."""

from django.dispatch import Signal

# A call's recording is stored and may be read (``call_id``): speech-to-text starts.
recording_stored = Signal()
# A call's transcription was saved (``call_id``): suggestions for the scorer follow.
transcription_saved = Signal()
# A call was queued (``call``): a lead just arrived, or a request or a reply asked for it.
call_queued = Signal()
# A call reached its final status (``call``): texting tells a lead it could not reach.
call_finished = Signal()
# The lead answered a call an agent had taken (``call``; sent once per call, a late answer
# found after the call ended included): a person reached the lead.
lead_answered = Signal()
# A call waits for the next schedule opening (``call``, ``opening``, an aware datetime).
call_waiting = Signal()
# An agent's leg ended (``attempt``, its outcome set): an offer taken, refused or missed.
offer_ended = Signal()
