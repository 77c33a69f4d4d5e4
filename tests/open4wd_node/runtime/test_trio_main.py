"""``run_trio`` and stop signals, in a child process (signal handlers are process-wide)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

CHILD = textwrap.dedent("""
    import signal
    import trio
    from open4wd_node.runtime import trio_main
    from open4wd_node.runtime.signals import Interrupted, stop_signals_raise

    class Deaf:
        '''A signal receiver that never takes a signal: as trio's is, once it has closed.'''
        def __init__(self, *signals): pass
        def __enter__(self): return self
        def __exit__(self, *exc): return False
        def __aiter__(self): return self
        async def __anext__(self): await trio.sleep_forever()

    trio.open_signal_receiver = Deaf

    async def command():
        token, handed_back = trio.lowlevel.current_trio_token(), trio.Event()
        token.run_sync_soon(signal.raise_signal, signal.SIGTERM)  # from inside trio's run loop, as trio does
        token.run_sync_soon(handed_back.set)  # callbacks run in order: the signal has been handled
        await handed_back.wait()
        return "finished"

    with stop_signals_raise():
        try:
            print("returned", trio_main.run_trio(command))
        except Interrupted as stop:
            print("stopped", stop.code, stop.exit_status)
""")


def test_a_signal_trio_hands_back_from_its_run_loop_stops_the_command_instead_of_crashing_trio():
    """A SIGTERM that lands while trio's signal receiver closes is given back to Python's handler from
    inside trio's run loop: it must be noted and end the command as a stop (exit 143), never raise in
    there (trio's internal error, a traceback)."""
    child = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=120)
    assert (child.returncode, child.stdout.strip(), child.stderr) == (0, "stopped terminated 143", "")
