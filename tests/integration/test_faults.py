"""Faults a long reproduction meets: interrupted runs, reruns, changed parameters, bad input.

Each test runs the real Snakemake workflow in a scratch directory on the small star-graph
sweep (gtv_fig13_star_lambda).  The interruption tests stop a job in the middle of writing
an output through the writers' fault-injection pause (``networkedfl.io.PAUSE_ENV``);
``tests/mutations.py`` checks that they fail when the atomic writer or the default
profile's ``rerun-incomplete`` is taken away.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from networkedfl.io import PAUSE_ENV

TARGET = "gtv_fig13_star_lambda"
BASE = {"experiments": {TARGET: {"repetitions": 2, "n_iter": 3000, "n_lam": 8}}}
WRITE_PAUSE = 8  # seconds each write of an interrupted run waits before its rename
PROVENANCE = ".provenance.json"


def _command(repo, workdir, *args, overlays=()):
    """Snakemake on the test profile with ``BASE``, then ``overlays`` (dicts) merged over it."""
    files = [repo / "config" / "test.yaml"]
    for i, overlay in enumerate([BASE, *overlays]):
        files.append(Path(workdir) / f"overlay-{i}.yaml")
        files[-1].parent.mkdir(parents=True, exist_ok=True)
        files[-1].write_text(yaml.safe_dump(overlay))
    return [sys.executable, "-m", "snakemake", "--snakefile", str(repo / "Snakefile"), "--directory", str(workdir),
            "--configfile", *map(str, files), *args]


def _env():
    return {**os.environ, "PATH": os.pathsep.join(["/usr/bin", "/bin"]), "OMP_NUM_THREADS": "1"}


def _run(repo, workdir, *args, overlays=(), timeout=600):
    return subprocess.run(_command(repo, workdir, *args, overlays=overlays), capture_output=True, text=True,
                          timeout=timeout, env=_env())


def _table_bytes(workdir):
    return (Path(workdir) / "results" / "tables" / f"{TARGET}.csv").read_bytes()


@pytest.fixture(scope="module")
def uninterrupted(repo, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("uninterrupted")
    proc = _run(repo, workdir, "--cores", "1", TARGET)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return workdir


def _wait_for_temporary(workdir, output_suffix, timeout=120):
    """Block until a job is in the middle of writing a raw output ending in ``output_suffix``
    (its temporary file exists); returns the path that output will have."""
    raw = Path(workdir) / "results" / "raw" / TARGET
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for tmp in raw.glob(f".*{output_suffix}.*.tmp"):
            return tmp.parent / tmp.name[1:tmp.name.index(output_suffix) + len(output_suffix)]
        time.sleep(0.05)
    raise AssertionError(f"no job started writing a {output_suffix} file in time")


def _raw_outputs(workdir):
    return sorted((Path(workdir) / "results" / "raw" / TARGET).glob("*.csv"))  # not .previous/


def _sigint_as_in_a_terminal():
    """SIGINT back to its default in Snakemake's process: a test run started in the
    background by a non-interactive shell (``bash .ci/run &``) inherits SIGINT ignored, and
    Python keeps an ignored SIGINT ignored, so Snakemake would never see the Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(proc, how):
    if how == "interrupt-snakemake":  # SIGINT to Snakemake's own process, not to its jobs
        os.kill(proc.pid, signal.SIGINT)
    elif how == "terminate-run":  # the whole run: Ctrl-C in a terminal, a scheduler's kill
        os.killpg(proc.pid, signal.SIGTERM)
    else:  # the job's own interpreter, not Snakemake: the OOM killer
        jobs = subprocess.run(["pgrep", "-f", "-s", str(proc.pid), "run_experiment"],
                              capture_output=True, text=True).stdout.split()
        job_pids = [int(p) for p in jobs if int(p) != proc.pid]
        assert job_pids, "job process not found"
        for pid in job_pids:
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize(("during", "how"), [("table", "terminate-run"), ("table", "kill-job"),
                                           ("sidecar", "interrupt-snakemake"), ("sidecar", "kill-job")])
