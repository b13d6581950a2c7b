# Cached artefacts shared by several targets: the MNIST local datasets and the empirical
# graph learnt from them (GTV Sec. VI-C), in three stages, each cached under results/cache/
# and each reading only its part of the spec `mnist_graphs: <name>:` (its params), so that
# changing k or the kernel reruns only the last stage:
#   mnist_tsne         partition + t-SNE embedding   results/cache/mnist_tsne/<name>.npz
#   mnist_kl           pairwise KL estimates          results/cache/mnist_kl/<name>.npz
#   learn_mnist_graph  k-NN kernel graph (+ the above) results/cache/mnist_graph/<name>.npz
# Every target naming the graph (`graph: <name>`, in its variants or ablation cases) reads
# the last file.
#
# Scheduling: the stages run first (`priority`) on one core each. Every job of the MNIST
# targets waits for them, and a two-core job starts only when both cores are free at once,
# which on a small machine kept busy by one-core jobs happens near the end of the run.
# Their results do not depend on the thread count (openTSNE with exact neighbours and the
# KL estimator give the same arrays with 1 and 2 threads, tested in
# tests/unit/graphs/test_graph_learning.py); `--set-threads mnist_tsne=N` gives them more.

#
# A target reads a cache when its registration names it (`Experiment.caches`); this file adds
# each cache it builds to CACHES (common.smk), with the files an artefact of it is made from.

from networkedfl.experiments.gtv.mnist_graph import STAGE_KINDS, graph_names, mnist_train_files, stage_spec

MNIST_GRAPHS = config.get("mnist_graphs", {})
_MNIST_GRAPH_DIR = Path(PATHS.cache(STAGE_KINDS["graph"], "x")).parent
# a learnt graph is made from the MNIST files and its three stages (each with its sidecar)
CACHES["mnist_graph"] = lambda path: None if Path(path).parent != _MNIST_GRAPH_DIR else mnist_train_files() + [
    f for kind in STAGE_KINDS.values() for f in (PATHS.cache(kind, Path(path).stem),
                                                 PATHS.cache(kind, Path(path).stem) + PROVENANCE)]
_mnist_graph_code = lambda wildcards: module_code("networkedfl.experiments.gtv.mnist_graph")

_mnist_missing = {
    target: name
    for target, params in config["experiments"].items()
    if "mnist_graph" in target_caches(target)
    for name in (graph_names(params) or [None])
    if name not in MNIST_GRAPHS
}
if _mnist_missing:
    raise ValueError(
        f"targets name MNIST graphs missing from config['mnist_graphs']: {_mnist_missing}; "
        f"defined: {sorted(MNIST_GRAPHS)}"
    )


rule mnist_tsne:
    input:
        mnist_train_files(),
    output:
        PATHS.cache(STAGE_KINDS["embedding"], "{graph}"),
        provenance=PATHS.cache(STAGE_KINDS["embedding"], "{graph}") + PROVENANCE,
    log:
        PATHS.log("cache", "mnist_tsne/{graph}"),
    conda:
        CONDA_ENV
    params:
        spec=lambda wildcards: stage_spec(MNIST_GRAPHS[wildcards.graph], "embedding"),
        code=_mnist_graph_code,
        base_seed=config["base_seed"],
    priority: EARLY
    resources:
        mem_mb=3000,
    wildcard_constraints:
        graph=_alternation(list(MNIST_GRAPHS)),
    script:
        "../scripts/mnist_tsne.py"


rule mnist_kl:
    input:
        PATHS.cache(STAGE_KINDS["embedding"], "{graph}"),
    output:
        PATHS.cache(STAGE_KINDS["divergences"], "{graph}"),
        provenance=PATHS.cache(STAGE_KINDS["divergences"], "{graph}") + PROVENANCE,
    log:
        PATHS.log("cache", "mnist_kl/{graph}"),
    conda:
        CONDA_ENV
    params:
        spec=lambda wildcards: stage_spec(MNIST_GRAPHS[wildcards.graph], "divergences"),
        code=_mnist_graph_code,
    priority: EARLY
    wildcard_constraints:
        graph=_alternation(list(MNIST_GRAPHS)),
    script:
        "../scripts/mnist_kl.py"


rule learn_mnist_graph:
    input:
        embedding=PATHS.cache(STAGE_KINDS["embedding"], "{graph}"),
        divergences=PATHS.cache(STAGE_KINDS["divergences"], "{graph}"),
    output:
        PATHS.cache(STAGE_KINDS["graph"], "{graph}"),
        provenance=PATHS.cache(STAGE_KINDS["graph"], "{graph}") + PROVENANCE,
    log:
        PATHS.log("cache", "mnist_graph/{graph}"),
    conda:
        CONDA_ENV
    params:
        spec=lambda wildcards: stage_spec(MNIST_GRAPHS[wildcards.graph], "graph"),
        code=_mnist_graph_code,
    priority: EARLY
    wildcard_constraints:
        graph=_alternation(list(MNIST_GRAPHS)),
    script:
        "../scripts/learn_mnist_graph.py"
