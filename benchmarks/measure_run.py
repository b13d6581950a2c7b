"""Run a command (a Snakemake run) and measure its wall time, the CPU time of its own process
and that of everything it started.

The command's own process is sampled once a second (``/proc/<pid>/stat``: user + system
time of all its threads; the last sample before it exits is its total, to within a second);
its descendants' CPU time is ``RUSAGE_CHILDREN`` after it exits (every job, and any solver
Snakemake runs as a subprocess).  The figures are printed as JSON and written to
``.snakemake/networkedfl-measure.json`` in the working directory, where
``benchmarks/run_all.py --only logs`` shows them with the run's job times.

    .venv/bin/python benchmarks/measure_run.py .venv/bin/snakemake --cores all

Nothing is asserted; the exit code is the command's.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(".snakemake") / "networkedfl-measure.json"


def own_cpu(pid: int) -> float | None:
    """User + system seconds of process ``pid`` (all its threads), or None if it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(command: list[str], interval: float = 1.0) -> dict:
    start = time.time()
    proc = subprocess.Popen(command)
    own = 0.0
    while proc.poll() is None:
        sample = own_cpu(proc.pid)
        own = own if sample is None else sample
        time.sleep(interval)
    wall = time.time() - start
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    everything = children.ru_utime + children.ru_stime
    return {"command": " ".join(command), "returncode": proc.returncode, "finished": dt.datetime.now(dt.UTC).isoformat(),
            "wall_s": round(wall, 1), "own_cpu_s": round(own, 1), "all_cpu_s": round(everything, 1),
            "own_share": round(own / everything, 4) if everything else None, "cpus": os.cpu_count()}


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    result = measure(sys.argv[1:])
    print(json.dumps(result))
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return int(result["returncode"] or 0)


if __name__ == "__main__":
    sys.exit(main())
