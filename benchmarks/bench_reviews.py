"""Cost of the review-corpus experiment (gfl_fig10_4_reviews_nlp) by component.

Prints seconds for: reading and tokenising the corpus, building the shared task (vocabulary,
windows, PPMI-SVD embedding, client graph), one batched mini-batch gradient of all 16
clients, one BiG-FL lower-level gradient, one BiG-FL hyper-gradient (10.20) with K Neumann
terms, and one evaluation of the test loss; then the projected time of one job per method.
The gradients and the evaluation are timed on both data layouts of the NPLM, measured in
the same run: the windows (logits once per token) and the word-pair counts the target uses
(:class:`~networkedfl.nn.WordPairCounts`, logits once per distinct input word),
with their ratio.  On the word pairs it also times the three ``U x h x V`` matrix products
of a gradient alone against the whole gradient and a whole local step: the share of the
time that no rearrangement of the same arithmetic can remove.  Figures only: nothing is
asserted.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_reviews.py                  # vocab 1000
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_reviews.py --vocab 1000 2000 5000
"""

from __future__ import annotations

import argparse
import copy
import time
from pathlib import Path

import numpy as np
import torch

from networkedfl.algorithms import (
    Embedding,
    hypergradient,
    lower_gradients,
    negative_samples,
    normalized_adjacency,
)
from networkedfl.datasets.reviews import DOMAINS, read_review_file, review_files
from networkedfl.experiments.gfl.reviews_nlp import (
    _Evaluator,
    _hidden_projection,
    _padded,
    prepare_review_task,
)
from networkedfl.nn import ClientBatches, NextWordBatches, NPLMLayout, batch_gradients, nplm
from networkedfl.pipeline.config import load_config

REPO = Path(__file__).resolve().parents[1]


def timed(fn, repeats: int = 1):
    fn()  # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        out = fn()
    return (time.perf_counter() - start) / repeats, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vocab", type=int, nargs="+", default=[1000])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = load_config(REPO / "config" / "config.yaml")["experiments"]["gfl_fig10_4_reviews_nlp"]
    corpus = REPO / "data" / "vendored" / "reviews"
    files = [str(corpus / name) for name in review_files(DOMAINS)]

    start = time.perf_counter()
    for name in files:
        read_review_file(name).tokens()
    print(f"read + tokenise 32 files: {time.perf_counter() - start:.2f} s")

    for vocab in args.vocab:
        bench(vocab, base, files, args.repeats)


