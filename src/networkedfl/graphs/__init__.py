"""Empirical graphs: the graph type, generators, and graphs learnt from local datasets.

* :class:`EmpiricalGraph` (edges stored once, oriented from the smaller node index, with
  the incidence matrix ``D`` of GTV eq. (17)) and its generators (stochastic block model,
  chain of clusters, star, ring, cluster graphs);
* graphs learnt from data (GTV paper, Sec. VI-C): t-SNE / PCA embeddings, the k-NN
  Kullback-Leibler estimator between nodes' samples, kernels and :func:`knn_graph`.
"""

from ._graph import (
    EmpiricalGraph,
    GraphError,
    GraphLike,
    as_graph,
    chain_of_clusters,
    check_graph,
    cluster_graph,
    disjoint_union,
    is_networkx_graph,
    ring,
    star,
    stochastic_block_model,
)
from ._learning import (
    MIN_DISTANCE,
    RELATIONS,
    RESCALINGS,
    LearntGraph,
    divergence_graph,
    exponential_kernel,
    knn_graph,
    knn_graph_of_points,
    knn_kl_divergence,
    learn_graph,
    pairwise_kl_divergences,
    pca_projection,
    sort_columns_per_node,
    symmetrised,
    tsne_embedding,
)

__all__ = [
    "GraphLike",
    "as_graph",
    "chain_of_clusters",
    "check_graph",
    "cluster_graph",
    "disjoint_union",
    "divergence_graph",
    "EmpiricalGraph",
    "exponential_kernel",
    "GraphError",
    "is_networkx_graph",
    "knn_graph",
    "knn_graph_of_points",
    "knn_kl_divergence",
    "learn_graph",
    "LearntGraph",
    "MIN_DISTANCE",
    "pairwise_kl_divergences",
    "pca_projection",
    "RELATIONS",
    "RESCALINGS",
    "ring",
    "sort_columns_per_node",
    "star",
    "stochastic_block_model",
    "symmetrised",
    "tsne_embedding",
]
