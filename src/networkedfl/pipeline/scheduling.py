"""A workaround for Snakemake's pile-up of scheduler re-evaluation timers (issue 36).

Snakemake 9's job scheduler (``snakemake.scheduling.job_scheduler.JobScheduler``) ends
every scheduling pass that leaves ready jobs waiting by arming a timer that triggers another
pass one rate-limit timespan later (``--max-jobs-per-timespan``, default ``100/1s``), even when
the rate limit held nothing back.  Every pass that a finished job triggers starts a new chain
of such timers, and every chain lives as long as some job waits for a core: after a few
hundred finished jobs a run has tens to hundreds of timer threads, each triggering a pass a
second, and each pass re-evaluates the parameters and resources of every ready job and
solves the job selection.  On a 2-core run of the default configuration that was about a
fifth of a core (benchmarks/README.md).

:func:`coalesce_reevaluations` makes the scheduler keep at most one pending re-evaluation
timer: a pass still runs at the latest one timespan after the last one (so a rate-limited
job waits no longer than before), and every finished job still triggers its own pass, but
the chains no longer multiply.  The workflow applies it when it is loaded
(``workflow/rules/common.smk``).  The upstream fix would be the same two lines in
``JobScheduler._schedule_reevalutation`` (and arming the timer only when the rate limiter
actually held a job back); the proposal, with this project's numbers, is in
``docs/running.md``.
"""

from __future__ import annotations

import threading
import warnings
from typing import Any

__all__ = ["coalesce_reevaluations"]

_PATCHED = "_networkedfl_coalesced"


def coalesce_reevaluations(scheduler_class: Any = None) -> bool:
    """Patch Snakemake's scheduler so that it holds at most one pending re-evaluation timer.

    Returns whether the patch is in place; if this Snakemake has no such method (a version
    whose scheduler changed), nothing is patched and a warning says so.
    """
    if scheduler_class is None:
        from snakemake.scheduling.job_scheduler import JobScheduler as scheduler_class
    original = getattr(scheduler_class, "_schedule_reevalutation", None)
    if original is None:
        warnings.warn("networkedfl: this Snakemake's scheduler has no _schedule_reevalutation; its "
                      "re-evaluation timers are left as they are", RuntimeWarning, stacklevel=2)
        return False
    if getattr(original, _PATCHED, False):
        return True

    def schedule_reevaluation(self: Any, delay: float) -> None:
        with _lock_of(self):
            pending = getattr(self, "_networkedfl_timer", None)
            if pending is not None and pending.is_alive():
                return
            timer = threading.Timer(delay, self._open_jobs.release)
            timer.daemon = True
            self._networkedfl_timer = timer
            timer.start()

    setattr(schedule_reevaluation, _PATCHED, True)
    scheduler_class._schedule_reevalutation = schedule_reevaluation
    return True


_LOCKS_GUARD = threading.Lock()


def _lock_of(scheduler: Any) -> threading.Lock:
    with _LOCKS_GUARD:
        lock = getattr(scheduler, "_networkedfl_timer_lock", None)
        if lock is None:
            lock = threading.Lock()
            scheduler._networkedfl_timer_lock = lock
        return lock
