# Data: each real dataset is fetched into data/raw/<name>/ from the sources configured under
# `data: <name>: sources` (the vendored copy in the repository first, then the public
# mirrors), every file verified against the package's checksums and written atomically.


rule download_mnist:
    output:
        dataset_files("mnist"),
    log:
        PATHS.log("data", "download_mnist"),
    conda:
        CONDA_ENV
    params:
        dataset="mnist",  # the sources are resolved by the script (not a rerun trigger)
    localrule: True
    script:
        "../scripts/download_dataset.py"


rule download_reviews:
    output:
        dataset_files("reviews"),
    log:
        PATHS.log("data", "download_reviews"),
    conda:
        CONDA_ENV
    params:
        dataset="reviews",
    localrule: True
    script:
        "../scripts/download_dataset.py"
