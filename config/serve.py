"""``make serve``'s process manager: honcho, with longer to stop the processes cleanly.

``python -m config.serve start`` is ``honcho start``, except for one setting: on Ctrl-C or
SIGTERM honcho asks every process to stop and kills whatever is still running 5 s later
(``honcho.manager.KILL_WAIT``, which no option sets). A Celery worker's warm shutdown waits
for its pool's processes to exit, and on a loaded two-core machine, or just after they
started, that took longer than 5 s: the workers were killed mid-shutdown. Nothing waits
longer when the processes stop sooner: honcho ends as soon as the last one has.
"""

import sys

import honcho.manager
from honcho.command import main

# Seconds between asking the processes to stop and killing those still running.
STOP_WAIT = 30

if __name__ == "__main__":
    honcho.manager.KILL_WAIT = STOP_WAIT
    sys.exit(main())
