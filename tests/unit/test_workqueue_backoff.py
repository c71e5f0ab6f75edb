"""The emulation's work queue backs off as client-go's ItemExponentialFailureRateLimiter.When
(k8s.io/client-go util/workqueue/default_rate_limiters.go): base delay doubled per consecutive failure,
capped at the maximum, and still capped after any number of failures. The old formula raised
OverflowError after ~1000 failures of one key (a DC in a namespace being deleted, retried for an hour of
a long test session), which killed its worker thread: every DC of that sandbox then stood still."""

from __future__ import annotations

from sandbox.openshift.workqueue import MAX_DELAY, WorkQueue, backoff


def test_backoff_doubles_then_stays_at_the_cap_however_many_failures() -> None:
    assert [backoff(n) for n in range(4)] == [0.01, 0.02, 0.04, 0.08]
    assert backoff(10) == MAX_DELAY and backoff(1100) == MAX_DELAY and backoff(10**6) == MAX_DELAY


def test_a_key_failing_thousands_of_times_is_still_requeued() -> None:
    queue = WorkQueue("test")
    for _ in range(1200):
        queue.add_rate_limited("ns/dc")  # raised OverflowError at the 1025th
    queue.shutdown()
