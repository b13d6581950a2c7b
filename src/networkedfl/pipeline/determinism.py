"""What every job pins so that its floats do not depend on the machine (issue 40 item 6;
docs/determinism.md, "Across machines").

Two things change the last bits of a float result on the same inputs and seeds:

* **the number of threads** of a reduction: a sum split over two threads adds its halves in
  another order than one thread does (OpenBLAS's ``dot`` and ``gemv``, PyTorch's CPU ``sum``
  and ``dot``, measured in docs/determinism.md);
* **the CPU's instruction set**: the BLAS libraries pick their kernels by CPU (OpenBLAS's
  Haswell vs SkylakeX kernels, MKL's AVX2 vs AVX-512 code paths) and so do numpy's SIMD
  loops and PyTorch's vectorised CPU kernels (``X86_V4``/AVX-512 variants where the CPU has
  them); each kernel orders its fused multiply-adds its own way.

The Snakefile sets :func:`job_environment` in its own environment before any job starts, so
every job's process (a script job is a subprocess; a SLURM job reads the Snakefile again)
loads numpy, OpenBLAS, MKL and PyTorch with it; the jobs that compute call :func:`pin_job`
first, which limits the libraries already loaded and sets PyTorch's threads and
deterministic mode when the job imports it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

__all__ = ["CPU_KERNELS", "THREAD_VARIABLES", "job_environment", "pin_environment", "pin_job", "pinned_kernels"]

#: The variables that size the thread pools of OpenMP, MKL, OpenBLAS, Apple's Accelerate and
#: numexpr (PyTorch's intra-op pool starts with ``OMP_NUM_THREADS`` too; joblib's worker
#: processes inherit them instead of ``cpu_count() // n_jobs``).
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")

#: The values of the config's ``cpu_kernels``: ``avx2`` pins every library's kernels to its
#: AVX2 code path on an x86-64 CPU that has AVX2 and FMA (the same bits on every such CPU,
#: Intel or AMD, with or without AVX-512); ``native`` lets each library pick by CPU.
CPU_KERNELS = ("avx2", "native")

#: cuBLAS's reproducible workspace: PyTorch's deterministic mode refuses CUDA matrix products
#: without it.
CUBLAS_WORKSPACE = ":4096:8"

log = logging.getLogger(__name__)


def _cpu_features() -> Mapping[str, bool]:
    """The CPU features numpy detected at import (``X86_V3``, ``AVX2``, ``FMA3``, ...)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:  # numpy < 2
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return __cpu_features__


def _numpy_dispatch() -> list[str]:
    """The SIMD targets this numpy dispatches to at run time, beyond the x86-64-v3 level."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__
    except ImportError:
        return []
    return [name for name in __cpu_dispatch__ if name.startswith(("X86_V4", "AVX512"))]


#: The variables :func:`pinned_kernels` sets.
_KERNEL_VARIABLES = ("MKL_CBWR", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES")


def pinned_kernels(cpu_kernels: str = "avx2", features: Mapping[str, bool] | None = None,
                   dispatch: Iterable[str] | None = None) -> dict[str, str]:
    """The variables that fix the libraries' CPU kernels (``cpu_kernels: avx2``): MKL's
    conditional numerical reproducibility on its AVX2 path (``MKL_CBWR``, PyTorch's BLAS),
    OpenBLAS's Haswell kernels (numpy's and scipy's BLAS), PyTorch's AVX2 kernels
    (``ATEN_CPU_CAPABILITY``) and numpy's SIMD loops without their AVX-512 variants
    (``NPY_DISABLE_CPU_FEATURES``).  Empty for ``native``, or where the CPU lacks AVX2 or FMA
    (another architecture, or an x86-64 CPU older than 2013): a Haswell kernel would not
    run there, and each library picks its own."""
    if cpu_kernels not in CPU_KERNELS:
        raise ValueError(f"cpu_kernels must be one of {', '.join(CPU_KERNELS)}, not {cpu_kernels!r}")
    features = _cpu_features() if features is None else features
    if cpu_kernels == "native" or not (features.get("AVX2") and features.get("FMA3")):
        return {}
    pinned = {"MKL_CBWR": "AVX2", "OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2"}
    disabled = list(_numpy_dispatch() if dispatch is None else dispatch)
    if disabled:
        pinned["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    return pinned


def job_environment(threads: int, cpu_kernels: str = "avx2", **kernel_args: Any) -> dict[str, str]:
    """Every job's environment: ``threads`` threads in every library
    (:data:`THREAD_VARIABLES`), the kernels of :func:`pinned_kernels` and cuBLAS's
    reproducible workspace."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads_per_job must be an integer >= 1, not {threads!r}")
    return {**{name: str(threads) for name in THREAD_VARIABLES}, "CUBLAS_WORKSPACE_CONFIG": CUBLAS_WORKSPACE,
            **pinned_kernels(cpu_kernels, **kernel_args)}


