"""FedAvg from 100 to 10^5 clients: seconds per round and memory, against a per-client torch
loop and Flower's simulation engine, on identical data, initial weights and batch orders.

Setting (issue 36, item 4): an MLP 20 -> 64 -> 10 (ReLU, biases, cross-entropy;
``torch.nn.Sequential`` wrapped by ``networkedfl.nn.from_module``), 200 samples per client
(features N(0, I), labels the argmax of a fixed random linear map of them), FedAvg with one
local epoch of mini-batches of 20 (10 steps) at step size 0.05, float32, one thread.  Cases:
100, 10^3 and 10^4 clients with every client in every round, and 10^5 clients with 10 % and
1 % of them sampled per round (``client_fraction``).

For every case, in a fresh subprocess (so that its peak memory is its own):

* **library**: ``networkedfl.algorithms.fedavg.fedavg``; seconds per round are
  ``(T(R) - T(1)) / (R - 1)`` for runs of ``R`` and 1 rounds (the set-up, and the ``(n, P)``
  models of all clients built once for the result, cancel), after an untimed warm-up; with
  ``--chunk K`` also with ``client_chunk_size=K`` where a round trains more than ``K``
  clients (checked equal to the one-call result, bit for bit);
* **loop**: the same round written by hand, one client after another: ``nn.Sequential``,
  ``torch.optim.SGD`` and ``F.cross_entropy`` per client on the clients and sample orders
  that the library draws (``sample_clients`` and ``epoch_order`` with the same seed), then
  the average weighted by the samples; one round, timed, its final weights compared with
  the library's after one round (largest absolute difference; equal within 1e-5 + 1e-4 |w|,
  float32 rounding of two different operation orders);
* memory: the peak resident set size of the subprocess (``ru_maxrss``) and the library's
  peak above the data (sampled every 2 ms around its runs): what the rounds add, with the
  ``(n, P)`` float32 models of all clients that a run returns (``result_bytes``, built once
  at its end).

**Flower** (optional): ``flower_fedavg.py`` in the separate environment ``.venv-flower``
(``--flower-python``; how to create it: that script's docstring and benchmarks/README.md),
two rounds of Flower's ``FedAvg`` on ``run_simulation`` with every client selected, given
the same data, initial weights and per-round sample orders in files; its seconds per round
(the second round; the first includes the clients' start), the summed resident memory of its
processes, and its final weights against the library's after two rounds.  Run only with full
participation, each size with ``--flower-timeout`` seconds; after a size that did not
finish, larger sizes are not attempted.  Without the environment it says so and goes on.

The bar's ratio is printed at the end: a round at 1 % of 10^5 clients over a round of all
10^3 clients (bar: at most 2), with the peak memory at 10^5 (bar: within 8 GiB).  Nothing is
asserted; ``--quick`` runs 100 and 10^3 clients and 1 % of 10^4 (no 10^5, no Flower).

Usage::

    .venv/bin/python benchmarks/bench_fedavg_scale.py                 # all cases, ~15 min
    .venv/bin/python benchmarks/bench_fedavg_scale.py --quick
    .venv/bin/python benchmarks/bench_fedavg_scale.py --cases 1e3 1e5:0.01 --no-flower --chunk 1024
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SIZES = [20, 64, 10]
SAMPLES, BATCH, EPOCHS, LR, SEED, DATA_SEED = 200, 20, 1, 0.05, 0, 1
FULL_CASES = ("100", "1e3", "1e4", "1e5:0.1", "1e5:0.01")
QUICK_CASES = ("100", "1e3", "1e4:0.01")
ROUNDS = {100: 10, 1000: 5, 10000: 3, 100000: 3}  # R of T(R) - T(1), by selected clients
FLOWER_ROUNDS = 2
GIB = 2**30


def parse_case(text: str) -> tuple[int, float]:
    """``"1e5:0.01"`` -> (100000, 0.01); ``"1e3"`` -> (1000, 1.0)."""
    size, _, frac = text.partition(":")
    n = int(float(size))
    fraction = float(frac) if frac else 1.0
    if n < 1 or not 0 < fraction <= 1:
        raise argparse.ArgumentTypeError(f"bad case {text!r}: want N or N:FRACTION, FRACTION in (0, 1]")
    return n, fraction


def selected_per_round(n: int, fraction: float) -> int:
    """``max(1, round(C n))`` (half up), as ``sample_clients``."""
    return n if fraction == 1.0 else min(n, max(1, math.floor(fraction * n + 0.5)))


# ---------------------------------------------------------------------------------------
# Data, model, the hand-written loop (torch only)
# ---------------------------------------------------------------------------------------


def make_data(n: int):
    """``(x (n, 200, 20) float32, y (n, 200) int64)``: N(0, I) features, labels the argmax of
    a fixed random linear map, drawn client block by client block (same values for any n'
    >= n in the first n rows)."""
    import torch

    g = torch.Generator().manual_seed(DATA_SEED)
    teacher = torch.randn(SIZES[0], SIZES[-1], generator=g)
    x = torch.empty(n, SAMPLES, SIZES[0])
    y = torch.empty(n, SAMPLES, dtype=torch.int64)
    for start in range(0, n, 4096):  # blocks: the (block, m, 10) scores stay small
        stop = min(n, start + 4096)
        x[start:stop] = torch.randn(stop - start, SAMPLES, SIZES[0], generator=g)
        y[start:stop] = (x[start:stop] @ teacher).argmax(-1)
    return x, y


def make_network():
    import torch

    torch.manual_seed(SEED)  # the initial weights: nn.Linear's own initialisation
    d, h, k = SIZES
    return torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.ReLU(), torch.nn.Linear(h, k))


def draws(n: int, fraction: float, rounds: int):
    """The selected clients and their sample orders of each round, as the library draws them
    with ``seed=SEED``: ``[(idx (k,), [order (k, m) per epoch]) per round]``."""
    import torch

    from networkedfl.algorithms import epoch_order
    from networkedfl.algorithms.aggregate import sample_clients

    gen = torch.Generator().manual_seed(SEED)
    groups = torch.zeros(n, dtype=torch.int64)
    everyone = torch.ones(n, dtype=torch.bool)
    out = []
    for _ in range(rounds):
        idx = torch.nonzero(sample_clients(groups, 1, fraction, everyone, gen)).squeeze(1)
        weights = torch.ones(int(idx.numel()), SAMPLES)
        out.append((idx, [epoch_order(weights, gen) for _ in range(EPOCHS)]))
    return out


def loop_round(net, flat, x, y, idx, orders):
    """One FedAvg round by hand: every selected client in turn trains a copy of ``net`` from
    the flat weights ``flat`` with ``torch.optim.SGD`` on its blocks in ``orders``; returns
    the sample-weighted average of the clients' flat weights."""
    import torch

    total = torch.zeros_like(flat)
    for j, i in enumerate(idx.tolist()):  # the per-client loop this benchmark compares with
        torch.nn.utils.vector_to_parameters(flat.clone(), net.parameters())  # views of the copy
        opt = torch.optim.SGD(net.parameters(), lr=LR)
        xi, yi = x[i], y[i]
        for order in orders:
            for start in range(0, SAMPLES, BATCH):
                b = order[j, start:start + BATCH]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(xi[b]), yi[b]).backward()
                opt.step()
        total += SAMPLES * torch.nn.utils.parameters_to_vector(net.parameters()).detach()
    return total / (SAMPLES * len(idx))


