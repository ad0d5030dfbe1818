"""Media work yields the CPU to the call pipeline: the process that synthesises speech or
transcribes lowers its own priority to MEDIA_NICE, once, before the engine's threads
start (they inherit it). Run in a process of its own: a niced test process would crawl."""

import subprocess
import sys

from tests.processes import ROOT, service_env

PROGRAM = """
import os, django
django.setup()
from core.priority import yield_cpu_to_calls
from calls.telephony.conversation import Facts, conversation_script
from calls.telephony.speech import conversation_audio
before = os.nice(0)
script = conversation_script(Facts(agent_name="Ana Diaz", dealer="Demo"), seed=1)
conversation_audio(script, seconds=20)
after_speech = os.nice(0)
yield_cpu_to_calls(session=True)
group = open("/proc/self/autogroup").read().split()[-1] if os.path.exists("/proc/self/autogroup") else "7"
print(before, after_speech, os.nice(0), group)
"""


def test_media_work_lowers_the_process_and_session_priority_once():
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=service_env(MEDIA_NICE="7"),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        start_new_session=True,  # as config.respawn runs a worker: its own autogroup
    )
    # The process, and (where the kernel groups sessions) its session.
    assert done.stdout.split() == ["0", "7", "7", "7"], done.stderr[-2000:]
