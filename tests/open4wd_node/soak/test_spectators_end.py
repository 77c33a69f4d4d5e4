"""The race's end waits for each spectator's run to be recorded, not only for its process to exit."""

import sys

import trio

from open4wd_node.demo.runner import run_node
from open4wd_node.soak.profiles import Faults, Profile, Spectators
from open4wd_node.soak.race import _Harness
from tests.open4wd_node.soak.test_classify import plan

# Exits at once, while a child it leaves behind holds stdout and stderr open for a moment: the process's
# exit status exists before ``run_node`` has read its output to the end (a spectator writing its last
# events as it exits looks the same to the harness, only shorter).
EXITS_BEFORE_ITS_OUTPUT_ENDS = [sys.executable, "-c",
                                "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1)'])"]


async def test_a_spectator_counts_as_running_until_its_exit_is_recorded():
    harness = _Harness(plan(Profile.SPECTATORS, Faults(spectators=Spectators(count=1))), "127.0.0.1")
    (run,) = harness.spectator_runs
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_node, EXITS_BEFORE_ITS_OUTPUT_ENDS, run, lambda index, event: None)
        while run.process is None or run.process.returncode is None:  # the process has exited
            await trio.sleep(0.01)
        await harness.spectators_end()
        nursery.cancel_scope.cancel()  # as the race does right after
    assert run.returncode == 0 and not harness.spectator_hung