# ---------------------------------------------------------------------------------------
# One case, in its own process
# ---------------------------------------------------------------------------------------


def _ru_maxrss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_case(n: int, fraction: float, chunk: int | None, loop: bool) -> dict:
    import torch

    from networkedfl.algorithms import fedavg
    from networkedfl.nn import ClientData, cross_entropy, from_module

    sys.path.insert(0, str(HERE))
    from profile_reviews_paper import ResidentPeak

    torch.set_num_threads(1)
    k = selected_per_round(n, fraction)
    rounds = ROUNDS.get(10 ** round(math.log10(max(k, 100))), 3)
    t0 = time.perf_counter()
    x, y = make_data(n)
    data = ClientData(x, y, torch.ones(n, SAMPLES))
    net = make_network()
    model = from_module(net, cross_entropy)
    w0 = model.initial_params(dtype=torch.float32)
    setup_s = time.perf_counter() - t0
    options = {"local_epochs": EPOCHS, "batch_size": BATCH, "lr": LR, "seed": SEED,
               "dtype": "float32", "init": w0, "client_fraction": fraction}
    small = data.subset(torch.arange(min(n, 10)))
    fedavg(model, small, n_rounds=1, **{**options, "client_fraction": 1.0})  # warm-up

    def timed(**extra) -> tuple[float, object, int]:
        with ResidentPeak() as peak:
            t1 = time.perf_counter()
            one = fedavg(model, data, n_rounds=1, **options, **extra).global_params[0]  # the
            t1 = time.perf_counter() - t1  # (n, P) client models of the result are freed here
            tr = time.perf_counter()
            many = fedavg(model, data, n_rounds=rounds, **options, **extra)
            tr = time.perf_counter() - tr
        assert [row["clients"] for row in many.log] == [k] * rounds
        return (tr - t1) / (rounds - 1), (one, many.global_params[0]), peak.above_start

    rss_data = ResidentPeak()._rss()
    lib_s, (lib_one, lib_many), lib_mem = timed()
    out = {"n": n, "fraction": fraction, "selected": k, "rounds": rounds, "setup_s": setup_s,
           "data_bytes": sum(t.element_size() * t.nelement() for t in (data.features, data.targets,
                                                                         data.sample_weights)),
           "rss_after_data": rss_data, "library_s": lib_s, "library_round_bytes": lib_mem,
           "result_bytes": n * model.n_params * 4}
    if chunk is not None and k > chunk:
        ch_s, (ch_one, ch_many), ch_mem = timed(client_chunk_size=chunk)
        out.update(chunk=chunk, chunked_s=ch_s, chunked_round_bytes=ch_mem,
                   chunked_equal=bool(torch.equal(ch_one, lib_one) and torch.equal(ch_many, lib_many)))
    if loop:
        (idx, orders), = draws(n, fraction, 1)
        t = time.perf_counter()
        w_loop = loop_round(net, w0.clone(), x, y, idx, orders)
        out["loop_s"] = time.perf_counter() - t
        diff = (w_loop - lib_one).abs()
        out["loop_max_diff"] = float(diff.max())
        out["loop_equal"] = bool((diff <= 1e-5 + 1e-4 * lib_one.abs()).all())
    out["peak_rss"] = _ru_maxrss()
    return out


