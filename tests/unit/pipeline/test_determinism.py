"""What every job pins so that its floats do not depend on the machine (issue 40 item 6;
networkedfl.pipeline.determinism, docs/determinism.md "Across machines")."""

import json
import os
import subprocess
import sys

import pytest

from networkedfl.pipeline.determinism import (
    THREAD_VARIABLES,
    job_environment,
    pin_environment,
    pinned_kernels,
)

AVX2 = {"AVX2": True, "FMA3": True, "AVX512F": False}


def test_every_library_gets_the_configured_threads_and_cublas_its_reproducible_workspace():
    env = job_environment(3, "native")
    assert {name: env[name] for name in THREAD_VARIABLES} == dict.fromkeys(THREAD_VARIABLES, "3")
    assert env["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"
    assert not {"MKL_CBWR", "OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES"} & set(env)


def test_avx2_kernels_on_a_cpu_with_avx2_and_fma_and_none_without():
    pinned = pinned_kernels("avx2", features=AVX2, dispatch=["X86_V4", "AVX512_ICL"])
    assert pinned == {"MKL_CBWR": "AVX2", "OPENBLAS_CORETYPE": "Haswell", "ATEN_CPU_CAPABILITY": "avx2",
                      "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL"}
    assert "NPY_DISABLE_CPU_FEATURES" not in pinned_kernels("avx2", features=AVX2, dispatch=[])
    # a Haswell kernel would not run without AVX2 or FMA (older x86-64, ARM): nothing pinned
    assert pinned_kernels("avx2", features={"AVX2": True, "FMA3": False}, dispatch=["X86_V4"]) == {}
    assert pinned_kernels("avx2", features={"ASIMD": True}, dispatch=[]) == {}
    assert pinned_kernels("native", features=AVX2, dispatch=["X86_V4"]) == {}


def test_numpys_avx512_dispatch_targets_are_the_ones_it_knows():
    """The names given to NPY_DISABLE_CPU_FEATURES are numpy's own dispatch targets beyond
    x86-64-v3 (an unknown name would be ignored with a warning, and the loops not pinned)."""
    import numpy as np

    from networkedfl.pipeline import determinism

    names = determinism._numpy_dispatch()
    if np.__version__.startswith("2.") and any(f.startswith("AVX512") for f in determinism._cpu_features()):
        assert names
    assert all(n.startswith(("X86_V4", "AVX512")) for n in names)


@pytest.mark.parametrize("threads", [0, -1, 1.5, True, "2"])
def test_a_thread_count_that_is_no_positive_integer_is_refused_by_name(threads):
    with pytest.raises(ValueError, match="threads_per_job"):
        job_environment(threads)
    with pytest.raises(ValueError, match="cpu_kernels"):
        pinned_kernels("sse2")


def test_the_config_sets_the_environment_jobs_inherit(monkeypatch):
    for name in (*THREAD_VARIABLES, "MKL_CBWR"):
        monkeypatch.setenv(name, "7")
    env = pin_environment({"threads_per_job": 2, "cpu_kernels": "native"})
    assert all(os.environ[name] == "2" == env[name] for name in THREAD_VARIABLES)
    assert os.environ["MKL_CBWR"] == "7"  # native: the shell's own choice is left alone


def test_a_job_keeps_its_threads_whatever_its_environment_asked_and_torch_is_deterministic():
    """A process started with 2 threads asked for (OMP_NUM_THREADS, ...) and pinned to 1:
    the loaded BLAS and OpenMP pools, and PyTorch imported afterwards, run 1 thread, in
    deterministic mode; the processes it starts inherit 1."""
    pytest.importorskip("torch")
    code = """
import json, os, numpy, threadpoolctl
from networkedfl.pipeline.determinism import pin_job
pin_job(1)
import torch
print(json.dumps({"torch": torch.get_num_threads(), "deterministic": torch.are_deterministic_algorithms_enabled(),
                  "pools": sorted({i["num_threads"] for i in threadpoolctl.threadpool_info()}),
                  "child": os.environ["OMP_NUM_THREADS"]}))
"""
    env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, "2")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    state = json.loads(proc.stdout.strip().splitlines()[-1])
    assert state == {"torch": 1, "deterministic": True, "pools": [1], "child": "1"}


def test_deterministic_mode_costs_no_compiler_import_and_reaches_the_compiler_when_it_loads():
    """pin_job sets ATen's deterministic flag without importing torch._inductor.config (as
    torch.use_deterministic_algorithms does: about 1.5 s of CPU per job process); a later
    import of that config finds it deterministic, as the public function would have left it."""
    pytest.importorskip("torch")
    code = """
import json, sys
from networkedfl.pipeline.determinism import pin_job
pin_job(1)
import torch
before = "torch._inductor.config" in sys.modules
import torch._inductor.config as config
print(json.dumps({"loaded_by_pin": before, "aten": torch.are_deterministic_algorithms_enabled(),
                  "inductor": config.deterministic}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"loaded_by_pin": False, "aten": True, "inductor": True}