def test_interrupted_run_resumes_and_gives_identical_tables(repo, uninterrupted, tmp_path, how, during):
    """SIGTERM to the whole run, SIGKILL of one job's process, or SIGINT to Snakemake alone
    (which leaves a complete output marked incomplete), in the middle of writing a job's raw
    table or, after the table is complete, its provenance sidecar: no output is visible
    before it is complete, nothing partial is left as complete, and the next plain run (the
    default profile's ``rerun-incomplete``) finishes with byte-identical tables.

    Every write pauses before its rename (``PAUSE_ENV``, a fault-injection point), so the
    interruption lands inside the write rather than in the solver.
    """
    env = {**_env(), PAUSE_ENV: str(WRITE_PAUSE)}
    proc = subprocess.Popen(_command(repo, tmp_path, "--cores", "1", TARGET), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env, start_new_session=True,
                            preexec_fn=_sigint_as_in_a_terminal)
    try:
        table = _wait_for_temporary(tmp_path, ".csv")
        assert not table.exists(), "a raw table is visible before its write is complete"
        if during == "sidecar":
            _wait_for_temporary(tmp_path, PROVENANCE)
            assert len(pd.read_csv(table)) > 0  # complete, but the job has not finished
        _interrupt(proc, how)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode != 0, proc.stdout.read()[-3000:]
    assert not (tmp_path / "results" / "tables" / f"{TARGET}.csv").exists()
    if during == "table":
        assert not table.exists()
    for raw in _raw_outputs(tmp_path):  # whatever is there is a finished write's complete output
        assert raw.stat().st_size > 0 and len(pd.read_csv(raw)) > 0

    again = _run(repo, tmp_path, "--cores", "1", TARGET)
    assert again.returncode == 0, again.stderr[-3000:]
    assert _table_bytes(tmp_path) == _table_bytes(uninterrupted)
    assert not list((tmp_path / "results").rglob("*.tmp")), "a killed write's temporary was left behind"


def test_rerun_with_the_same_config_has_nothing_to_do_and_fresh_run_is_byte_identical(repo, uninterrupted, tmp_path):
    dry = _run(repo, uninterrupted, "--cores", "1", "-n", TARGET)
    assert dry.returncode == 0 and "Nothing to be done" in dry.stdout + dry.stderr
    fresh = _run(repo, tmp_path, "--cores", "1", TARGET)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    assert _table_bytes(tmp_path) == _table_bytes(uninterrupted)
    claims = [json.loads((d / "results" / "claims" / f"{TARGET}.json").read_text()) for d in (tmp_path, uninterrupted)]
    assert claims[0] == claims[1]


def test_changing_one_experiment_reruns_only_its_jobs(repo, uninterrupted):
    other = "gtv_fig12_star_graph"
    built = _run(repo, uninterrupted, "--cores", "1", other)
    assert built.returncode == 0, built.stderr[-3000:]
    dry = _run(repo, uninterrupted, "--cores", "1", "-n", TARGET, other,
               overlays=[{"experiments": {TARGET: {"sigma": 0.2}}}])
    assert dry.returncode == 0, dry.stderr[-3000:]
    out = dry.stdout + dry.stderr
    targets = {line.split("target=")[1].split(",")[0].strip() for line in out.splitlines() if "target=" in line}
    assert targets == {TARGET}, out[-3000:]
    assert "run_experiment" in out


def test_unknown_target_id_is_named(repo, tmp_path):
    proc = _run(repo, tmp_path, "--cores", "1", "gtv_fig99_nonexistent")
    assert proc.returncode != 0
    assert "gtv_fig99_nonexistent" in proc.stdout + proc.stderr


def test_invalid_config_value_stops_before_any_job_and_keeps_results(repo, uninterrupted):
    before = _table_bytes(uninterrupted)
    proc = _run(repo, uninterrupted, "--cores", "1", "--forceall", TARGET,
                overlays=[{"experiments": {TARGET: {"sigma": -1.0}}}])
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert f"config['experiments']['{TARGET}']['sigma']" in out
    assert _table_bytes(uninterrupted) == before


def test_a_job_that_fails_at_run_time_keeps_the_last_good_result(repo, uninterrupted, tmp_path):
    """Snakemake deletes a job's outputs when it starts; a rerun whose values pass validation
    but fail the run (label noise 1e150, the largest magnitude the config accepts: noisy
    labels beyond it, whose squares overflow, are refused by the solver's input check, issue
    45) fails naming the labels, and the last good raw output survives beside it in
    `.previous/`."""
    import shutil

    workdir = tmp_path / "copy"
    shutil.copytree(uninterrupted, workdir, symlinks=True)
    good = {p.relative_to(workdir): p.read_bytes() for p in _raw_outputs(workdir)}
    proc = _run(repo, workdir, "--cores", "1", TARGET, overlays=[{"experiments": {TARGET: {"sigma": 1e150}}}])
    assert proc.returncode != 0
    logs = "".join(p.read_text(errors="replace") for p in (workdir / "logs" / "run" / TARGET).rglob("*.log"))
    assert "labels: entry" in logs and "beyond the magnitude 1e+150" in logs, logs[-3000:]
    assert f"{TARGET}, setting" in logs, logs[-3000:]
    assert "the last good result of this job is kept at" in logs
    for rel, data in good.items():  # every raw output: still there, or its last good version
        current = workdir / rel
        kept = current.parent / ".previous" / current.name
        assert (current.read_bytes() if current.exists() else kept.read_bytes()) == data
    assert any(not (workdir / rel).exists() for rel in good)  # the failed job's output is gone


