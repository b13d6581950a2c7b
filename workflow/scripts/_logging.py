"""Route a Snakemake script's logging, warnings and stderr to its rule's log file."""

import logging
import sys


def setup(log_path: str) -> logging.Logger:
    handle = open(log_path, "a", buffering=1, encoding="utf-8")  # noqa: SIM115 (lives as long as the job)
    sys.stderr = handle
    logging.basicConfig(
        stream=handle,
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        force=True,
    )
    logging.captureWarnings(True)
    return logging.getLogger("networkedfl.workflow")
