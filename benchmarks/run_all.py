"""The headline benchmark figures, each a ratio of two times measured in the same run.

One command prints them all (and, with ``--markdown FILE``, writes them as the generated
section of ``benchmarks/README.md``):

* **batched vs a per-client Python loop** for FedAvg (``bench_baselines.py``), FedRelax
  Algorithm 2 (``bench_fedrelax.py``) and DFL-SGD (``bench_graph_aware.py``): the scripts'
  own set-ups and reference loops, imported.  The two alternatives are timed *alternately*
  in one process (batched, loop, batched, loop, ...), after one untimed warm-up of each, so
  that a change of machine load affects both; the figures are the medians per round
  (iteration) and the speed-up is loop / batched;
* **decision-tree FedRelax** (``bench_trees.py``): one repetition of Fig. 4 (``--quick``: at
  the test profile's sizes) in one process, with the nodes' fits in two threads, and in two
  worker processes (the pipeline's way), timed in turn after a warm-up; ratios to one process;
* **FedAvg at scale** (``bench_fedavg_scale.py``): seconds per round and peak memory of
  FedAvg (MLP 20-64-10, 200 samples per client) against a per-client torch loop on the
  same draws, each case in its own process (``--quick``: 100 and 10^3 clients, 1 % of 10^4;
  full: 100, 10^3, 10^4 clients and 1 % of 10^5, with Flower's simulation engine where
  ``.venv-flower`` exists, 120 s per size), and the issue's bar (a 1 % round over a full
  round at a hundredth of the clients);
* **sparse graphs at scale** (``bench_sparse_scale.py``): DFL-SGD, gossip, decentralised
  FedAvg and a few GTV primal-dual iterations on a ring, wall time and peak memory per
  phase, each size in its own process (``--quick``: 10^4 nodes; full: 10^5 and 10^6), and
  the issue's bar (within 8 GiB at 10^6 nodes);
* **GTV primal-dual**: ``bench_primal_dual.py`` run as a subprocess (10^5 nodes; full mode:
  its default sizes); its table's time columns (``ms/iter`` and, where the script prints
  them, the sparse-product, ratio and bandwidth columns) are parsed loosely, and its lines
  that mention the sparse products, a ratio or the bandwidth are shown verbatim;
* **GTV solver to a certified gap**: ``bench_gtv_solver.py`` run as a subprocess (``--quick``:
  n = 200, lambda 0.001 and 0.3; full mode: n = 200 and 2,000, the four lambda values of its
  grid), its ``--json`` rows shown as iterations of the fixed-step and the restarted method
  and the times of the restarted method and of cvxpy + Clarabel, with their ratio;
* **time per target of a reproduction**, from the job logs of a Snakemake run in
  ``--workdir`` (default: the repository root): every job log under
  ``logs/run/<target>/`` and ``logs/tuning/<target>/`` starts and ends with a timestamped
  line (``2026-11-25 00:55:02,678 INFO ...``); a job's *span* is its last minus its first
  timestamp and its *compute* time the sum of the runner's ``... in 31.1 s`` figures.  A
  tuning job logs only after its computation, so its span misses it: a job counts as
  ``max(span, compute)``.  Every target's summed job time is shown, largest first, with
  the total over all targets, and the Snakemake runs recorded in ``.snakemake/log/``.

Nothing is asserted: the exit code does not depend on the figures.

Usage::

    .venv/bin/python benchmarks/run_all.py --quick                  # a few minutes
    .venv/bin/python benchmarks/run_all.py                          # full, several minutes
    .venv/bin/python benchmarks/run_all.py --markdown benchmarks/README.md
    .venv/bin/python benchmarks/run_all.py --quick --only logs --workdir /path/to/run
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BEGIN_MARKER = "<!-- benchmarks:begin -->"
END_MARKER = "<!-- benchmarks:end -->"
SECTIONS = ("loops", "trees", "fedavg_scale", "sparse_scale", "primal_dual", "gtv_solver", "logs")
#: bench_fedavg_scale.py's cases in run_all's full mode (the script alone also runs 10 % of 10^5)
FEDAVG_SCALE_CASES = ("100", "1e3", "1e4", "1e5:0.01")

# ---------------------------------------------------------------------------------------
# Run logs: time per target
# ---------------------------------------------------------------------------------------

_TIMESTAMP = re.compile(r"^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}),(\d{3})\b")
_COMPUTE = re.compile(r"\bin (\d+(?:\.\d+)?) s\s*$")


@dataclass
class JobTime:
    """One job log: where it is, its span (last - first timestamp) and compute seconds."""

    path: str
    kind: str  # "run" or "tuning"
    target: str
    span_s: float
    compute_s: float

    @property
    def seconds(self) -> float:
        return max(self.span_s, self.compute_s)


@dataclass
class TargetTime:
    """The jobs of one target, summed."""

    target: str
    jobs: int = 0
    run_s: float = 0.0
    tuning_s: float = 0.0
    compute_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.run_s + self.tuning_s


def _parse_timestamp(line: str) -> dt.datetime | None:
    m = _TIMESTAMP.match(line)
    if m is None:
        return None
    stamp = dt.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
    return stamp + dt.timedelta(milliseconds=int(m.group(2)))


def parse_job_log(path: Path, kind: str, target: str) -> JobTime | None:
    """The span and compute time of one job log; ``None`` without any timestamped line."""
    stamps: list[dt.datetime] = []
    compute = 0.0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for line in fh:
            stamp = _parse_timestamp(line)
            if stamp is None:
                continue
            stamps.append(stamp)
            m = _COMPUTE.search(line)
            if m:
                compute += float(m.group(1))
    if not stamps:
        return None
    span = max((stamps[-1] - stamps[0]).total_seconds(), 0.0)
    return JobTime(str(path), kind, target, span, compute)


def job_times(workdir: Path) -> list[JobTime]:
    """Every job log under ``workdir/logs/{run,tuning}/<target>/``."""
    jobs = []
    for kind in ("run", "tuning"):
        root = Path(workdir) / "logs" / kind
        if not root.is_dir():
            continue
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if not path.is_file() or len(rel.parts) < 2:
                continue
            job = parse_job_log(path, kind, rel.parts[0])
            if job is not None:
                jobs.append(job)
    return jobs


def target_times(workdir: Path) -> list[TargetTime]:
    """Job time summed per target, largest first (ties by name)."""
    totals: dict[str, TargetTime] = {}
    for job in job_times(workdir):
        t = totals.setdefault(job.target, TargetTime(job.target))
        t.jobs += 1
        t.compute_s += job.compute_s
        if job.kind == "run":
            t.run_s += job.seconds
        else:
            t.tuning_s += job.seconds
    return sorted(totals.values(), key=lambda t: (-t.total_s, t.target))


_SMK_STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d{2}:\d{2}:\d{2} \d{4})\]")
_SMK_STEPS = re.compile(r"^(\d+) of (\d+) steps \((\d+)%\) done")
#: the program of a recorded command, as the venv's absolute path (`.venv/bin/snakemake`, or its
#: `snakemake/__main__.py` under `python -m`): written as `snakemake`
_SMK_PROGRAM = re.compile(r"^\S*/snakemake(?:/__main__\.py)?(?=\s|$)")
_SMK_ELAPSED = re.compile(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d{2}):(\d{2}(?:\.\d+)?)")


def snakemake_runs(workdir: Path) -> list[dict]:
    """The Snakemake runs in ``workdir/.snakemake/log/`` that executed at least one job."""
    runs = []
    root = Path(workdir) / ".snakemake" / "log"
    for path in sorted(root.glob("*.snakemake.log")) if root.is_dir() else []:
        command, steps, elapsed, stamps = "", None, None, []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            s = line.strip()
            if s.startswith("Command:"):
                command = _SMK_PROGRAM.sub("snakemake", s.removeprefix("Command:").strip())
            elif m := _SMK_STEPS.match(s):
                steps = (int(m.group(1)), int(m.group(2)))
            elif m := _SMK_ELAPSED.match(s):
                days, h, mi, sec = m.groups()
                elapsed = int(days or 0) * 86400 + int(h) * 3600 + int(mi) * 60 + float(sec)
            elif m := _SMK_STAMP.match(s):
                try:
                    stamps.append(dt.datetime.strptime(" ".join(m.group(1).split()),
                                                       "%a %b %d %H:%M:%S %Y"))
                except ValueError:
                    pass
        if steps is None or steps[0] == 0:
            continue
        if elapsed is None and len(stamps) >= 2:
            elapsed = (stamps[-1] - stamps[0]).total_seconds()
        runs.append({"log": path.name, "command": command, "done": steps[0],
                     "steps": steps[1], "elapsed_s": elapsed})
    return runs


def _measure(workdir: Path) -> dict | None:
    """What ``benchmarks/measure_run.py`` wrote for the last run in ``workdir``, if anything."""
    path = Path(workdir) / ".snakemake" / "networkedfl-measure.json"
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------
# Batched vs per-client loop
# ---------------------------------------------------------------------------------------


@dataclass
class Ratio:
    """Batched vs loop, per round (or iteration), timed alternately in one process."""

    name: str
    script: str
    setting: str
    unit: str
    batched_s: float
    loop_s: float
    repeats: int
    batched_times: list[float] = field(default_factory=list)
    loop_times: list[float] = field(default_factory=list)

    @property
    def speedup(self) -> float:
        return self.loop_s / self.batched_s if self.batched_s > 0 else float("nan")


def interleaved(batched: Callable[[int], object], n_batched: int,
                loop: Callable[[int], object], n_loop: int,
                repeats: int) -> tuple[list[float], list[float]]:
    """Seconds per round of each alternative, timed alternately after a warm-up of each."""
    batched(1)
    loop(1)
    tb, tl = [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        batched(n_batched)
        tb.append((time.perf_counter() - t0) / n_batched)
        t0 = time.perf_counter()
        loop(n_loop)
        tl.append((time.perf_counter() - t0) / n_loop)
    return tb, tl


def _ratio(name, script, setting, unit, tb, tl) -> Ratio:
    return Ratio(name, script, setting, unit, statistics.median(tb), statistics.median(tl),
                 len(tb), tb, tl)


def _import_bench(name: str):
    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    return __import__(name)


def ratio_fedavg(quick: bool) -> Ratio:
    import torch

    bb = _import_bench("bench_baselines")
    from networkedfl.algorithms import fedavg
    from networkedfl.nn import linear_regression

    data, model = bb.make_data(), linear_regression(bb.DIM)
    rb, rl, reps = (5, 1, 3) if quick else (20, 3, 5)
    tb, tl = interleaved(
        lambda t: fedavg(model, data, n_rounds=t, local_epochs=1, batch_size=bb.BATCH,
                         lr=bb.LR, seed=0, dtype=data.dtype), rb,
        lambda t: bb.loop_fedavg(model, data, t, torch.Generator().manual_seed(0)), rl, reps)
    setting = (f"{bb.N_CLIENTS} clients, linear d = {bb.DIM}, m = {bb.SAMPLES}, E = 1, "
               f"B = {bb.BATCH}, float64")
    return _ratio("FedAvg", "bench_baselines.py", setting, "round", tb, tl)


def ratio_fedrelax(quick: bool) -> Ratio:
    import torch

    bf = _import_bench("bench_fedrelax")
    from networkedfl.fedrelax import fedrelax_linear

    data, problem, init = bf.setup(torch.float32)
    loop = bf.NodeLoop(data, init, torch.float32)
    rb, rl, reps = (50, 2, 3) if quick else (200, 10, 5)
    tb, tl = interleaved(
        lambda t: fedrelax_linear(problem, bf.ALPHA, n_iter=t, lr=bf.LR, init=init), rb,
        loop.run, rl, reps)
    setting = (f"{data.n_nodes} nodes, {data.graph.n_edges} edges, d = {bf.DIM}, "
               f"m = {bf.M_LOCAL}, m' = {bf.M_PUBLIC}, RMSprop, float32")
    return _ratio("FedRelax (Alg. 2)", "bench_fedrelax.py", setting, "iteration", tb, tl)


def ratio_dfl_sgd(quick: bool) -> Ratio:
    import torch

    bg = _import_bench("bench_graph_aware")
    runs, n, model, data = bg.make_runs(torch.float64)
    rb, rl, reps = (5, 2, 3) if quick else (20, 4, 5)
    tb, tl = interleaved(runs["dfl_sgd"], rb, runs["dfl_sgd (python loop)"], rl, reps)
    setting = (f"{n} clients, MLP P = {model.n_params}, {data.max_samples} samples, "
               f"tau = {bg.TAU}, float64")
    return _ratio("DFL-SGD", "bench_graph_aware.py", setting, "round", tb, tl)


LOOP_BENCHES = (ratio_fedavg, ratio_fedrelax, ratio_dfl_sgd)

# ---------------------------------------------------------------------------------------
# Primal-dual: bench_primal_dual.py as a subprocess, parsed loosely
# ---------------------------------------------------------------------------------------

_PD_KEEP = re.compile(r"sparse|\bratios?\b|bandwidth|GB/s|products?\b|\bERROR\b", re.IGNORECASE)
_PD_COLUMNS = re.compile(r"^(nodes|penalty|iters)$|ms/iter|sparse|product|\bratio|bandwidth|GB/s",
                         re.IGNORECASE)


def parse_primal_dual(output: str) -> dict:
    """Table rows (selected columns) and the lines about the sparse products, loosely."""
    lines = output.splitlines()
    rows: list[dict[str, str]] = []
    header: list[str] | None = None
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        if header is None:
            if "nodes" in cells and any("ms/iter" in c for c in cells):
                header = cells
            continue
        if not line.strip():
            if rows:
                header = None  # the table ended
            continue
        if cells[0].isdigit() and len(cells) == len(header):
            rows.append({h: c for h, c in zip(header, cells, strict=True)
                         if _PD_COLUMNS.search(h)})
    keep = [_short_error(line.rstrip()) for line in lines
            if _PD_KEEP.search(line) and line.strip()]
    # the table's header mentions the columns; it is shown as the table, not verbatim
    keep = [line for line in keep if not ("ms/iter" in line and "nodes" in line)]
    return {"rows": rows, "lines": keep}


def _short_error(line: str) -> str:
    """A case's ERROR line without the traceback: its case and the last message."""
    head, sep, rest = line.partition("ERROR:")
    if not sep or head.lstrip().startswith(("FAIL", "PASS")):
        return line
    return f"{' '.join(head.split())}  ERROR: {rest.split(' | ')[-1].strip()}"


