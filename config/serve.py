"""``make serve``'s process manager: honcho, with longer to stop the processes cleanly.

``python -m config.serve start`` is ``honcho start``, except for three things:

- On Ctrl-C or SIGTERM honcho asks every process to stop and kills whatever is still
  running 5 s later (``honcho.manager.KILL_WAIT``, which no option sets). A Celery
  worker's warm shutdown waits for its pool's processes to exit, and on a loaded two-core
  machine, or just after they started, that took longer than 5 s: the workers were killed
  mid-shutdown. Nothing waits longer when the processes stop sooner: honcho ends as soon
  as the last one has (a long job, a transcription, gives its work back at once:
  core/shutdown.py).
- When that wait runs out, honcho sends SIGKILL once, not once every tenth of a second
  (it printed "sending SIGKILL to ..." for each) until the process is gone.
- A stop that was asked for (Ctrl-C, SIGTERM) and that every process obeyed exits 0, not
  130 or 143: ``make run`` then ends without "make: *** [Makefile: run] Error 130". A
  process that had to be killed, or one that stopped by itself, keeps honcho's status.
"""

import signal
import sys
from typing import Any

import honcho.manager
from honcho.command import main

# Seconds between asking the processes to stop and killing those still running.
STOP_WAIT = 30
# honcho's exit status after the signal that stopped it.
ASKED_TO_STOP = {
    honcho.manager.SIGNALS[s]["rc"] for s in (signal.SIGINT, signal.SIGTERM)
}


class Manager(honcho.manager.Manager):
    killed = False

    def kill(self) -> None:
        if not self.killed:
            self.killed = True
            super().kill()


def serve() -> int:
    honcho.manager.KILL_WAIT = STOP_WAIT
    managers: list[Manager] = []

    def manager(*args: Any, **kwargs: Any) -> Manager:
        managers.append(Manager(*args, **kwargs))
        return managers[-1]

    honcho.command.Manager = manager  # type: ignore[attr-defined,misc,assignment]
    try:
        main()
    except SystemExit as exit_:
        code = exit_.code
        if code in ASKED_TO_STOP and managers and not managers[0].killed:
            return 0
        raise
    return 0


if __name__ == "__main__":
    sys.exit(serve())