def bench(vocab: int, base: dict, files: list[str], repeats: int) -> None:
    """Time the components at one vocabulary size and print them."""
    params = copy.deepcopy(base)
    params["vocab_size"] = vocab
    start = time.perf_counter()
    task = prepare_review_task(params, files, np.random.default_rng(0))
    prep = time.perf_counter() - start
    layout = NPLMLayout(len(task.vocabulary), 100, 200)
    model = nplm(layout, embedding=task.embedding)
    gen = torch.Generator().manual_seed(0)
    theta = layout.zero_absent_rows(model.initial_params(gen), task.present).float()
    mask = torch.as_tensor(layout.frozen_rows_mask(task.present))
    x, y, w = _padded(task.train, torch, "cpu")
    layouts = {"windows": ClientBatches(x, y, w), "word pairs": NextWordBatches(ClientBatches(x, y, w), layout.vocab_size)}
    b = int(params["batch_size"])
    grads = batch_gradients(model)
    spec = params["bigfl"]
    proj = _hidden_projection(layout, int(spec["projection_dim"]), np.random.default_rng(1),
                              torch.float32, "cpu")
    emb = Embedding(proj, layout.n_params, torch.float32, torch.device("cpu"))
    prop = normalized_adjacency(task.graph, dtype=torch.float32)
    n = prop.shape[0]
    neighbours = (prop > 0).float() * (1 - torch.eye(n))
    phi = torch.eye(emb.dim)
    anchor = torch.zeros(n, emb.dim)
    k = int(spec["neumann_terms"])
    times: dict[str, dict[str, float]] = {}
    for name, data in layouts.items():
        t_grad, _ = timed(lambda data=data: grads(theta, *data.sample(b, gen)), repeats)
        t_lower, _ = timed(lambda data=data: lower_gradients(
            model, theta, phi, prop, data.sample(b, gen), lam=0.1, kappa=0.01, embedding=emb,
            anchor=anchor, mask=mask), repeats)
        t_hyper, _ = timed(lambda data=data: hypergradient(
            model, theta, phi, prop, neighbours, negative_samples(neighbours, 10, gen),
            data.sample(b, gen), lam=0.1, kappa=0.01, lam_upper=0.1, embedding=emb,
            neumann_terms=k, neumann_scale=0.1, mask=mask), 1)
        times[name] = {"grad": t_grad, "lower": t_lower, "hyper": t_hyper}
    floor = products_floor(model, layout, theta, mask > 0, layouts["word pairs"], b, gen, repeats)
    evaluate = _Evaluator(model, task.test, layout.vocab_size, torch.float32, "cpu")
    times["word pairs"]["eval"], _ = timed(lambda: evaluate(theta), 1)
    times["windows"]["eval"], _ = timed(lambda: client_token_losses_windows(model, theta, task.test), 1)
    rounds, steps = int(params["rounds"]), int(params["local_steps"])
    evals = rounds // int(params.get("eval_every", 1)) + 1
    print(f"\nV = {len(task.vocabulary)} (vocab_size {vocab}), P = {layout.n_params:,} per client, "
          f"{sum(len(t) for t in task.test)} test windows")
    print(f"  prepare task (vocabulary, windows, PPMI-SVD, graph): {prep:6.2f} s")
    labels = {"grad": f"mini-batch gradient, 16 clients x {b} windows", "lower": "BiG-FL lower-level gradient",
              "hyper": f"BiG-FL hyper-gradient, K = {k}", "eval": "test-loss evaluation"}
    print(f"  {'':52s} {'windows':>9s} {'word pairs':>11s} {'ratio':>7s}")
    for key, label in labels.items():
        old, new = times["windows"][key], times["word pairs"][key]
        print(f"  {label:52s} {old:8.3f}s {new:10.3f}s {old / new:6.1f}x")
    print(f"  word pairs, one gradient {floor['grad'] * 1e3:.1f} ms (U = {floor['width']} distinct words): "
          f"its three (U x {layout.hidden_dim}) x ({layout.hidden_dim} x {layout.vocab_size}) products alone "
          f"{floor['products'] * 1e3:.1f} ms ({floor['products'] / floor['grad']:.0%}, "
          f"{floor['gflops']:.0f} GFLOP/s); a whole local step (draw, gradient, masked step) "
          f"{floor['step'] * 1e3:.1f} ms, the products {floor['products'] / floor['step']:.0%} of it")
    for name, t in times.items():
        plain = prep + rounds * steps * t["grad"] + evals * t["eval"]
        big = prep + rounds * (steps * t["lower"] + t["hyper"]) + evals * t["eval"]
        print(f"  projected job on {name} ({rounds} rounds x {steps} steps, {evals} evaluations): "
              f"FedAvg/DFL/FeSEM ~{plain:.0f} s, BiG-FL ~{big:.0f} s, all five ~{4 * plain + big:.0f} s of one core")


def products_floor(model, layout, theta, keep, data, batch_size: int, gen, repeats: int) -> dict:
    """One gradient on the word-pair layout against the three ``U x h x V`` products it
    cannot avoid (the logits ``H W_2``, ``G W_2^T`` and ``H^T G``, the same shapes as in
    :class:`~networkedfl.nn.NextWordBatches`' gradient), and a whole local step (draw the
    batch, gradient, masked step as ``local_steps`` takes it), timed in the same run."""
    from networkedfl.nn import sgd_step

    grads = batch_gradients(model)
    batch = data.sample(batch_size, gen)
    n, width = batch[0].shape
    h, v = layout.hidden_dim, layout.vocab_size
    hidden = torch.randn(n, width, h)
    w2 = torch.randn(n, h, v)
    g = torch.randn(n, width, v)

    def products():
        torch.bmm(hidden, w2), torch.bmm(g, w2.transpose(1, 2)), torch.bmm(hidden.transpose(1, 2), g)

    t_grad, _ = timed(lambda: grads(theta, *batch), repeats)
    t_products, _ = timed(products, repeats)
    t_step, _ = timed(lambda: sgd_step(theta, grads(theta, *data.sample(batch_size, gen)), 0.1, keep), repeats)
    return {"grad": t_grad, "products": t_products, "step": t_step, "width": width,
            "gflops": 3 * 2 * n * width * h * v / t_products / 1e9}


def client_token_losses_windows(model, params, test, chunk: int = 16) -> np.ndarray:
    """The test loss computed on the windows, a chunk of windows at a time (the layout before
    the word-pair counts): the reference of the evaluation's ratio."""
    ids, targets, weights = _padded(test, torch, "cpu")
    loss = torch.vmap(model.loss)
    counts = np.array([len(t) for t in test])
    total = np.zeros(len(test))
    with torch.no_grad():
        for start in range(0, int(counts.max()), chunk):
            active = np.flatnonzero(counts > start)
            idx = torch.as_tensor(active)
            block = slice(start, start + chunk)
            w = weights[idx, block].to(params.dtype)
            total[active] += (loss(params[idx], ids[idx, block], targets[idx, block], w) * w.sum(dim=1)).double().numpy()
    return total / counts


if __name__ == "__main__":
    main()
