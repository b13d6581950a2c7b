# Data: each real dataset is fetched into data/raw/<name>/ from the sources configured under
# `data: <name>: sources` (the vendored copy in the repository first, then the public
# mirrors), every file verified against the package's checksums and written atomically.
# One job per file: a file that cannot be fetched costs only itself, and a file deleted
# (e.g. after a job found it edited) is fetched again on its own. The limits of every
# attempt are under `data: download:`; neither they nor the sources are rule parameters.

import re

from networkedfl.datasets import DATASETS


rule download_file:
    output:
        PATHS.raw_data("{dataset}", "{filename}"),
    log:
        PATHS.log("data", "download/{dataset}/{filename}"),
    conda:
        CONDA_ENV
    wildcard_constraints:
        dataset=_alternation(sorted(DATASETS)),
        filename=_alternation(sorted({re.escape(f) for d in DATASETS.values() for f in d.files})),
    localrule: True
    priority: EARLY
    script:
        "../scripts/download_dataset.py"


rule download_mnist:
    input:
        dataset_files("mnist"),
    localrule: True


rule download_reviews:
    input:
        dataset_files("reviews"),
    localrule: True