def spawn_case(n: int, fraction: float, chunk: int | None, loop: bool, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--case", f"{n}:{fraction}"]
    cmd += ["--chunk", str(chunk)] if chunk else []
    cmd += [] if loop else ["--no-loop"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"n": n, "fraction": fraction, "error": f"did not finish in {timeout:.0f} s"}
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = " | ".join(proc.stderr.strip().splitlines()[-2:])
        return {"n": n, "fraction": fraction, "error": f"exit code {proc.returncode}: {tail}"}
    return json.loads(lines[-1])


# ---------------------------------------------------------------------------------------
# Flower, in its own environment
# ---------------------------------------------------------------------------------------

FLOWER_SETUP = ('python3 -m venv .venv-flower && .venv-flower/bin/pip install "flwr[simulation]" '
                "-c constraints.txt && .venv-flower/bin/pip install torch==2.13.0 -c constraints.txt")


def flower_available(python: Path) -> str | None:
    """``None`` if ``python`` imports flwr and torch, else why not."""
    if not python.exists():
        return f"not installed ({python} not found; create it with: {FLOWER_SETUP})"
    probe = subprocess.run([str(python), "-c", "import flwr, torch, ray; print(flwr.__version__)"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        return f"not usable ({python}: {probe.stderr.strip().splitlines()[-1:]}); create it with: {FLOWER_SETUP}"
    return None


def _session_rss(sid: int) -> int:
    """Summed resident memory of the processes of session ``sid`` (Flower and Ray's)."""
    total, page = 0, os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[3]) == sid:  # field 6 of stat: the session id
                with open(f"/proc/{entry}/statm") as f:
                    total += int(f.read().split()[1]) * page
        except (OSError, ValueError, IndexError):
            continue
    return total


def run_flower(python: Path, n: int, timeout: float) -> dict:
    """Flower's FedAvg on ``n`` clients (all selected), 2 rounds, against the library."""
    import numpy as np
    import torch

    from networkedfl.algorithms import fedavg
    from networkedfl.nn import ClientData, cross_entropy, from_module

    work = Path(tempfile.mkdtemp(prefix="flower_fedavg_"))
    keep = os.environ.get("BENCH_FLOWER_KEEP")  # debugging: keep the files and Flower's output
    try:
        x, y = make_data(n)
        net = make_network()
        model = from_module(net, cross_entropy)
        w0 = model.initial_params(dtype=torch.float32)
        np.save(work / "x.npy", x.numpy())
        np.save(work / "y.npy", y.numpy())
        np.save(work / "w0.npy", w0.numpy())
        orders = [torch.stack(o) for _, o in draws(n, 1.0, FLOWER_ROUNDS)]
        np.save(work / "orders.npy", torch.stack(orders).to(torch.int16).numpy())
        (work / "spec.json").write_text(json.dumps({"n_clients": n, "sizes": SIZES, "batch": BATCH,
                                                    "lr": LR, "rounds": FLOWER_ROUNDS}))
        proc = subprocess.Popen([str(python), str(HERE / "flower_fedavg.py"), "--workdir", str(work)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                start_new_session=True, cwd=REPO)
        peak, stop = [0], threading.Event()

        def sample() -> None:
            while not stop.wait(0.5):
                peak[0] = max(peak[0], _session_rss(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        try:
            output, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)  # the session this benchmark started: Flower and Ray
            proc.communicate()
            return {"n": n, "error": f"did not finish in {timeout:.0f} s", "peak_rss": peak[0]}
        finally:
            stop.set()
            sampler.join()
            try:
                os.killpg(proc.pid, 9)  # Ray's daemons, if any outlived the driver
            except ProcessLookupError:
                pass
        result = work / "flower.json"
        got = json.loads(result.read_text()) if result.exists() else {}
        if proc.returncode != 0 or got.get("final") is None:
            tail = " | ".join(output.strip().splitlines()[-3:])
            return {"n": n, "error": f"exit code {proc.returncode}, no final weights: {tail}",
                    "peak_rss": peak[0]}
        data = ClientData(x, y, torch.ones(n, SAMPLES))
        ref = fedavg(model, data, n_rounds=FLOWER_ROUNDS, local_epochs=EPOCHS, batch_size=BATCH, lr=LR,
                     seed=SEED, dtype="float32", init=w0).global_params[0]
        final = torch.tensor(got["final"], dtype=torch.float32)
        diff = (final - ref).abs()
        rounds = [end - start for start, end in got["rounds"]]
        return {"n": n, "flower_s": rounds[-1], "round_s": rounds, "wall_s": got["wall_s"],
                "flwr": got["flwr"], "peak_rss": peak[0], "max_diff": float(diff.max()),
                "equal": bool((diff <= 1e-5 + 1e-4 * ref.abs()).all())}
    finally:
        if keep:
            (work / "output.txt").write_text(locals().get("output") or "")
            print(f"kept {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# All cases, and the report
# ---------------------------------------------------------------------------------------


def measure(cases=FULL_CASES, *, chunk: int | None = None, loop: bool = True, flower: bool = True,
            flower_python: Path = REPO / ".venv-flower" / "bin" / "python",
            flower_timeout: float = 300.0, case_timeout: float = 1800.0) -> dict:
    """Every case in a subprocess, then Flower where asked; a dict for :func:`render`."""
    parsed = [parse_case(c) if isinstance(c, str) else c for c in cases]
    results = {"cases": [], "flower": {}, "flower_status": None, "chunk": chunk,
               "setting": (f"MLP {'-'.join(map(str, SIZES))} (ReLU, cross-entropy), {SAMPLES} samples "
                           f"per client, E = {EPOCHS}, B = {BATCH}, lr {LR}, float32, one thread")}
    for n, fraction in parsed:
        print(f"... {n} clients, fraction {fraction}", file=sys.stderr, flush=True)
        results["cases"].append(spawn_case(n, fraction, chunk, loop, case_timeout))
    if not flower:
        results["flower_status"] = "not run (--no-flower or --quick)"
        return results
    why = flower_available(flower_python)
    if why is not None:
        results["flower_status"] = why
        return results
    stopped = None
    for n in sorted({n for n, fraction in parsed if fraction == 1.0}):
        if stopped is not None:
            results["flower"][str(n)] = {"n": n, "error": f"not attempted: {stopped}"}
            continue
        print(f"... Flower, {n} clients (timeout {flower_timeout:.0f} s)", file=sys.stderr, flush=True)
        got = run_flower(flower_python, n, flower_timeout)
        results["flower"][str(n)] = got
        if "error" in got:
            stopped = f"{n} clients: {got['error']}"
    results["flower_status"] = "run"
    return results


def _size(n: int) -> str:
    e = math.log10(n)
    return f"10^{e:.0f}" if n >= 1000 and e.is_integer() else str(n)


def _sec(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return ""
    return f"{s * 1e3:.3g} ms" if s < 1 else f"{s:.3g} s"


def _gib(b: float | None) -> str:
    return "" if b is None else f"{b / GIB:.2f} GiB"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.3g}" if a and b else ""


def bar(results: dict) -> dict | None:
    """The bar's ratio: a 1 % round at the largest n over a full round at n / 100."""
    cases = [c for c in results["cases"] if "error" not in c]
    for c in sorted(cases, key=lambda c: -c["n"]):
        if c["fraction"] == 0.01:
            full = [f for f in cases if f["fraction"] == 1.0 and f["n"] == c["n"] // 100]
            if full:
                return {"n": c["n"], "full_n": full[0]["n"], "ratio": c["library_s"] / full[0]["library_s"],
                        "peak_rss": c["peak_rss"]}
    return None


def render(results: dict, markdown: bool = False) -> list[str]:
    """The table (Markdown or text) and the bar's line."""
    head = ["clients", "per round", "library s/round", "peak RSS", "library above data",
            "loop s/round", "loop / library", "loop diff", "Flower s/round", "Flower / library",
            "Flower peak", "Flower diff"]
    chunk = results.get("chunk")
    if chunk:
        head[3:3] = [f"chunks of {chunk}", "chunks equal"]
    rows = []
    for c in results["cases"]:
        name = _size(c["n"]) + ("" if c["fraction"] == 1.0 else f" ({c['fraction']:.0%})")
        if "error" in c:
            rows.append([name, c["error"]] + [""] * (len(head) - 2))
            continue
        fl = results["flower"].get(str(c["n"])) if c["fraction"] == 1.0 else None
        if fl is None:
            flower = ["", "", "", ""] if c["fraction"] == 1.0 else ["not run (sampling)", "", "", ""]
        elif "error" in fl:
            flower = [fl["error"], "", _gib(fl.get("peak_rss")), ""]
        else:
            flower = [_sec(fl["flower_s"]), _ratio(fl["flower_s"], c["library_s"]), _gib(fl["peak_rss"]),
                      f"{fl['max_diff']:.1e}" + ("" if fl["equal"] else " (NOT equal)")]
        loop = ([_sec(c["loop_s"]), _ratio(c["loop_s"], c["library_s"]),
                 f"{c['loop_max_diff']:.1e}" + ("" if c["loop_equal"] else " (NOT equal)")]
                if "loop_s" in c else ["", "", ""])
        row = [name, str(c["selected"]), _sec(c["library_s"]), _gib(c["peak_rss"]),
               _gib(c["library_round_bytes"]), *loop, *flower]
        if chunk:
            row[3:3] = ([_sec(c["chunked_s"]), str(c["chunked_equal"])] if "chunked_s" in c
                        else ["(one chunk)", ""])
        rows.append(row)
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(r) + " |" for r in rows]
    else:
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)), "-" * (sum(widths) + 2 * len(widths))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.append("")
    lines.append(f"Setting: {results['setting']}. Flower: {results['flower_status']}.")
    b = bar(results)
    if b is not None:
        ok = b["ratio"] <= 2.0 and b["peak_rss"] <= 8 * GIB
        lines.append(f"{'PASS' if ok else 'FAIL'}  a round at 1 % of {_size(b['n'])} clients / a full "
                     f"round of {_size(b['full_n'])}: {b['ratio']:.2f} (bar <= 2); peak RSS at "
                     f"{_size(b['n'])}: {_gib(b['peak_rss'])} (bar <= 8 GiB)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help=f"cases {' '.join(QUICK_CASES)}, no Flower")
    parser.add_argument("--cases", nargs="+", help=f"N or N:FRACTION (default {' '.join(FULL_CASES)})")
    parser.add_argument("--chunk", type=int, default=None, help="also time client_chunk_size=K")
    parser.add_argument("--no-loop", action="store_true", help="skip the per-client loop")
    parser.add_argument("--no-flower", action="store_true", help="skip Flower")
    parser.add_argument("--flower-python", type=Path, default=REPO / ".venv-flower" / "bin" / "python")
    parser.add_argument("--flower-timeout", type=float, default=300.0, help="seconds per size (default 300)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    parser.add_argument("--case", help=argparse.SUPPRESS)  # internal: one case, in this process
    args = parser.parse_args(argv)
    if args.case:
        n, fraction = parse_case(args.case)
        print(json.dumps(run_case(n, fraction, args.chunk, not args.no_loop)))
        return 0
    cases = args.cases or (QUICK_CASES if args.quick else FULL_CASES)
    t0 = time.perf_counter()
    results = measure(cases, chunk=args.chunk, loop=not args.no_loop,
                      flower=not (args.no_flower or args.quick), flower_python=args.flower_python,
                      flower_timeout=args.flower_timeout)
    print("\n".join(render(results)))
    print(f"total {time.perf_counter() - t0:.0f} s")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