def run_primal_dual(quick: bool, timeout: float) -> dict:
    script = HERE / "bench_primal_dual.py"
    args = ["--quick", "--sizes", "1e5", "--repeats", "1"] if quick else []
    cmd = [sys.executable, str(script), *args]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
    except subprocess.TimeoutExpired:
        return {"args": args, "error": f"timed out after {timeout:.0f} s", "rows": [],
                "lines": []}
    out = parse_primal_dual(proc.stdout)
    out["args"] = args
    out["wall_s"] = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
        out["error"] = f"exit code {proc.returncode}: {tail}"
    elif not out["rows"] and not out["lines"]:
        out["error"] = "no table or sparse-product lines found in its output"
        out["lines"] = proc.stdout.strip().splitlines()[-15:]
    return out


# ---------------------------------------------------------------------------------------
# GTV solver: bench_gtv_solver.py as a subprocess, its JSON rows
# ---------------------------------------------------------------------------------------

#: bench_gtv_solver.py's arguments: the full grid's 20,000 nodes take cvxpy long (see
#: benchmarks/README.md); run the script itself for them.
GTV_SOLVER_ARGS = {True: ["--quick"], False: ["--sizes", "200,2000"]}


def run_gtv_solver(quick: bool, timeout: float) -> dict:
    """bench_gtv_solver.py's rows (``--json``) in a compact form, or the error."""
    import tempfile

    args = GTV_SOLVER_ARGS[quick]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(HERE / "bench_gtv_solver.py"), *args, "--json", str(path)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO)
        except subprocess.TimeoutExpired:
            return {"args": args, "error": f"timed out after {timeout:.0f} s", "rows": []}
        if proc.returncode != 0 or not path.exists():
            tail = " | ".join(proc.stderr.strip().splitlines()[-3:])
            return {"args": args, "error": f"exit code {proc.returncode}: {tail}", "rows": []}
        data = json.loads(path.read_text(encoding="utf-8"))
    return {"args": args, "skip_cvxpy": data["skip_cvxpy"], "rows": [_solver_row(r) for r in data["rows"]]}


