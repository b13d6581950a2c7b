"""benchmarks/run_all.py: the per-target job times from run logs, and the generated section;
profile_reviews_paper.py's memory sampler and client subset.

The benchmarks themselves are not run here (they time things; nothing about them is asserted).
"""

import importlib.util
import sys
import time
from pathlib import Path

import pytest

RUN_ALL = Path(__file__).resolve().parents[2] / "benchmarks" / "run_all.py"


def _script_module(name: str, path: Path):
    """Import a benchmark script as a module, registered while the tests use it."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(name, None)


@pytest.fixture(scope="module")
def run_all():
    yield from _script_module("benchmarks_run_all", RUN_ALL)


def _log(path: Path, *lines: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines))


R = "INFO networkedfl.pipeline.runner"
W = "INFO networkedfl.workflow: wrote results/x.csv"


def _fabricated_logs(root: Path) -> None:
    # target a: two run jobs (span 10.5 s and 4 s) and one tuning job (span 0.01 s,
    # compute 7 s: counts 7 s)
    _log(root / "logs/run/a/fedavg/seed-0.log",
         f"2026-11-25 00:00:00,000 {R}: running a, setting fedavg, seed 0",
         f"2026-11-25 00:00:10,400 {R}: finished a/fedavg/seed-0: 10 rows in 10.4 s",
         f"2026-11-25 00:00:10,500 {W}")
    _log(root / "logs/run/a/local/seed-1.log",
         f"2026-11-25 00:00:58,000 {R}: running a, setting local, seed 1",
         "Traceback-free continuation line without a timestamp",
         f"2026-11-25 00:01:02,000 {R}: finished a/local/seed-1: 3 rows in 3.9 s")
    _log(root / "logs/tuning/a/fedavg.log",
         f"2026-11-25 00:02:00,000 {R}: tuned a/fedavg point 0 (lr=0.1): validation loss 1.5 in 7.0 s",
         f"2026-11-25 00:02:00,010 {W}")
    # target b: one run job crossing midnight (span 30 s)
    _log(root / "logs/run/b/mean/seed-0.log",
         f"2026-11-24 23:59:45,000 {R}: running b, setting mean, seed 0",
         f"2026-11-25 00:00:15,000 {R}: finished b/mean/seed-0: 2 rows in 29.5 s")
    # target c: one tuning job of 2 s; an empty log and a log in the wrong place are ignored
    _log(root / "logs/tuning/c/mean.log",
         f"2026-11-25 01:00:00,000 {R}: tuned c/mean point 0 (): validation loss 2 in 2.0 s")
    _log(root / "logs/run/c/empty.log")
    _log(root / "logs/run/stray.log", f"2026-11-25 01:00:00,000 {R}: x in 99 s")
    _log(root / "logs/tables/a.log", f"2026-11-25 01:00:00,000 {R}: table in 50 s")


def test_target_times_sums_and_order(run_all, tmp_path):
    _fabricated_logs(tmp_path)
    targets = run_all.target_times(tmp_path)
    assert [t.target for t in targets] == ["b", "a", "c"]
    b, a, c = targets
    assert a.jobs == 3 and b.jobs == 1 and c.jobs == 1
    assert a.run_s == pytest.approx(10.5 + 4.0)
    assert a.tuning_s == pytest.approx(7.0)
    assert a.total_s == pytest.approx(21.5)
    assert a.compute_s == pytest.approx(10.4 + 3.9 + 7.0)
    assert b.run_s == pytest.approx(30.0) and b.tuning_s == 0
    assert c.total_s == pytest.approx(2.0) and c.run_s == 0


def test_render_lists_every_target_and_the_total(run_all, tmp_path):
    _fabricated_logs(tmp_path)
    results = {
        "quick": True, "elapsed_s": 1.0,
        "machine": {"date": "2026-11-25 00:00 UTC", "platform": "p", "processor": "x",
                    "cpu_count": 2, "cpu_usable": 2, "python": "3", "torch": "t",
                    "numpy": "n", "scipy": "s", "torch_threads": 1},
        "logs": {"workdir": str(tmp_path), "workdir_label": "w", "snakemake": [],
                 "targets": [run_all.asdict(t) for t in run_all.target_times(tmp_path)]},
    }
    text = run_all.render(results, markdown=True)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1].strip() for line in lines[1:]] == ["b", "a", "c", "**total (3 targets)**"]
    assert lines[-1].split("|")[2].strip() == "5"  # jobs
    assert "53.5 s" in lines[-1]  # 30 + 21.5 + 2


def test_snakemake_runs(run_all, tmp_path):
    _log(tmp_path / ".snakemake/log/2026-11-24T142747.snakemake.log",
         "  Command: snakemake all --cores 2", "Building DAG of jobs...",
         "[Tue Nov 24 14:27:50 2026]", "1 of 3 steps (33%) done",
         "[Tue Nov 24 14:28:03 2026]", "3 of 3 steps (100%) done",
         "Elapsed time: 0:01:16.408004")
    _log(tmp_path / ".snakemake/log/2026-11-24T150000.snakemake.log",
         "Nothing to be done (all requested files are present and up to date).")
    runs = run_all.snakemake_runs(tmp_path)
    assert len(runs) == 1
    assert runs[0]["command"] == "snakemake all --cores 2"
    assert (runs[0]["done"], runs[0]["steps"]) == (3, 3)
    assert runs[0]["elapsed_s"] == pytest.approx(76.408004)


def test_the_committed_section_names_no_path_of_the_machine(run_all, tmp_path, monkeypatch):
    """Issue 41 item 5: the recorded command's program is `snakemake`, a run directory outside
    the working directory is named by its option, and every other path of the machine is
    redacted before the section is written."""
    program = tmp_path / ".venv/lib/python3.11/site-packages/snakemake/__main__.py"
    _log(tmp_path / ".snakemake/log/2026-11-24T142747.snakemake.log",
         f"  Command: {program} --cores 2 gallery", "1 of 1 steps (100%) done", "Elapsed time: 0:00:05")
    assert run_all.snakemake_runs(tmp_path)[0]["command"] == "snakemake --cores 2 gallery"
    monkeypatch.chdir(tmp_path / ".snakemake")
    assert run_all._label(tmp_path) == "the directory given by --workdir"
    readme = tmp_path / "README.md"
    readme.write_text(f"{run_all.BEGIN_MARKER}\n{run_all.END_MARKER}\n")
    machine = {"date": "d", "platform": "p", "processor": "x", "cpu_count": 2, "cpu_usable": 2, "python": "3",
               "torch": "t", "numpy": "n", "scipy": "s", "torch_threads": 1}
    logs = {"workdir_label": str(tmp_path / "logs"), "targets": [], "snakemake": []}
    monkeypatch.setattr(run_all, "collect", lambda args: {"quick": True, "elapsed_s": 1.0, "machine": machine,
                                                          "logs": logs})
    assert run_all.main(["--only", "logs", "--workdir", str(tmp_path), "--markdown", str(readme)]) == 0
    text = readme.read_text()
    assert "job logs in ./logs)" in text and str(tmp_path) not in text


def test_parse_primal_dual_table(run_all):
    out = "\n".join([
        "GTV primal-dual benchmark",
        "",
        "  nodes     edges  mean deg   d  penalty  iters  ms/iter  sparse ms/iter  ratio",
        "-------------------------------------------------------------------------------",
        " 100000    999000      20.0   2   nlasso     20  31.0000          12.000   2.58",
        "",
        "two sparse products: 12.0 ms/iter, ratio 2.58, bandwidth 5.1 GB/s",
        "total wall time 9.0 s",
    ])
    parsed = run_all.parse_primal_dual(out)
    assert parsed["rows"] == [{"nodes": "100000", "penalty": "nlasso", "iters": "20",
                               "ms/iter": "31.0000", "sparse ms/iter": "12.000",
                               "ratio": "2.58"}]
    assert parsed["lines"] == ["two sparse products: 12.0 ms/iter, ratio 2.58, bandwidth 5.1 GB/s"]


def test_replace_section_keeps_the_rest(run_all, tmp_path):
    readme = tmp_path / "README.md"
    before = "# Title\n\nintro text\n\n"
    after = "\n\n## Later\n\nmore text\n"
    readme.write_text(f"{before}{run_all.BEGIN_MARKER}\nold table\n{run_all.END_MARKER}{after}")
    run_all.write_markdown(readme, "| new | table |\n")
    text = readme.read_text()
    assert text == f"{before}{run_all.BEGIN_MARKER}\n| new | table |\n{run_all.END_MARKER}{after}"
    run_all.write_markdown(readme, "second\n")  # idempotent markers: replaced again
    assert readme.read_text() == f"{before}{run_all.BEGIN_MARKER}\nsecond\n{run_all.END_MARKER}{after}"
    assert [p.name for p in tmp_path.iterdir()] == ["README.md"]  # no temporary left


def test_file_without_markers_names_the_file(run_all, tmp_path):
    readme = tmp_path / "NOTES.md"
    readme.write_text("# no markers here\n")
    with pytest.raises(run_all.MarkerError, match="NOTES.md"):
        run_all.write_markdown(readme, "x\n")
    assert readme.read_text() == "# no markers here\n"
    only_begin = tmp_path / "HALF.md"
    only_begin.write_text(f"a\n{run_all.BEGIN_MARKER}\nb\n")
    with pytest.raises(run_all.MarkerError, match="HALF.md"):
        run_all.write_markdown(only_begin, "x\n")
    # the command checks the markers before it measures anything
    with pytest.raises(run_all.MarkerError, match="NOTES.md"):
        run_all.main(["--markdown", str(readme), "--only", "logs", "--workdir", str(tmp_path)])


def test_parse_primal_dual_error_lines_are_shortened(run_all):
    out = "\n".join([
        "  nodes  penalty  ms/iter",
        "-------------------------",
        ' 100000   nlasso  ERROR: child exited with code 1:   File "x.py", line 3 | '
        "ValueError: n_iter must be a positive integer, got 0",
    ])
    parsed = run_all.parse_primal_dual(out)
    assert parsed["rows"] == []
    assert parsed["lines"] == [
        "100000 nlasso  ERROR: ValueError: n_iter must be a positive integer, got 0"]


def test_trees_section_measures_the_three_ways_and_renders_them(run_all):
    """bench_trees.py at the test sizes: the three ways give the same table and positive
    times, and run_all renders them with the ratios to one process; an error is shown, not raised."""
    trees = run_all._import_bench("bench_trees").measure("fedrelax_fig04_noniid_trees", quick=True)
    assert trees["equal"] is True and set(trees["seconds"]) == {"one process", "node threads", "worker processes"}
    assert all(s > 0 for s in trees["seconds"].values())
    machine = run_all.machine()
    text = run_all.render({"quick": True, "trees": trees, "machine": machine, "elapsed_s": 1.0}, markdown=True)
    assert "| worker processes |" in text and "the three tables equal: True" in text
    broken = run_all.render({"quick": True, "trees": {"error": "boom"}, "machine": machine, "elapsed_s": 1.0},
                            markdown=False)
    assert "error: boom" in broken


@pytest.fixture(scope="module")
def profile_reviews():
    yield from _script_module("benchmarks_profile_reviews_paper", RUN_ALL.parent / "profile_reviews_paper.py")


def test_resident_peak_sees_an_allocation_freed_inside_it(profile_reviews):
    """The CPU memory figure of profile_reviews_paper.py: a 256 MiB array touched and freed
    within the block is counted (the sampler follows the live memory, not the end state)."""
    import numpy as np

    with profile_reviews.ResidentPeak() as peak:
        block = np.ones(2**25)  # 256 MiB of float64, every page touched
        time.sleep(0.05)
        del block
    assert peak.above_start >= 200 * 2**20
    with profile_reviews.ResidentPeak() as idle:
        pass
    assert idle.above_start < 64 * 2**20


def test_first_clients_keep_the_vocabulary_and_their_own_data(profile_reviews):
    import numpy as np

    from networkedfl.experiments.gfl.reviews_nlp import ReviewTask, knn_similarity_graph

    rng = np.random.default_rng(0)
    n, v = 5, 7
    sim = rng.random((n, n))
    sim = (sim + sim.T) / 2
    np.fill_diagonal(sim, 1.0)
    task = ReviewTask(tuple(f"d{i}" for i in range(n)), vocabulary=("v",) * v,
                      train=tuple(np.full((2, 3), i) for i in range(n)), test=tuple(np.full((1, 3), i) for i in range(n)),
                      present=rng.random((n, v)) > 0.5, embedding=rng.standard_normal((v, 2)),
                      embedding_source="random", similarity=sim, graph=knn_similarity_graph(sim, 2))
    part = profile_reviews.first_clients(task, 3, 2)
    assert part.domains == ("d0", "d1", "d2") and part.vocabulary is task.vocabulary
    assert part.embedding is task.embedding and np.array_equal(part.present, task.present[:3])
    assert [int(t[0, 0]) for t in part.train] == [0, 1, 2] and len(part.test) == 3
    assert part.graph.n_nodes == 3 and np.array_equal(part.similarity, sim[:3, :3])
    with pytest.raises(SystemExit, match=r"--clients must lie in \[2, 5\], got 6"):
        profile_reviews.first_clients(task, 6, 2)


def test_fedavg_scale_measures_the_library_the_loop_and_the_bar(run_all, tmp_path):
    """bench_fedavg_scale.py at toy sizes: the per-client loop ends at the library's weights,
    the chunked runs equal one call, the bar's ratio is computed from the 1 % case and the
    full case at a hundredth of its clients, and a missing Flower environment is reported,
    not raised; run_all renders the section."""
    bench = run_all._import_bench("bench_fedavg_scale")
    res = bench.measure(("20", "2000:0.01"), chunk=8, flower_python=tmp_path / "no-flower" / "python")
    full, sampled = res["cases"]
    assert "error" not in full and "error" not in sampled, res["cases"]
    assert (full["selected"], sampled["selected"]) == (20, 20)
    for case in res["cases"]:
        assert case["loop_equal"] and case["chunked_equal"]
        assert case["library_s"] > 0 and case["loop_s"] > 0 and case["peak_rss"] > case["data_bytes"]
    assert res["flower_status"].startswith("not installed") and "pip install" in res["flower_status"]
    ratio = bench.bar(res)
    assert ratio["n"] == 2000 and ratio["full_n"] == 20
    assert ratio["ratio"] == sampled["library_s"] / full["library_s"]
    text = run_all.render({"quick": True, "fedavg_scale": res, "machine": run_all.machine(),
                           "elapsed_s": 1.0}, markdown=True)
    assert "| 2000 (1%) | 20 |" in text and "a round at 1 % of 2000 clients" in text
    broken = run_all.render({"quick": True, "fedavg_scale": {"error": "boom"}, "machine": run_all.machine(),
                             "elapsed_s": 1.0}, markdown=False)
    assert "error: boom" in broken


def test_sparse_scale_measures_every_phase_on_a_ring_and_a_knn_graph(run_all):
    """bench_sparse_scale.py at toy sizes, each in its subprocess: every phase timed with its
    peak memory, gossip keeps the mean, the k-NN graph's largest component is used; run_all
    renders the section and a failed case as an error row."""
    bench = run_all._import_bench("bench_sparse_scale")
    rows = bench.measure_all([200], "ring") + bench.measure_all([300], "knn")
    for row in rows:
        assert "error" not in row, row
        assert list(row["phases"]) == list(bench.PHASES)
        assert all(p["s"] >= 0 and p["peak_rss_mib"] >= row["rss_import_mib"] for p in row["phases"].values())
        assert row["gossip_mean_drift"] < 1e-12 and row["gtv_weights_finite"]
    assert rows[0]["nodes"] == rows[0]["edges"] == 200 and rows[0]["nnz_w"] == 600
    assert rows[1]["nodes"] <= 300 and rows[1]["edges"] >= 3 * rows[1]["nodes"]
    text = run_all.render({"quick": True, "sparse_scale": {"rows": rows}, "machine": run_all.machine(),
                           "elapsed_s": 1.0}, markdown=True)
    assert "bench_sparse_scale.py" in text and "| 200 | ring | 200 |" in text
    failed = bench.render([{"nodes": 10, "graph": "ring", "error": "exit 1: MemoryError"}])
    assert "exit 1: MemoryError" in failed[-1] and failed[-1].endswith("no")


@pytest.fixture(scope="module")
def bench_gtv_solver():
    yield from _script_module("benchmarks_bench_gtv_solver", RUN_ALL.parent / "bench_gtv_solver.py")


@pytest.mark.parametrize("penalty", ["nlasso", "l1", "mocha"])
@pytest.mark.parametrize("unlabelled", [0.0, 0.4])
def test_cvxpy_writes_the_same_objective_as_the_package(bench_gtv_solver, penalty, unlabelled):
    """bench_gtv_solver.py compares solvers on one objective: cvxpy's expression at any W is
    gtv_objective(W) (nodes without data contribute through the penalty only)."""
    pytest.importorskip("cvxpy")
    import numpy as np

    from networkedfl.gtv import gtv_objective

    graph, loss = bench_gtv_solver.make_problem(30, unlabelled, 3)
    problem, w = bench_gtv_solver.cvxpy_problem(graph, loss, penalty, 0.07)
    w.value = np.random.default_rng(0).standard_normal(w.shape)
    assert problem.objective.value == pytest.approx(gtv_objective(graph, loss, penalty, 0.07, w.value), rel=1e-12)


def test_gtv_solver_problem_shares_graph_and_data_across_fractions(bench_gtv_solver):
    import numpy as np

    full_graph, full = bench_gtv_solver.make_problem(200, 0.0, 5)
    part_graph, part = bench_gtv_solver.make_problem(200, 0.4, 5)
    assert np.array_equal(full_graph.edges, part_graph.edges) and full.mask.all()
    assert np.array_equal(full.data.features, part.data.features) and part.mask.sum() == 120


def test_gtv_solver_says_when_cvxpy_is_missing(bench_gtv_solver, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "clarabel" else real(name, *a))
    assert "clarabel not installed (pip install -e '.[bench]')" in bench_gtv_solver.cvxpy_missing()


def test_gtv_solver_section_renders_rows_bounds_and_errors(run_all):
    """run_all's rendering of bench_gtv_solver.py's JSON rows: a timed cell with its ratio, a
    cvxpy cell that hit the time limit (a bound), a cell whose own run failed."""
    rows = [
        {"nodes": 200, "unlabelled": 0.4, "lam": 0.001, "penalty": "nlasso",
         "ours": {"after": {"iters": 152, "seconds": 0.064, "restarts": 10}, "before": {"iters": 5590}},
         "cvxpy": {"seconds": 0.593, "solve_seconds": 0.4}, "ratio_total": 0.108, "cvxpy_excess": 5e-7},
        {"nodes": 20000, "unlabelled": 0.0, "lam": 0.3, "penalty": "nlasso",
         "ours": {"after": {"iters": 72, "seconds": 1.5, "restarts": 6}},
         "cvxpy": {"timeout": 600.0}, "ratio_total": 0.0025},
        {"nodes": 2000, "unlabelled": 0.0, "lam": 0.1, "penalty": "nlasso", "ours": {"error": "boom"}},
    ]
    compact = [run_all._solver_row(r) for r in rows]
    text = run_all.render({"quick": True, "elapsed_s": 1.0, "machine": run_all.machine(),
                           "gtv_solver": {"args": ["--quick"], "skip_cvxpy": None, "rows": compact}},
                          markdown=True)
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    assert lines[1].split(" | ")[3:] == ["5590", "152 (10)", "64 ms", "593 ms", "0.108 |"]
    assert "> 600 s" in lines[2] and "< 0.003" in lines[2]
    assert "error: boom" in lines[3]


COMPARE_BUILDS = RUN_ALL.parent / "compare_builds.py"


@pytest.fixture(scope="module")
def compare_builds():
    yield from _script_module("benchmarks_compare_builds", COMPARE_BUILDS)


def _build(root: Path, verdict: str, effect: float, table: str) -> Path:
    import json

    claims = [{"variant": "published", "claim": "A is below B", "verdict": verdict, "effect": effect,
               "interval": [effect / 2, effect * 2]},
              {"variant": "paper", "claim": "A is below B", "verdict": "holds", "effect": 0.5, "interval": [0.4, 0.6]}]
    (root / "results" / "claims").mkdir(parents=True)
    (root / "results" / "claims" / "t.json").write_text(json.dumps(claims))
    (root / "results" / "claims" / "t.json.provenance.json").write_text("{}")  # a sidecar, not claims
    (root / "results" / "tables").mkdir(parents=True)
    (root / "results" / "tables" / "t.csv").write_text(table)
    return root


def test_compare_builds_counts_moved_verdicts_and_changed_tables(compare_builds, tmp_path, capsys):
    """Issue 40 item 6: a verdict that moves between two builds is counted (exit 1) and named;
    a last-bit change of an effect is listed without moving anything (exit 0)."""
    first = _build(tmp_path / "a", "holds", 0.25, "x\n1.0\n")
    same = _build(tmp_path / "b", "holds", 0.25, "x\n1.0\n")
    assert compare_builds.main([str(first), str(same)]) == 0
    assert "verdicts that differ: 0" in capsys.readouterr().out
    nudged = _build(tmp_path / "c", "holds", 0.25000000000000006, "x\n1.0000000000000002\n")
    assert compare_builds.main([str(first), str(nudged)]) == 0
    out = capsys.readouterr().out
    assert "effect or interval differs: 1" in out and "differ: t" in out and "relative 2.2e-16" in out
    moved = _build(tmp_path / "d", "inconclusive", 0.9, "x\n1.0\n")
    assert compare_builds.main([str(first), str(moved)]) == 1
    assert "verdict moved: t [published] 'A is below B': holds -> inconclusive" in capsys.readouterr().out
