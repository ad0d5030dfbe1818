"""The call pipeline: queue a call, offer it to agents, connect the lead, retry, and end
with a status.

Every step locks the call row and checks its state first, so a task delivered twice or
a provider event that arrives twice or late changes nothing it should not. A final
status (ANSWER, NOANSWER, BUSY, FAILED, CANCEL, NOAGENT) never changes again.

Modules, each importing only those above it:

- ``broker``: handing a call's setup or a leg's dial to Celery (or to the sweep).
- ``transitions``: ending legs, requeueing, finishing, cancelling, handing a freed agent
  a waiting call; the constants and helpers the others share.
- ``waiting``: how a call waits for an agent, and free agents handed waiting calls.
- ``offers``: agent legs (rung, press 1, missed).
- ``legs``: lead legs (answered, not answered, answered late, retried).
- ``events``: ``call_event``, a provider's report on a leg applied to its call (a ring or a
  recording's link by itself, everything else under the call's lock).
- ``dispatch``: ``call_queue``, ``call_setup`` and ``attempt_dial``.
- ``recovery``: the sweep, and legs settled from the provider's record.
- ``records``: a call's recording link and transcription.

The public services are importable from ``calls.services``.
"""