def _solver_row(row: dict) -> dict:
    ours, cvx = row["ours"], row.get("cvxpy", {})
    out = {"nodes": row["nodes"], "unlabelled": row["unlabelled"], "lam": row["lam"]}
    if "after" not in ours:
        return {**out, "error": ours.get("error") or f"timed out after {ours.get('timeout')} s"}
    out.update(after_iters=ours["after"]["iters"], after_s=ours["after"]["seconds"],
               restarts=ours["after"]["restarts"], before_iters=ours.get("before", {}).get("iters"))
    if "seconds" in cvx:
        out.update(cvxpy_s=cvx["seconds"], ratio=row["ratio_total"], cvxpy_excess=row["cvxpy_excess"])
    elif "timeout" in cvx:
        out.update(cvxpy_timeout=cvx["timeout"], ratio_bound=row["ratio_total"])
    return out


def _solver_cells(r: dict) -> list[str]:
    head = [str(r["nodes"]), f"{r['unlabelled']:.0%}", f"{r['lam']:g}"]
    if "error" in r:
        return [*head, f"error: {r['error']}", "", "", "", ""]
    before = "" if r["before_iters"] is None else str(r["before_iters"])
    if "cvxpy_s" in r:
        cvx, ratio = f"{_ms(r['cvxpy_s'])} ms", f"{r['ratio']:.3f}"
    elif "cvxpy_timeout" in r:
        cvx, ratio = f"> {r['cvxpy_timeout']:.0f} s", f"< {r['ratio_bound']:.3f}"
    else:
        cvx, ratio = "-", "-"
    return [*head, before, f"{r['after_iters']} ({r['restarts']})", f"{_ms(r['after_s'])} ms", cvx, ratio]


