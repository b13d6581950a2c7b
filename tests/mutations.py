"""Mutation check of the fault tests: each protection, broken on purpose, must fail its tests.

A fault test that still passes when the protection it guards is removed proves nothing.
For every mutation below this script copies the repository's tracked files to a scratch
directory, applies the one edit (e.g. the atomic writer replaced by a plain one, a checksum
check skipped), runs the named tests there and reports whether they failed, as they must.

    .venv/bin/python tests/mutations.py            # all mutations (pipeline tests: ~20 min)
    .venv/bin/python tests/mutations.py --fast     # only mutations whose tests are fast
    .venv/bin/python tests/mutations.py plain_writer skip_checksum   # by name
    .venv/bin/python tests/mutations.py --baseline  # the same tests unmutated: must pass

For a killed mutation the script prints the failing tests and their assertion lines, so
that one can check the failure is the mutation's and not another one's.

Exit status 1 if a mutation survives (its tests pass), 2 if a mutation no longer applies
(the code it edits changed: update the mutation).  Not collected by pytest (no ``test_``
prefix); run it after changing a protection or its tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    slow: bool = False


MUTATIONS = [
    Mutation(
        "plain_writer", "outputs written in place, not through a temporary file and a rename",
        "src/networkedfl/io/_atomic.py",
        "        write(tmp)\n        _pause_for_tests()\n        os.replace(tmp, path)\n",
        "        write(str(path))\n        _pause_for_tests()\n        Path(tmp).unlink(missing_ok=True)\n",
        ("tests/unit/pipeline/test_io.py::test_an_interrupted_write_leaves_the_old_file_whole_and_no_temporary",
         "tests/unit/pipeline/test_io.py::test_a_new_output_is_not_visible_until_it_is_complete",
         "tests/integration/test_faults.py::test_interrupted_run_resumes_and_gives_identical_tables"),
        slow=True,
    ),
    Mutation(
        "no_rerun_incomplete", "the default profile does not rerun the outputs of an interrupted job",
        "profiles/default/config.yaml",
        "rerun-incomplete: true\n",
        "",
        ("tests/integration/test_faults.py::test_interrupted_run_resumes_and_gives_identical_tables",),
        slow=True,
    ),
    Mutation(
        "keep_stale_temporaries", "a killed writer's temporary file is never removed",
        "src/networkedfl/io/_atomic.py",
        "    _remove_stale_temporaries(path)\n    fd, tmp",
        "    fd, tmp",
        ("tests/unit/pipeline/test_io.py::test_a_killed_writers_temporary_is_removed_by_the_next_write",),
    ),
    Mutation(
        "no_previous", "the last good raw output is not kept",
        "src/networkedfl/io/_atomic.py",
        "    os.replace(tmp, previous)\n    return previous\n",
        "    tmp.unlink()\n    return previous\n",
        ("tests/unit/pipeline/test_io.py::test_keep_previous_survives_the_deletion_of_the_output",),
    ),
    Mutation(
        "no_previous_in_jobs", "the experiment and tuning jobs do not keep their last good output",
        "src/networkedfl/io/_atomic.py",
        "    write_csv(table, output)\n    keep_previous(output)\n",
        "    write_csv(table, output)\n",
        ("tests/unit/pipeline/test_io.py::test_a_job_table_that_fails_to_compute_writes_nothing_and_names_the_last_good_one",
         "tests/integration/test_faults.py::test_a_job_that_fails_at_run_time_keeps_the_last_good_result"),
        slow=True,
    ),
    Mutation(
        "skip_checksum", "downloads placed without checking their checksum",
        "src/networkedfl/datasets/download.py",
        "                problem = checksum_problem(tmp, sha256, md5, size)  # a cut-off copy: its size\n",
        "                problem = None\n",
        ("tests/integration/test_download.py::test_dead_url_refused_port_and_corrupt_copy_fall_through_to_a_good_source",
         "tests/integration/test_download.py::test_failure_names_file_sources_and_expected_checksum_and_keeps_the_old_file"),
    ),
    Mutation(
        "skip_raw_verification", "jobs read data/raw files without checking them again",
        "src/networkedfl/datasets/verify.py",
        "    entry = raw_file_entry(path)\n    if entry is None or not Path(path).is_file():\n",
        "    entry = None\n    if entry is None or not Path(path).is_file():\n",
        ("tests/integration/test_download.py::test_an_edited_review_file_is_detected_when_a_job_reads_it",
         "tests/integration/test_download.py::test_an_edited_mnist_file_is_detected_when_a_job_reads_it"),
    ),
    Mutation(
        "keep_part_files", "a failed or stopped download leaves its .part file",
        "src/networkedfl/datasets/download.py",
        "                if tmp is not None:\n                    tmp.unlink(missing_ok=True)\n",
        "                pass\n",
        ("tests/integration/test_download.py::test_the_part_file_is_removed_when_the_download_is_terminated",),
    ),
    Mutation(
        "no_finite_check", "diverged torch runs return NaN parameters silently",
        "src/networkedfl/algorithms/contract.py",
        "        _check_finite(round_, client_params, global_params, self.history)\n",
        "",
        ("tests/unit/graphs/test_divergence.py",),
    ),
    Mutation(
        "no_metric_check", "jobs with NaN or infinite metrics succeed",
        "src/networkedfl/pipeline/runner.py",
        "    _check_finite_values(table, f\"{job.target}, setting {job.setting!r}, seed {seed}\")\n",
        "",
        ("tests/unit/graphs/test_divergence.py::test_a_job_with_non_finite_metrics_fails_naming_target_setting_seed_and_metric",),
    ),
    Mutation(
        "no_code_param", "a code change does not rerun the jobs that run it",
        "workflow/rules/common.smk",
        "    return _target_code(wildcards.target)\n",
        "    return \"fixed\"\n",
        ("tests/integration/test_reruns.py::test_a_code_change_reruns_exactly_the_jobs_that_run_it",),
        slow=True,
    ),
    Mutation(
        "no_config_nan_check", "NaN and inf pass the config validation",
        "src/networkedfl/pipeline/config.py",
        "_non_finite_errors(config) + ",
        "[] + ",
        ("tests/unit/pipeline/test_config.py",),
    ),
    Mutation(
        "unquoted_script_interpreter", "Snakemake's script jobs run their interpreter's path unquoted",
        "workflow/rules/common.smk",
        "quote_script_interpreter()\n",
        "",
        ("tests/unit/pipeline/test_checkout_paths.py::test_the_script_interpreter_is_one_quoted_word",),
    ),
    Mutation(
        "unquoted_interpreter_in_a_checkout", "the same, in a hostile checkout installed as the README says",
        "workflow/rules/common.smk",
        "quote_script_interpreter()\n",
        "",
        ("tests/integration/test_hostile_checkout.py",),
        slow=True,
    ),
    Mutation(
        "html_by_shell", "a rule calls a console script through shell: instead of running a Python script",
        "workflow/rules/reports.smk",
        '    script:\n        "../scripts/render_html.py"\n',
        '    shell:\n        "jupyter nbconvert --to html --stdout {input:q} > {output:q}.tmp 2> {log:q}"\n'
        '        " && mv {output:q}.tmp {output:q}"\n',
        ("tests/unit/pipeline/test_checkout_paths.py::test_every_rule_runs_a_python_script_and_no_shell_command",),
    ),
    Mutation(
        "ci_pip_launcher", ".ci/run installs through .venv/bin/pip, pip's /bin/sh launcher",
        ".ci/run",
        ".venv/bin/python -m pip install",
        ".venv/bin/pip install",
        ("tests/unit/pipeline/test_checkout_paths.py::test_ci_run_works_from_a_checkout_whose_path_has_spaces_quotes_and_a_substitution",),
    ),
    Mutation(
        "intermediates_not_target_inputs", "the target rules do not name their intermediates: a plain run leaves holes",
        "workflow/rules/targets.smk",
        "            lambda wildcards, target=_target: checked_target_files([target]),\n",
        "",
        ("tests/integration/test_recovery.py::test_a_missing_intermediate_is_rebuilt_by_a_plain_run[dataset-file-and-raw-output]",
         "tests/integration/test_recovery.py::test_a_kill_during_a_forced_rerun_leaves_a_hole_that_unlock_and_a_plain_run_fill",
         "tests/integration/test_recovery.py::test_a_missing_tuning_table_and_sidecar_are_rebuilt_by_a_plain_run"),
        slow=True,
    ),
    Mutation(
        "no_check_before_jobs", "a run builds its jobs without checking the files they read",
        "workflow/rules/common.smk",
        "            check_artefacts(todo, finished=False, skip=settings.forcerun or ())\n",
        "            pass\n",
        ("tests/integration/test_recovery.py::test_a_corrupt_intermediate_stops_the_run_and_the_printed_command_repairs_it[graph-cache-bad-crc]",
         "tests/integration/test_recovery.py::test_a_raw_output_that_is_not_what_its_sidecar_records_is_refused_and_the_command_rebuilds_it[damaged-in-place]"),
        slow=True,
    ),
    Mutation(
        "no_repair_command_recorded", "errors do not know the run's command (a generic hint instead)",
        "src/networkedfl/io/_artefacts.py",
        "    os.environ[REPAIR_ENV] = command\n",
        "",
        ("tests/unit/pipeline/test_artefacts.py::test_the_repair_command_is_the_run_s_own_command_quoted",
         "tests/integration/test_recovery.py::test_a_corrupt_intermediate_stops_the_run_and_the_printed_command_repairs_it[graph-cache-truncated]"),
        slow=True,
    ),
    Mutation(
        "bare_npz_errors", "a corrupt cache raises zipfile's bare error",
        "src/networkedfl/io/_artefacts.py",
        "        raise CorruptArtefactError({path: npz_problem(path) or f\"cannot be read ({exc})\"}) from exc\n",
        "        raise\n",
        ("tests/unit/pipeline/test_artefacts.py::test_a_corrupt_graph_cache_names_the_file_what_is_wrong_and_the_command",),
    ),
    Mutation(
        "sidecar_bytes_unchecked", "outputs are read without comparing them with their sidecar",
        "src/networkedfl/pipeline/integrity.py",
        "    return _sidecar_problem(path, finished)\n",
        "    return None\n",
        ("tests/unit/pipeline/test_artefacts.py::test_an_output_that_is_not_what_its_sidecar_records_is_refused",
         "tests/integration/test_recovery.py::test_a_raw_output_that_is_not_what_its_sidecar_records_is_refused_and_the_command_rebuilds_it[edited]"),
        slow=True,
    ),
    Mutation(
        "bare_sidecar_errors", "an unreadable sidecar raises json's bare error",
        "src/networkedfl/pipeline/provenance.py",
        "        raise CorruptArtefactError({path: f\"not a readable provenance record ({exc})\"}) from exc\n",
        "        raise\n",
        ("tests/unit/pipeline/test_artefacts.py::test_an_unreadable_sidecar_is_named_with_the_command_that_rebuilds_it",),
    ),
    Mutation(
        "previous_tuning_trusted", "a damaged last good tuning copy is reused",
        "src/networkedfl/pipeline/runner.py",
        "        return read_table(path)\n",
        "        return pd.read_csv(path)\n",
        ("tests/unit/pipeline/test_artefacts.py::test_a_damaged_last_good_tuning_copy_is_named_and_ignored",),
    ),
    Mutation(
        "claim_errors_as_verdicts", "an exception in claim code is written as a claim that fails",
        "src/networkedfl/pipeline/runner.py",
        "        raise\n    return [c.as_dict() for c in claims]\n",
        "        return [{\"claim\": \"claims evaluation\", \"verdict\": \"fails\", \"kind\": \"paper\", "
        "\"detail\": str(exc)}]\n    return [c.as_dict() for c in claims]\n",
        ("tests/unit/experiments/test_experiments.py::test_an_exception_in_claim_code_propagates_and_gives_no_verdict",
         "tests/integration/test_faults.py::test_an_error_in_claim_code_fails_the_job_and_writes_no_verdict"),
        slow=True,
    ),
    Mutation(
        "no_equivalence", "an effect inside the margin is decided as holds or fails (issue 40)",
        "src/networkedfl/experiments/claims.py",
        "            elif delta > 0 and bound - delta <= low and high <= bound + delta:\n                return EQUIVALENT\n",
        "",
        ("tests/unit/experiments/test_claims.py::test_a_significant_effect_inside_the_margin_is_equivalent_never_holds_or_fails",),
    ),
    Mutation(
        "design_ignored", "the claims are evaluated without the target's margins (issue 40)",
        "src/networkedfl/pipeline/runner.py",
        "        with design(params.get(\"design\")):  # the margins of docs/verdicts.md#design\n",
        "        with design(None):\n",
        ("tests/unit/experiments/test_design.py::test_the_runner_evaluates_claims_under_the_targets_design",),
    ),
    Mutation(
        "claims_table_unescaped", "the reports' claims table shows results' markup as HTML",
        "src/networkedfl/experiments/report.py",
        "    return frame.style.format(_html_cell).format_index(_html_cell, axis=0).format_index(_html_cell, axis=1)\n",
        "    return frame.style\n",
        ("tests/unit/experiments/test_escaping.py::test_the_claims_table_and_the_header_of_a_report_are_escaped",
         "tests/unit/experiments/test_escaping.py::test_a_report_rendered_as_the_pipeline_renders_it_holds_no_tag_from_the_claims"),
    ),
    Mutation(
        "signatures_unchecked", "with a results key, a sidecar's signature is not verified",
        "src/networkedfl/pipeline/integrity.py",
        "        problem = signature_problem(path, record, key)\n",
        "        problem = None\n",
        ("tests/unit/pipeline/test_signing.py::test_an_edited_result_with_a_recomputed_sidecar_is_caught_when_keyed",),
    ),
    Mutation(
        "npz_dated_by_the_clock", "the graph cache's zip entries carry the time of writing",
        "src/networkedfl/io/_artefacts.py",
        "                info = zipfile.ZipInfo(f\"{name}.npy\", date_time=ZIP_DATE)\n",
        "                info = zipfile.ZipInfo(f\"{name}.npy\", date_time=__import__(\"time\").localtime()[:6])\n",
        ("tests/unit/pipeline/test_artefacts.py::test_the_graph_cache_is_byte_reproducible",),
    ),
    Mutation(
        "timings_in_the_graph_cache", "the graph cache's metadata holds the stages' timings",
        "src/networkedfl/experiments/gtv/mnist_graph.py",
        "    meta = {\"name\": graph.name, \"n_train\": graph.n_train, \"spec\": graph.spec}\n",
        "    meta = {\"name\": graph.name, \"n_train\": graph.n_train, \"seconds\": graph.seconds, \"spec\": graph.spec}\n",
        ("tests/unit/pipeline/test_artefacts.py::test_the_graph_cache_is_byte_reproducible",),
    ),
    Mutation(
        "no_claims_sidecar", "claims are written without a provenance sidecar",
        "workflow/scripts/evaluate_claims.py",
        "write_sidecar(snakemake.output[0], job_provenance(target, snakemake.params.code,  # noqa: F821\n"
        "                                                 inputs={\"table\": snakemake.input.table}))  # noqa: F821\n",
        "",
        ("tests/integration/test_recovery.py::test_every_output_a_reader_uses_has_a_sidecar_that_names_its_bytes",),
        slow=True,
    ),
    Mutation(
        "failures_name_no_last_good", "a failed job does not say where its last good outputs are",
        "workflow/scripts/_job.py",
        "            where = last_good(outputs)\n",
        "            where = \"\"\n",
        ("tests/integration/test_recovery.py::test_a_write_that_fails_names_the_last_good_output_and_loses_nothing",),
        slow=True,
    ),
    Mutation(
        "duplicate_keys_allowed", "a key given twice in a config file: the last silently wins",
        "src/networkedfl/pipeline/_yaml.py",
        "                if key in first:\n",
        "                if False:\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_a_key_given_twice_names_the_file_and_both_lines",
         "tests/unit/pipeline/test_config_bounds.py::test_the_config_checker_refuses_a_key_given_twice"),
    ),
    Mutation(
        "aliases_unbounded", "YAML aliases expand without bound",
        "src/networkedfl/pipeline/_yaml.py",
        "        if total > MAX_YAML_VALUES:\n",
        "        if False:\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_an_alias_bomb_is_refused_before_it_is_expanded",),
    ),
    Mutation(
        "yaml_size_unbounded", "a config file of any size reaches the YAML parser",
        "src/networkedfl/pipeline/_yaml.py",
        "    if size > MAX_YAML_BYTES:\n",
        "    if False:\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_a_large_overlay_is_refused_by_its_size_before_it_is_read",),
    ),
    Mutation(
        "yaml_depth_unbounded", "a config file nested without bound reaches the YAML parser",
        "src/networkedfl/pipeline/_yaml.py",
        "                if depth > MAX_YAML_DEPTH:\n",
        "                if False:\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_a_deep_overlay_is_refused_by_its_depth_before_it_is_parsed",),
    ),
    Mutation(
        "offline_ignored", "NETWORKEDFL_OFFLINE and data: download: offline do not stop the mirrors",
        "src/networkedfl/datasets/download.py",
        "    skipped = [source for source in sources if offline and _is_network(source)]\n",
        "    skipped = []\n",
        ("tests/unit/datasets/test_offline.py",),
    ),
    Mutation(
        "magnitudes_unchecked", "weights and data beyond 1e150 or subnormal reach the solvers",
        "src/networkedfl/_validation.py",
        "    bad = (size > MAX_MAGNITUDE) | ((size > 0) & (size < MIN_MAGNITUDE))\n",
        "    bad = size < 0\n",
        ("tests/unit/test_validation.py",),
    ),
    Mutation(
        "repetitions_unbounded", "the schema has no maximum for repetitions",
        "workflow/schemas/config.schema.yaml",
        "  repetitions: {type: integer, minimum: 1, maximum: 1000, description: number of repetition seeds}\n",
        "  repetitions: {type: integer, minimum: 1, description: number of repetition seeds}\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_a_count_over_its_maximum_names_the_key_and_the_limit",
         "tests/unit/pipeline/test_config_bounds.py::test_every_integer_of_the_schema_has_a_maximum"),
    ),
    Mutation(
        "grids_unbounded", "grids of any number of points pass",
        "src/networkedfl/pipeline/config.py",
        "        lines = _grid_errors(config.get(\"experiments\") or {}, \"config['experiments']\")\n",
        "        lines = []\n",
        ("tests/unit/pipeline/test_config_bounds.py::test_a_tuning_grid_over_the_point_limit_is_named", "tests/unit/pipeline/test_config_bounds.py::test_a_sweep_grid_over_the_point_limit_is_named"),
    ),
    Mutation(
        "overlays_read_by_snakemake_only", "overlays are not read again strictly (Snakemake keeps the last key)",
        "workflow/rules/common.smk",
        "    read_yaml(_overlay)\n",
        "    pass\n",
        ("tests/integration/test_config_errors.py::test_a_key_given_twice_in_an_overlay_or_on_the_command_line_stops_the_run",),
        slow=True,
    ),
    Mutation(
        "command_line_unchecked", "--config entries are not checked for keys given twice",
        "workflow/rules/common.smk",
        "    check_command_line(sys.argv)\n",
        "    pass\n",
        ("tests/integration/test_config_errors.py::test_a_key_given_twice_in_an_overlay_or_on_the_command_line_stops_the_run",),
        slow=True,
    ),
    Mutation(
        "unsigned_verification_record", "a .verified record beside the data is trusted without its signature",
        "src/networkedfl/datasets/verify.py",
        "    return key is not None and hmac.compare_digest(str(record.get(\"hmac\", \"\")),\n",
        "    return True or hmac.compare_digest(str(record.get(\"hmac\", \"\")),\n",
        ("tests/unit/datasets/test_verify.py::test_a_record_rewritten_for_an_edited_file_does_not_make_it_pass",
         "tests/unit/datasets/test_verify.py::test_a_record_made_with_another_key_is_not_trusted"),
    ),
]


def _copy_repo(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, files):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def run(mutation: Mutation, mutate: bool = True) -> tuple[str, float, str]:
    with tempfile.TemporaryDirectory(prefix=f"mutation-{mutation.name}-") as scratch:
        root = Path(scratch)
        _copy_repo(root)
        path = root / mutation.file
        text = path.read_text(encoding="utf-8")
        if text.count(mutation.old) != 1:
            return "no longer applies", 0.0, ""
        if mutate:
            path.write_text(text.replace(mutation.old, mutation.new), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": str(root / "src")}
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "", "-p", "no:cacheprovider",
                               *mutation.tests], cwd=root, env=env, capture_output=True, text=True)
        elapsed = time.monotonic() - start
        failures = "\n".join(line for line in proc.stdout.splitlines() if line.startswith(("FAILED", "ERROR", "E  ")))
        if proc.returncode == 1:  # tests ran and failed: the mutation is killed
            return "killed", elapsed, failures
        if proc.returncode == 0:
            return "SURVIVED" if mutate else "passes", elapsed, ""
        return f"error (pytest exit {proc.returncode})", elapsed, proc.stdout[-800:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--fast", action="store_true", help="skip mutations whose tests run the pipeline")
    parser.add_argument("--baseline", action="store_true",
                        help="run each mutation's tests without the mutation (they must pass)")
    args = parser.parse_args()
    unknown = set(args.names) - {m.name for m in MUTATIONS}
    if unknown:
        parser.error(f"unknown mutations {sorted(unknown)}; known: {[m.name for m in MUTATIONS]}")
    chosen = [m for m in MUTATIONS if (not args.names or m.name in args.names) and not (args.fast and m.slow)]
    status = 0
    for mutation in chosen:
        outcome, elapsed, detail = run(mutation, mutate=not args.baseline)
        print(f"{mutation.name:24s} {outcome:18s} {elapsed:6.0f} s  {mutation.what}", flush=True)
        if detail:  # why the tests failed: check that it is the mutation, not something else
            print("    " + detail.replace("\n", "\n    ")[:1500], flush=True)
        if outcome == "SURVIVED":
            status = max(status, 1)
        elif outcome not in ("killed", "passes"):
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())
