"""A job reads its target's parameters once (issue 43): the seeds of one job share them, so
the config is read as often for ten seeds as for one, and every seed's records are those of
the seed run alone."""

import pandas as pd

from networkedfl.pipeline.runner import run_job, run_setting

TARGET = "lecture_table1_fedsgd_fedavg"


class _Counting(dict):
    """``config['experiments']``, counting the reads of a target's block."""

    def __init__(self, *args):
        super().__init__(*args)
        self.reads = 0

    def __getitem__(self, key):
        self.reads += 1
        return super().__getitem__(key)


def _reads(seeds):
    experiments = _Counting({TARGET: {"repetitions": len(seeds)}})
    table = run_setting({"base_seed": 1, "experiments": experiments}, TARGET, "all", seeds)
    return experiments.reads, table


def test_a_job_reads_its_parameters_once_whatever_its_seeds():
    one, _ = _reads([0])
    ten, table = _reads(list(range(10)))
    assert ten == one
    config = {"base_seed": 1, "experiments": {TARGET: {"repetitions": 10}}}
    alone = pd.concat([run_job(config, TARGET, "all", s) for s in (0, 9)], ignore_index=True)
    assert table[table["seed"].isin([0, 9])].astype(str).reset_index(drop=True).equals(alone.astype(str))
