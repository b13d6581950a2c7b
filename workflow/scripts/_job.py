"""What every job script does first and last (issue 37).

``start``: route the job's logging, warnings and stderr to its log, check every file it
reads (networkedfl.pipeline.integrity: a corrupt one stops it, naming the file and the
command that rebuilds it), and name, should the job fail (a full disk, a diverged run), where
the last good version of each of its outputs is kept; a job rendering a page from results
also checks, with a results key set, that each is signed (``signed``, issue 45). ``finish``:
keep its outputs as their last good versions (``.previous/`` beside them: Snakemake deletes
a job's outputs when it starts, so a failed rerun loses nothing).
"""

import sys

import _logging

from networkedfl.io import keep_previous, last_good
from networkedfl.pipeline.integrity import check_artefacts, check_signed


def start(snakemake, *, keeps_previous=True, signed=()):
    """``signed``: the results a page is rendered from; with a results key set each must have
    a sidecar whose signature verifies (networkedfl.pipeline.signing)."""
    log = _logging.setup(snakemake.log[0])
    if keeps_previous:
        outputs = list(snakemake.output)

        def excepthook(kind, error, traceback):
            sys.__excepthook__(kind, error, traceback)  # into the log (stderr)
            where = last_good(outputs)
            for stream in (sys.stderr, sys.__stderr__):  # the log may be on the full disk
                try:
                    print(where, file=stream, flush=True)
                except OSError:
                    pass

        sys.excepthook = excepthook
    check_artefacts(list(snakemake.input))
    check_signed(list(signed))
    return log


def finish(snakemake):
    for output in snakemake.output:
        keep_previous(output)