# ---------------------------------------------------------------------------------------
# Machine, text and Markdown
# ---------------------------------------------------------------------------------------


def machine() -> dict:
    import numpy
    import scipy
    import torch

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "cpu_usable": usable,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "torch_threads": torch.get_num_threads(),
    }


def _ms(seconds: float) -> str:
    ms = 1e3 * seconds
    return f"{ms:.3g}" if ms < 100 else f"{ms:.0f}"


def _dur(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.1f} s"
    if seconds < 7200:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.2f} h"


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out


def _text_table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=True)]

    numeric = [bool(rows) and all(not r[i] or r[i][0].isdigit() for r in rows)
               for i in range(len(header))]

    def fmt(row: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w)
                         for c, w, num in zip(row, widths, numeric, strict=True))

    return [fmt(header), "-" * (sum(widths) + 2 * (len(widths) - 1)), *map(fmt, rows)]


def _heading(title: str, section: dict, markdown: bool) -> list[str]:
    """A section's title, followed by its error where it failed."""
    out = [f"**{title}**" if markdown else title + ":", ""]
    return out + ([f"error: {section['error']}", ""] if "error" in section else [])


def render(results: dict, markdown: bool) -> str:
    """The results as plain text (``markdown=False``) or as benchmarks/README.md's generated section."""
    table = _md_table if markdown else _text_table
    m = results["machine"]
    mode = "quick" if results["quick"] else "full"
    out: list[str] = []
    mach = (f"{m['platform']}, {m['processor']}, {m['cpu_count']} CPUs ({m['cpu_usable']} usable); "
            f"python {m['python']}, torch {m['torch']}, numpy {m['numpy']}, scipy {m['scipy']}")
    cmd = "`.venv/bin/python benchmarks/run_all.py" + (" --quick" if results["quick"] else "")
    if markdown:
        out += [f"_Generated by {cmd} --markdown benchmarks/README.md` ({mode} mode, "
                f"{results['elapsed_s']:.0f} s) on {m['date']}; do not edit by hand._", "",
                f"Machine: {mach}.", ""]
    else:
        out += [f"Headline benchmarks ({mode} mode), {m['date']}", f"machine: {mach}", ""]

    if "loops" in results:
        title = ("Batched vs a per-client Python loop (one thread; the two timed alternately "
                 "in one process, medians)")
        out += [f"**{title}**" if markdown else title + ":", ""]
        rows = []
        for r in results["loops"]:
            if "error" in r:
                rows.append([r["name"], r["error"], "", "", ""])
                continue
            rat = Ratio(**r)
            rows.append([f"{rat.name} ({rat.script})" if markdown else rat.name, rat.setting,
                         f"{_ms(rat.batched_s)} ms/{rat.unit}", f"{_ms(rat.loop_s)} ms/{rat.unit}",
                         f"{rat.speedup:.0f}x" if rat.speedup >= 10 else f"{rat.speedup:.1f}x"])
        out += table(["algorithm", "setting", "batched", "per-client loop", "speed-up"], rows)
        out.append("")

    if "trees" in results:
        tr = results["trees"]
        out += _heading("Decision-tree FedRelax, one repetition of Fig. 4 (bench_trees.py)", tr, markdown)
        if "error" not in tr:
            one = tr["seconds"]["one process"]
            rows = [[way, f"{sec:.2f} s", f"{one / sec:.2f}"] for way, sec in tr["seconds"].items()]
            out += table(["way", "time", "one process / this"], rows)
            out += ["", f"{'Test' if tr['quick'] else 'Default'} scale, {tr['workers']} workers "
                    f"(threads or processes); the three tables equal: {tr['equal']}.", ""]

    if "fedavg_scale" in results:
        fs = results["fedavg_scale"]
        out += _heading("FedAvg at scale, vs a per-client torch loop and Flower (bench_fedavg_scale.py)",
                        fs, markdown)
        if "error" not in fs:
            out += _import_bench("bench_fedavg_scale").render(fs, markdown=markdown)
            out.append("")

    if "sparse_scale" in results:
        ss = results["sparse_scale"]
        out += _heading("DFL-SGD, gossip and GTV on a sparse ring (bench_sparse_scale.py)", ss, markdown)
        if "error" not in ss:
            out += _import_bench("bench_sparse_scale").render(ss["rows"], markdown=markdown)
            out += ["", "Seconds of each phase (peak RSS of the process after it), one thread, "
                    "each size in its own process after a warm-up on 16 nodes.", ""]

    if "primal_dual" in results:
        pd = results["primal_dual"]
        args = " ".join(pd.get("args", []))
        title = f"GTV primal-dual (bench_primal_dual.py {args})".replace(" )", ")")
        out += [f"**{title}**" if markdown else title + ":", ""]
        if pd.get("error"):
            out += [f"error: {pd['error']}", ""]
        if pd["rows"]:
            cols = list(pd["rows"][0])
            out += table(cols, [[row.get(c, "") for c in cols] for row in pd["rows"]])
            out.append("")
        if pd["lines"]:
            out += (["```text", *pd["lines"], "```"] if markdown
                    else ["  " + line.strip() for line in pd["lines"]])
            out.append("")

    if "gtv_solver" in results:
        gs = results["gtv_solver"]
        title = f"GTV solver to a certified relative gap of 1e-6 (bench_gtv_solver.py {' '.join(gs['args'])})"
        out += [f"**{title}**" if markdown else title + ":", ""]
        if gs.get("error"):
            out += [f"error: {gs['error']}", ""]
        if gs.get("skip_cvxpy"):
            out += [gs["skip_cvxpy"], ""]
        if gs["rows"]:
            head = ["nodes", "without data", "lambda", "iterations, fixed steps", "iterations (restarts), restarted",
                    "restarted", "cvxpy + Clarabel", "restarted / cvxpy"]
            out += table(head, [_solver_cells(r) for r in gs["rows"]])
            out += ["", "One SBM per node count (bench_gtv_solver.py's docstring); each method stops on its own "
                    "rule; times of whole calls, one thread.", ""]

    if "logs" in results:
        lg = results["logs"]
        where = lg["workdir_label"]
        title = f"Reproduction time per target (job logs in {where})"
        out += [f"**{title}**" if markdown else title + ":", ""]
        targets = [TargetTime(**t) for t in lg["targets"]]
        if not targets:
            out += [f"No job logs under {where}/logs/run or logs/tuning.", ""]
        else:
            rows = [[t.target, str(t.jobs), _dur(t.run_s), _dur(t.tuning_s), _dur(t.compute_s),
                     _dur(t.total_s)] for t in targets]
            total = TargetTime(f"total ({len(targets)} targets)")
            for t in targets:
                total.jobs += t.jobs
                total.run_s += t.run_s
                total.tuning_s += t.tuning_s
                total.compute_s += t.compute_s
            rows.append([f"**{total.target}**" if markdown else total.target, str(total.jobs),
                         _dur(total.run_s), _dur(total.tuning_s), _dur(total.compute_s),
                         _dur(total.total_s)])
            head = ["target", "jobs", "run jobs", "tuning jobs", "compute", "job time"]
            out += table(head, rows)
            out += ["", "Job time: last minus first timestamp of each job log, or the "
                    "runner's compute time where larger (tuning logs); summed over the jobs, "
                    "not wall-clock time of a parallel run.", ""]
        smk = lg["snakemake"]
        if smk:
            last = smk[-1]
            elapsed = [r["elapsed_s"] for r in smk if r["elapsed_s"] is not None]
            out += [f"Snakemake runs that executed jobs (.snakemake/log): {len(smk)}, "
                    f"{_dur(sum(elapsed))} wall-clock in all; the latest ({last['log']}): "
                    f"{last['done']} of {last['steps']} steps in {_dur(last['elapsed_s'])}, "
                    f"`{last['command']}`.", ""]
        measured = lg.get("measure")
        if measured:
            out += [f"Measured by `benchmarks/measure_run.py` (`{measured['command']}`, finished "
                    f"{measured['finished'][:16]}): {_dur(measured['wall_s'])} wall-clock on {measured['cpus']} CPUs; "
                    f"CPU time of everything it ran {_dur(measured['all_cpu_s'])}, of the Snakemake process itself "
                    f"{_dur(measured['own_cpu_s'])} ({100 * (measured['own_share'] or 0):.1f} %).", ""]
    return "\n".join(out).rstrip() + "\n"


