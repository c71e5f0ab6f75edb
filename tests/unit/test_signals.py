"""SIGTERM/Ctrl-C handling (rollguard.commands.common.install_sigterm) in a real process.

Python runs a signal handler in the main thread between two bytecodes, possibly while that thread
holds a lock. A CI run once hung for good after SIGTERM: the handler woke the cache (a queue.Queue
put) while the main thread sat inside that queue's get, holding its mutex. These tests land the signal
at exactly that moment; a handler that takes any lock hangs the child, and the test fails on timeout.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(
    """
    import os, queue, signal, sys, threading
    from rollguard.commands.common import install_sigterm

    events = queue.Queue()
    cancel, abort = threading.Event(), threading.Event()
    install_sigterm(cancel, lambda: events.put("wake"), abort)
    for _ in range({signals}):
        with events.mutex:  # the main thread inside the cache's Queue.get when the signal lands
            signal.raise_signal(signal.SIGTERM)
    assert events.get(timeout=10) == "wake"
    assert cancel.wait(10)
    if {signals} > 1:
        assert abort.wait(10), "a second SIGTERM stops the revert"
    else:
        assert not abort.is_set()
    print("ok")
    """
)


def run_child(signals: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD.format(signals=signals)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "ROLLGUARD_TERM_GRACE": "600"},  # the grace timer must not set abort
    )


def test_a_signal_landing_while_the_main_thread_holds_the_cache_queue_lock_does_not_hang():
    done = run_child(1)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "SIGTERM received: stopping and reverting the group" in done.stderr


def test_a_second_signal_stops_the_revert_without_hanging():
    done = run_child(2)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "second SIGTERM received: no longer waiting for the revert" in done.stderr