def pin_environment(config: Mapping[str, Any]) -> dict[str, str]:
    """Set :func:`job_environment` of the config (``threads_per_job``, default 1;
    ``cpu_kernels``, default ``avx2``) in this process's environment, which every job
    started from here inherits; returns what was set."""
    env = job_environment(int(config.get("threads_per_job", 1)), str(config.get("cpu_kernels", "avx2")))
    os.environ.update(env)
    return env


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``action(module)`` once ``name`` has been imported (and at once if it was)."""

    def __init__(self, name: str, action: Callable[[ModuleType], None]) -> None:
        self.name, self.action = name, action

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        sys.meta_path.remove(self)  # the real finder below gives the spec
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None:
            return spec
        execute, action = spec.loader.exec_module, self.action

        def exec_module(module: ModuleType) -> None:
            execute(module)
            action(module)

        spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def when_imported(name: str, action: Callable[[ModuleType], None]) -> None:
    """``action(module)`` now if ``name`` is imported, else right after its import."""
    if name in sys.modules:
        action(sys.modules[name])
    elif not any(isinstance(f, _AfterImport) and f.name == name for f in sys.meta_path):
        sys.meta_path.insert(0, _AfterImport(name, action))


def _pin_torch(threads: int) -> Callable[[ModuleType], None]:
    def pin(torch: ModuleType) -> None:
        torch.set_num_threads(threads)
        try:
            torch.set_num_interop_threads(threads)
        except RuntimeError:  # inter-op work has started; those threads change no result
            pass
        deterministic(torch)

    return pin


def _inductor_deterministic(config: ModuleType) -> None:
    config.deterministic = True


def deterministic(torch: ModuleType) -> None:
    """``torch.use_deterministic_algorithms(True)`` without its import of
    ``torch._inductor.config`` (about 1.5 s of CPU in every job process, for a compiler no
    job uses): ATen's flag now, and the compiler's the moment something imports its config.
    Where this PyTorch lacks the private setter, the public function."""
    set_flag = getattr(torch._C, "_set_deterministic_algorithms", None)
    if set_flag is None:
        torch.use_deterministic_algorithms(True)
        return
    set_flag(True, warn_only=False)
    when_imported("torch._inductor.config", _inductor_deterministic)


def pin_job(threads: int) -> None:
    """Pin this job's process to ``threads`` threads in every library: the environment of
    the processes it starts (joblib's workers), the thread pools already loaded
    (threadpoolctl: OpenBLAS, MKL, OpenMP), and PyTorch, as soon as the job imports it,
    ``torch.set_num_threads(threads)`` and ``torch.use_deterministic_algorithms(True)``
    (an operation without a deterministic kernel then fails the job, naming it, instead of
    varying from run to run).  PyTorch is not imported here: most jobs do not need it."""
    from threadpoolctl import threadpool_limits

    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})
    threadpool_limits(limits=threads)
    when_imported("torch", _pin_torch(threads))
    kernels = {name: os.environ[name] for name in _KERNEL_VARIABLES if name in os.environ}
    log.info("threads per process: %d (OpenMP, BLAS, PyTorch), PyTorch deterministic; CPU kernels: %s", threads,
             ", ".join(f"{k}={v}" for k, v in kernels.items()) or "native")
