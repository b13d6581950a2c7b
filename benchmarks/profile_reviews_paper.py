"""Time one job of gfl_fig10_4_reviews_nlp at a chosen scale (e.g. the paper profile on a GPU).

Runs the experiment's own job function (one method, one seed) with the config's parameters,
an optional overlay (``--profile config/profiles/gfl_reviews_paper.yaml``) and overrides
(``--rounds``, ``--device``), on the vendored corpus, and prints the wall-clock time of the
job, the time per round (the job minus a one-round job, so that preparing the task and the
round-0 evaluation cancel) and the peak memory of the training: on a GPU the peak allocated
memory, on the CPU the peak resident memory above the process's at the job's start (sampled
every 2 ms, the task already built), which bounds what the same tensors take on a GPU.
Figures only: nothing is asserted.

    .venv/bin/python benchmarks/profile_reviews_paper.py --method fedavg --rounds 1 3
    python3 benchmarks/profile_reviews_paper.py --profile config/profiles/gfl_reviews_paper.yaml \\
        --device cuda --method fedavg bigfl --rounds 1 2          # paper scale, on a GPU
    .venv/bin/python benchmarks/profile_reviews_paper.py --profile config/profiles/gfl_reviews_paper.yaml \\
        --method bigfl --rounds 1 --local-steps 1 --clients 2 4    # paper-scale memory per client, CPU

``--clients K ...`` keeps the first ``K`` clients of the task built from all 16 domains
(the same vocabulary, embedding and per-client data; the graph the ``k``-NN graph of their
similarities), once per ``K``: the training memory grows with the clients, so two counts
give the memory per client and a projection to all 16 on a machine too small for them.

It reads the YAML files directly (no schema validation), so it runs where only numpy,
scipy, pandas, PyYAML and torch are installed, e.g. a GPU machine without the pipeline.
"""

from __future__ import annotations

import argparse
import os
import threading
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def params_for(profile: str | None, overrides: dict) -> tuple[dict, int]:
    from networkedfl.experiments.variants import deep_merge

    config = yaml.safe_load((REPO / "config" / "config.yaml").read_text())
    if profile:
        config = deep_merge(config, yaml.safe_load(Path(profile).read_text()))
    params = dict(config["experiments"]["gfl_fig10_4_reviews_nlp"])
    return deep_merge(params, overrides), int(config["base_seed"])


class ResidentPeak:
    """The largest resident set size of this process, sampled every ``interval`` seconds in
    a thread, above its value at the start (bytes): the CPU counterpart of
    ``torch.cuda.max_memory_allocated`` (freed tensors go back to the system, so the
    samples follow the live tensors)."""

    def __init__(self, interval: float = 0.002) -> None:
        self.interval, self.page = interval, os.sysconf("SC_PAGE_SIZE")

    def _rss(self) -> int:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * self.page

    def __enter__(self) -> ResidentPeak:
        self.start = self.peak = self._rss()
        self._stop = threading.Event()

        def sample() -> None:
            while not self._stop.wait(self.interval):
                self.peak = max(self.peak, self._rss())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def above_start(self) -> int:
        return self.peak - self.start


def first_clients(task, count: int, neighbours: int):
    """The task's first ``count`` clients: their data and rows of ``present``, the same
    vocabulary and embedding, the ``k``-NN graph of their similarities."""
    from dataclasses import replace

    from networkedfl.experiments.gfl.reviews_nlp import knn_similarity_graph

    if not 2 <= count <= len(task.domains):
        raise SystemExit(f"--clients must lie in [2, {len(task.domains)}], got {count}")
    similarity = task.similarity[:count, :count]
    return replace(task, domains=task.domains[:count], train=task.train[:count], test=task.test[:count],
                   present=task.present[:count], similarity=similarity,
                   graph=knn_similarity_graph(similarity, neighbours))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default=None, help="a config overlay, e.g. config/profiles/gfl_reviews_paper.yaml")
    parser.add_argument("--method", nargs="+", default=["fedavg"])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 3],
                        help="round counts to run (two or more give the time per round)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: the config's)")
    parser.add_argument("--local-steps", type=int, default=None,
                        help="mini-batches per round (default: the profile's; memory needs one)")
    parser.add_argument("--clients", type=int, nargs="+", default=[None],
                        help="keep the first K clients of the 16-domain task, once per K (default: all)")
    args = parser.parse_args()

    import torch

    from networkedfl.experiments.gfl import reviews_nlp
    from networkedfl.experiments.gfl.reviews import corpus_inputs
    from networkedfl.experiments.gfl.reviews_nlp import run_review_nlp

    overrides = {} if args.device is None else {"device": args.device}
    if args.local_steps is not None:
        overrides["local_steps"] = args.local_steps
    params, base_seed = params_for(args.profile, overrides)
    vendored = REPO / "data" / "vendored" / "reviews"
    corpus = [str(vendored / Path(p).name) for p in corpus_inputs(params)["corpus"]]
    cuda = str(params["device"]).startswith("cuda")
    print(f"device {params['device']}"
          + (f" ({torch.cuda.get_device_name()})" if cuda else f", {torch.get_num_threads()} threads")
          + f"; vocab_size {params['vocab_size']}, batch {params['batch_size']}, "
          f"local_steps {params['local_steps']}, test_documents {params['test_documents']}")
    start = time.perf_counter()
    whole = reviews_nlp.review_task(params, corpus, base_seed, "gfl_fig10_4_reviews_nlp", 0)
    print(f"task of {len(whole.domains)} domains built in {time.perf_counter() - start:.1f} s: "
          f"V = {len(whole.vocabulary)}", flush=True)
    for count in args.clients:
        task = whole if count is None else first_clients(whole, int(count), int(params["graph"]["neighbours"]))
        clients = len(task.domains)
        reviews_nlp.review_task = lambda *a, task=task, **k: task  # the jobs below read this task
        for method in args.method:
            seconds = {}
            for rounds in args.rounds:
                p = {**params, "rounds": rounds, "methods": [method]}
                if cuda:
                    torch.cuda.reset_peak_memory_stats()
                    torch.cuda.synchronize()
                start = time.perf_counter()
                with ResidentPeak() as resident:
                    table = run_review_nlp(p, method, 0, base_seed, inputs={"corpus": corpus},
                                           experiment_id="gfl_fig10_4_reviews_nlp")
                    if cuda:
                        torch.cuda.synchronize()
                seconds[rounds] = time.perf_counter() - start
                loss = table[(table["metric"] == "test_loss") & table["domain"].isna()]["value"].iloc[-1]
                peak = (f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if cuda else
                        f", peak resident memory {resident.above_start / 2**30:.2f} GiB above the start")
                print(f"{method}, {clients} clients: {rounds} round(s) in {seconds[rounds]:.1f} s, "
                      f"final test loss {loss:.4f}{peak}", flush=True)
            if len(seconds) > 1:
                lo, hi = min(seconds), max(seconds)
                per_round = (seconds[hi] - seconds[lo]) / (hi - lo)
                full = seconds[lo] + per_round * (int(params["rounds"]) - lo)
                print(f"{method}, {clients} clients: {per_round:.1f} s per round; projected job of "
                      f"{params['rounds']} rounds {full:.0f} s", flush=True)


if __name__ == "__main__":
    main()