class MarkerError(ValueError):
    """The file lacks the begin/end markers of the generated section."""


def replace_section(text: str, section: str, name: str = "<text>") -> str:
    """``text`` with everything between the two markers replaced by ``section``."""
    begin = text.find(BEGIN_MARKER)
    end = text.find(END_MARKER, begin + len(BEGIN_MARKER)) if begin >= 0 else -1
    if begin < 0 or end < 0:
        raise MarkerError(f"{name}: no '{BEGIN_MARKER}' ... '{END_MARKER}' markers (in this "
                          "order); add them where the generated section belongs")
    head = text[: begin + len(BEGIN_MARKER)]
    return head + "\n" + section.strip("\n") + "\n" + text[end:]


def write_markdown(path: Path, section: str) -> None:
    """Replace the generated section of ``path``, atomically (the pipeline's writer)."""
    from networkedfl.io import atomic_write

    path = Path(path)
    new = replace_section(path.read_text(encoding="utf-8"), section, str(path))
    atomic_write(path, lambda tmp: Path(tmp).write_text(new, encoding="utf-8"))


# ---------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------


def _label(workdir: Path) -> str:
    if workdir.resolve() == REPO:
        return "the repository root"
    try:
        return str(workdir.resolve().relative_to(Path.cwd()))
    except ValueError:  # not the checkout's path: the generated section is committed
        return "the directory given by --workdir"


