# Cached artefacts shared by several targets: the MNIST local datasets and the empirical
# graph learnt from them (t-SNE, pairwise KL estimates, 4-NN; GTV Sec. VI-C). Each graph
# spec under `mnist_graphs: <name>:` is built once into results/cache/mnist_graph/<name>.npz;
# every target naming it (`graph: <name>`) reads that file.

MNIST_GRAPHS = config.get("mnist_graphs", {})

_mnist_missing = {
    target: name
    for target, params in config["experiments"].items()
    if target.startswith("gtv_") and "mnist" in target
    for name in (mnist_graph_names(params) or [None])
    if name not in MNIST_GRAPHS
}
if _mnist_missing:
    raise ValueError(
        f"targets name MNIST graphs missing from config['mnist_graphs']: {_mnist_missing}; "
        f"defined: {sorted(MNIST_GRAPHS)}"
    )


rule learn_mnist_graph:
    input:
        [PATHS.raw_data("mnist", f) for f in ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")],
    output:
        PATHS.cache("mnist_graph", "{graph}"),
    log:
        PATHS.log("cache", "mnist_graph/{graph}"),
    conda:
        CONDA_ENV
    params:
        spec=lambda wildcards: MNIST_GRAPHS[wildcards.graph],
        base_seed=config["seed"],
    threads: 2
    resources:
        mem_mb=3000,
    wildcard_constraints:
        graph=_alternation(list(MNIST_GRAPHS)),
    script:
        "../scripts/learn_mnist_graph.py"