def _one_target_checkout(tmp_path):
    """A copy of the checkout (its src/ too: the jobs run that code) whose config holds
    ``TARGET`` alone, at the test profile's values: its claims summary is then that target's."""
    from conftest import copy_checkout

    checkout = copy_checkout(tmp_path / "checkout", "src")
    config_path = checkout / "config" / "config.yaml"
    config = yaml.safe_load(config_path.read_text())
    test = yaml.safe_load((checkout / "config" / "test.yaml").read_text())
    block = {**config["experiments"][TARGET], **test["experiments"][TARGET], **BASE["experiments"][TARGET]}
    config["experiments"] = {TARGET: block}
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return checkout


def test_an_error_in_claim_code_fails_the_job_and_writes_no_verdict(tmp_path):
    """A ``raise`` injected into the target's claims function (issue 45): the build exits
    non-zero, the claims job's log holds the traceback, the earlier claims stay in place byte
    for byte (Snakemake deletes the failed job's output; the workflow's ``onerror`` puts its
    last good version, kept in ``.previous/``, back) and no file, the claims summary included,
    shows a verdict made from the exception; once the bug is gone, the next run evaluates the
    claims again."""
    checkout = _one_target_checkout(tmp_path)
    summary, claims = "results/claims/summary.csv", f"results/claims/{TARGET}.json"

    def snakemake():
        return subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", summary], cwd=checkout,
                              capture_output=True, text=True, timeout=900, env=_env())

    first = snakemake()
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    good_claims, good_summary = (checkout / claims).read_bytes(), (checkout / summary).read_bytes()
    assert json.loads(good_claims) and b"claims evaluation" not in good_claims

    star = checkout / "src" / "networkedfl" / "experiments" / "gtv" / "claims.py"  # star_lambda_claims
    source = star.read_text()
    anchor = '    level = float(params["fusion_level"])\n'
    assert anchor in source
    star.write_text(source.replace(anchor, '    raise RuntimeError("injected claims failure")\n' + anchor, 1))

    proc = snakemake()
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0, out[-3000:]
    log = (checkout / "logs" / "claims" / f"{TARGET}.log").read_text()
    assert "Traceback (most recent call last)" in log and "RuntimeError: injected claims failure" in log, log[-3000:]
    assert f"the last good {claims} is kept at results/claims/.previous/{TARGET}.json" in log + out
    kept = checkout / "results" / "claims" / ".previous" / f"{TARGET}.json"
    assert kept.read_bytes() == good_claims
    assert (checkout / claims).read_bytes() == good_claims
    assert "their last good claims are back in results/claims/" in out
    assert (checkout / summary).read_bytes() == good_summary
    for path in (checkout / "results").rglob("*"):
        if path.is_file() and path.suffix in (".json", ".csv", ".html", ".ipynb"):
            text = path.read_text(errors="replace")
            assert "injected claims failure" not in text and "claims evaluation" not in text, path

    star.write_text(source)  # the bug fixed: the claims job runs again and succeeds
    fixed = snakemake()
    assert fixed.returncode == 0, fixed.stdout[-3000:] + fixed.stderr[-3000:]
    assert "evaluate_claims" in fixed.stdout + fixed.stderr
    assert (checkout / claims).read_bytes() == good_claims


def test_with_a_results_key_a_forged_result_stops_the_run_before_its_report_is_rendered(repo, tmp_path):
    """Issue 45: with ``NETWORKEDFL_RESULTS_KEY`` set every sidecar is signed; a claims file
    edited together with a recomputed SHA-256 in its sidecar (what anyone can do without
    the key) stops the next run before any job, naming the file, and the report is not
    rendered from it."""
    from networkedfl.io import file_sha256
    from networkedfl.pipeline.signing import KEY_ENV

    env = {**_env(), KEY_ENV: "a results key of 32 bytes or so."}
    proc = subprocess.run(_command(repo, tmp_path, "--cores", "1", TARGET), capture_output=True, text=True,
                          timeout=900, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = tmp_path / "results"
    sidecars = [p for p in results.rglob(f"*{PROVENANCE}") if ".previous" not in p.parts]
    assert sidecars and all(json.loads(p.read_text())["signature"]["algorithm"] == "hmac-sha256" for p in sidecars)
    report = (results / "reports" / f"{TARGET}.html").read_bytes()

    claims = results / "claims" / f"{TARGET}.json"
    forged = json.loads(claims.read_text())
    forged[0]["verdict"], forged[0]["detail"] = "holds", "forged"
    claims.write_text(json.dumps(forged))
    sidecar = Path(f"{claims}{PROVENANCE}")
    record = json.loads(sidecar.read_text())
    record["output"] = {"bytes": claims.stat().st_size, "sha256": file_sha256(claims)}
    sidecar.write_text(json.dumps(record))

    again = subprocess.run(_command(repo, tmp_path, "--cores", "1", TARGET), capture_output=True, text=True,
                           timeout=900, env=env)
    out = again.stdout + again.stderr
    assert again.returncode != 0
    assert f"results/claims/{TARGET}.json: its provenance sidecar's signature does not match" in out, out[-3000:]
    assert (results / "reports" / f"{TARGET}.html").read_bytes() == report
