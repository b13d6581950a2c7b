"""Time one job of gfl_fig10_4_reviews_nlp at a chosen scale (e.g. the paper profile on a GPU).

Runs the experiment's own job function (one method, one seed) with the config's parameters,
an optional overlay (``--profile config/profiles/gfl_reviews_paper.yaml``) and overrides
(``--rounds``, ``--device``), on the vendored corpus, and prints the wall-clock time of the
job, the time per round (the job minus a one-round job, so that preparing the task and the
round-0 evaluation cancel) and the peak GPU memory.  Figures only: nothing is asserted.

    .venv/bin/python benchmarks/profile_reviews_paper.py --method fedavg --rounds 1 3
    python3 benchmarks/profile_reviews_paper.py --profile config/profiles/gfl_reviews_paper.yaml \\
        --device cuda --method fedavg bigfl --rounds 1 2          # paper scale, on a GPU

It reads the YAML files directly (no schema validation), so it runs where only numpy,
scipy, pandas, PyYAML and torch are installed, e.g. a GPU machine without the pipeline.
"""

from __future__ import annotations

import argparse
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
    return deep_merge(params, overrides), int(config["seed"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile", default=None, help="a config overlay, e.g. config/profiles/gfl_reviews_paper.yaml")
    parser.add_argument("--method", nargs="+", default=["fedavg"])
    parser.add_argument("--rounds", type=int, nargs="+", default=[1, 3],
                        help="round counts to run (two or more give the time per round)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: the config's)")
    args = parser.parse_args()

    import torch

    from networkedfl.experiments.gfl.reviews import corpus_inputs
    from networkedfl.experiments.gfl.reviews_nlp import run_review_nlp

    overrides = {} if args.device is None else {"device": args.device}
    params, base_seed = params_for(args.profile, overrides)
    vendored = REPO / "data" / "vendored" / "reviews"
    corpus = [str(vendored / Path(p).name) for p in corpus_inputs(params)["corpus"]]
    cuda = str(params["device"]).startswith("cuda")
    print(f"device {params['device']}"
          + (f" ({torch.cuda.get_device_name()})" if cuda else f", {torch.get_num_threads()} threads")
          + f"; vocab_size {params['vocab_size']}, batch {params['batch_size']}, "
          f"local_steps {params['local_steps']}, test_documents {params['test_documents']}")
    for method in args.method:
        seconds = {}
        for rounds in args.rounds:
            p = {**params, "rounds": rounds, "methods": [method]}
            if cuda:
                torch.cuda.reset_peak_memory_stats()
                torch.cuda.synchronize()
            start = time.perf_counter()
            table = run_review_nlp(p, method, 0, base_seed, inputs={"corpus": corpus},
                                   experiment_id="gfl_fig10_4_reviews_nlp")
            if cuda:
                torch.cuda.synchronize()
            seconds[rounds] = time.perf_counter() - start
            loss = table[(table["metric"] == "test_loss") & table["domain"].isna()]["value"].iloc[-1]
            peak = f", peak GPU memory {torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if cuda else ""
            print(f"{method}: {rounds} round(s) in {seconds[rounds]:.1f} s, final test loss {loss:.4f}{peak}",
                  flush=True)
        if len(seconds) > 1:
            lo, hi = min(seconds), max(seconds)
            per_round = (seconds[hi] - seconds[lo]) / (hi - lo)
            full = seconds[lo] + per_round * (int(params["rounds"]) - lo)
            print(f"{method}: {per_round:.1f} s per round; projected job of {params['rounds']} rounds "
                  f"{full:.0f} s", flush=True)


if __name__ == "__main__":
    main()
