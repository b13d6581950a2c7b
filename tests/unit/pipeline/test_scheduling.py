"""The workaround for Snakemake's pile-up of re-evaluation timers (pipeline/scheduling.py)."""

import threading
import time

import pytest

from networkedfl.pipeline.scheduling import coalesce_reevaluations


class FakeScheduler:
    """Snakemake's scheduler as far as the timers go: every re-evaluation arms a timer that
    releases the scheduling semaphore (one scheduling pass)."""

    def __init__(self):
        self._open_jobs = threading.Semaphore(0)

    def _schedule_reevalutation(self, delay):
        threading.Timer(delay, lambda: self._open_jobs.release()).start()


def _passes(scheduler, calls, delay=0.05):
    for _ in range(calls):
        scheduler._schedule_reevalutation(delay)
    time.sleep(6 * delay)
    count = 0
    while scheduler._open_jobs.acquire(blocking=False):
        count += 1
    return count


def test_without_the_patch_every_call_arms_its_own_timer():
    assert _passes(FakeScheduler(), 20) == 20


def test_with_the_patch_pending_timers_coalesce_into_one_pass():
    class Patched(FakeScheduler):
        pass

    assert coalesce_reevaluations(Patched) is True
    assert coalesce_reevaluations(Patched) is True  # applying twice changes nothing
    scheduler = Patched()
    assert _passes(scheduler, 20) == 1
    assert _passes(scheduler, 1) == 1  # a later call arms a new one: passes keep coming


def test_a_scheduler_without_the_method_is_left_alone_with_a_warning():
    class Other:
        pass

    with pytest.warns(RuntimeWarning, match="_schedule_reevalutation"):
        assert coalesce_reevaluations(Other) is False


def test_the_pinned_snakemake_has_the_method_the_patch_replaces():
    from snakemake.scheduling.job_scheduler import JobScheduler

    assert callable(getattr(JobScheduler, "_schedule_reevalutation", None))
