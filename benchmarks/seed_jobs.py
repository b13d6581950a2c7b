"""One seed of one job of a target, as the pipeline runs it, for profiling and A/B timing.

Shared by ``profile_seed.py`` (where a seed's time goes) and ``bench_seed_speed.py`` (a
seed's time before and after a change, measured alternately in one run). A job is the
experiment's own run function on the default config (``--config``), one method
(``setting``) and one seed, the tuning block removed so that the configured values stand in
for the tuned ones (the same work per round). Inputs: the vendored corpus and MNIST files;
an MNIST target's learnt graph from ``results/cache/mnist_graph/`` when present, else a
stand-in built here with the same local datasets (the same partition: it depends only on
the base seed and the graph's name) and a cheap t-SNE (the graph only changes the edges
Alg. 1 couples; the timing of a seed depends on their number, which k fixes). Run with
``PYTHONPATH`` pointing at the ``src`` of the code to measure.

    PYTHONPATH=src python benchmarks/seed_jobs.py gfl_fig10_4_reviews_nlp bigfl 0 --out table.csv
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: The stand-in graph's t-SNE: few iterations and approximate neighbours (the default
#: config's 750 exact iterations on 40,000 images take minutes; they do not change a seed's work).
CHEAP_TSNE = {"n_iter": 30, "early_exaggeration_iter": 20, "neighbors": "approx"}


def pin(threads: int = 1, cpu_kernels: str = "avx2") -> None:
    """This process in a pipeline job's environment (``networkedfl.pipeline.determinism``):
    ``threads`` threads in every library, the pinned CPU kernels, PyTorch deterministic.
    Call before torch is imported (its kernels are chosen at import)."""
    from networkedfl.pipeline.determinism import job_environment, pin_job

    os.environ.update(job_environment(threads, cpu_kernels))
    pin_job(threads)


def load(config: str) -> dict:
    from networkedfl.pipeline.config import load_config

    files = [REPO / "config" / "config.yaml"] + ([REPO / config] if Path(config) != Path("config/config.yaml") else [])
    return load_config(*map(str, files))  # a profile (config/test.yaml) merged over the default, as the pipeline


def _graph(config: dict, name: str, workdir: Path) -> str:
    from networkedfl.experiments.gtv.mnist_graph import (
        build_mnist_graph,
        graph_file,
        save_mnist_graph,
    )

    cached = REPO / graph_file(name)
    if cached.is_file():
        return str(cached)
    spec = copy.deepcopy(config["mnist_graphs"][name])
    spec["tsne"] = {**spec.get("tsne", {}), **CHEAP_TSNE}
    path = workdir / f"standin_{name}_{zlib.crc32(json.dumps(spec, sort_keys=True).encode()):08x}.npz"
    if not path.is_file():
        save_mnist_graph(build_mnist_graph(name, spec, _mnist_files(), int(config["base_seed"])), path)
    return str(path)


def _mnist_files() -> list[str]:
    base = REPO / "data" / "vendored" / "mnist"
    return [str(base / f) for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")]


def job_args(config: dict, target: str, setting: str, workdir: Path, whole_job: bool = False) -> tuple:
    """``(run, params, own_setting, extra)`` of one job, inputs resolved to vendored files;
    ``whole_job``: an MNIST job computes all its seeds in the first call, as in the pipeline
    (Alg. 1 solves them together), else the seed alone."""
    from networkedfl.experiments.registry import get_experiment
    from networkedfl.experiments.variants import split_setting, variant_params

    experiment = get_experiment(target)
    params = config["experiments"][target]
    variant, own = split_setting(params, setting)
    params = {k: v for k, v in variant_params(params, variant).items() if k != "tuning"}
    inputs = dict(experiment.inputs(params)) if experiment.inputs else {}
    if "mnist" in inputs:
        inputs["mnist"] = _mnist_files()
    if "graph" in inputs:
        inputs["graph"] = _graph(config, str(params["graph"]), workdir)
        if not whole_job:
            params["repetitions"] = 0  # the seed alone (run_mnist solves a job's seeds together)
    if "corpus" in inputs:
        base = REPO / "data" / "vendored" / "reviews"
        inputs["corpus"] = [str(base / Path(p).name) for p in inputs["corpus"]]
    extra = {"inputs": inputs} if experiment.inputs else {}
    return experiment.run, params, own, extra


def run_one(config: dict, target: str, setting: str, seed: int, workdir: Path, whole_job: bool = False):
    """The job's table and its seconds (process CPU and wall clock), the run function only."""
    run, params, own, extra = job_args(config, target, setting, workdir, whole_job)
    cpu, wall = time.process_time(), time.perf_counter()
    table = run(params, own, int(seed), int(config["base_seed"]), **extra)
    return table, time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target")
    parser.add_argument("setting")
    parser.add_argument("seed", type=int)
    parser.add_argument("--config", default="config/config.yaml")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "networkedfl-seed-jobs")
    parser.add_argument("--out", type=Path, help="write the job's table here (CSV, %%.17g)")
    parser.add_argument("--whole-job", action="store_true", help="an MNIST job: all its seeds, as the pipeline")
    parser.add_argument("--no-pin", action="store_true", help="skip the job environment (seed_jobs.pin)")
    args = parser.parse_args()
    if not args.no_pin:
        pin(1)
    # PyTorch's import (with what the pin adds to it) is the job process's, once for all its
    # seeds: timed apart, not in the seed's time
    start = time.process_time()
    import torch  # noqa: F401
    import_cpu = time.process_time() - start
    args.workdir.mkdir(parents=True, exist_ok=True)
    config = load(args.config)
    table, cpu, wall = run_one(config, args.target, args.setting, args.seed, args.workdir, args.whole_job)
    if args.out:
        table.to_csv(args.out, index=False, float_format="%.17g")
    json.dump({"cpu": cpu, "wall": wall, "import_cpu": import_cpu, "rows": len(table), "pid": os.getpid()},
              sys.stdout)
    print()


if __name__ == "__main__":
    main()