def collect(args: argparse.Namespace) -> dict:
    t0 = time.perf_counter()
    results: dict = {"quick": args.quick}
    only = set(args.only or SECTIONS)
    if "loops" in only:
        import torch

        torch.set_num_threads(1)
        results["loops"] = []
        for bench in LOOP_BENCHES:
            print(f"... {bench.__name__}", file=sys.stderr, flush=True)
            try:
                results["loops"].append(asdict(bench(args.quick)))
            except Exception as exc:  # report and go on: never fail on a benchmark
                results["loops"].append({"name": bench.__name__, "error": repr(exc)})
    if "trees" in only:
        print("... bench_trees.py", file=sys.stderr, flush=True)
        try:
            results["trees"] = _import_bench("bench_trees").measure("fedrelax_fig04_noniid_trees", args.quick)
        except Exception as exc:  # report and go on: never fail on a benchmark
            results["trees"] = {"error": repr(exc)}
    if "fedavg_scale" in only:
        print("... bench_fedavg_scale.py", file=sys.stderr, flush=True)
        try:
            bench = _import_bench("bench_fedavg_scale")
            results["fedavg_scale"] = bench.measure(bench.QUICK_CASES if args.quick else FEDAVG_SCALE_CASES,
                                                    flower=not args.quick, flower_timeout=120.0)
        except Exception as exc:  # report and go on: never fail on a benchmark
            results["fedavg_scale"] = {"error": repr(exc)}
    if "sparse_scale" in only:
        print("... bench_sparse_scale.py", file=sys.stderr, flush=True)
        try:
            bench = _import_bench("bench_sparse_scale")
            sizes = bench.QUICK_SIZES if args.quick else bench.FULL_SIZES
            results["sparse_scale"] = {"rows": bench.measure_all(sizes, "ring", args.timeout)}
        except Exception as exc:  # report and go on: never fail on a benchmark
            results["sparse_scale"] = {"error": repr(exc)}
    if "primal_dual" in only:
        print("... bench_primal_dual.py", file=sys.stderr, flush=True)
        results["primal_dual"] = run_primal_dual(args.quick, args.timeout)
    if "gtv_solver" in only:
        print("... bench_gtv_solver.py", file=sys.stderr, flush=True)
        results["gtv_solver"] = run_gtv_solver(args.quick, args.timeout)
    if "logs" in only:
        results["logs"] = {
            "workdir": str(args.workdir),
            "workdir_label": _label(args.workdir),
            "targets": [asdict(t) for t in target_times(args.workdir)],
            "snakemake": snakemake_runs(args.workdir),
            "measure": _measure(args.workdir),
        }
    results["machine"] = machine()
    results["elapsed_s"] = time.perf_counter() - t0
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short timings (a few minutes)")
    parser.add_argument("--workdir", type=Path, default=REPO,
                        help="directory of a Snakemake run (its logs/ and .snakemake/log/); "
                        "default: the repository root")
    parser.add_argument("--markdown", type=Path, metavar="FILE",
                        help=f"replace the text between {BEGIN_MARKER} and {END_MARKER} in FILE")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument("--only", nargs="+", choices=SECTIONS, help="run only these parts")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="seconds allowed for bench_primal_dual.py and for bench_gtv_solver.py (default 1800)")
    args = parser.parse_args(argv)
    if args.markdown is not None:  # fail on a file without markers before measuring
        replace_section(args.markdown.read_text(encoding="utf-8"), "", str(args.markdown))
    t0 = time.perf_counter()
    results = collect(args)
    print(render(results, markdown=False))
    print(f"total {time.perf_counter() - t0:.1f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    if args.markdown is not None:  # committed: no path of this machine (the checkouts become ".")
        from networkedfl.io import redact_paths

        write_markdown(args.markdown, redact_paths(render(results, markdown=True), roots=[REPO, args.workdir]))
        print(f"wrote the generated section of {args.markdown}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except MarkerError as exc:
        sys.exit(f"error: {exc}")
