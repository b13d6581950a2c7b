"""The chapter's Fig 10.4: multi-domain next-word prediction on the 16 review domains.

Lu, Xing & Yu, Sec. 10.5.2, Fig. 10.4; target gfl_fig10_4_reviews_nlp.  One client per
domain (Liu, Qiu & Huang 2017); each trains the neural probabilistic language model of
:mod:`networkedfl.nn` on the windows of its ``*.task.train`` reviews and is
tested on its ``*.task.test`` reviews.  BiG-FL is compared with FeSEM, FedAvg and DFL
(DFL-SGD and DFL-GT); the table records the test loss (mean token cross-entropy, averaged
over the clients, each client's own model on its own test windows) and the perplexity
``exp(test loss)`` against rounds.  Extra baselines (issue 42, not the chapter's:
``extra_baselines``, :mod:`~networkedfl.experiments.baselines`) run as FedAvg's steps with
FedProx's, SCAFFOLD's or FedAdam's / FedYogi's hooks, or with Ditto's personal models (scored),
on FedAvg's data, mask and mini-batches.

Data rules, all from the corpus (nothing random except where a generator is named):

* tokens: the files' whitespace tokens, lowercased; each review ends with ``<eos>``;
* vocabulary: the ``vocab_size`` most frequent words of the pooled training splits plus
  ``<unk>`` and ``<eos>`` (``vocab_size: null``: every training word, the chapter's
  "total number of tokens" alignment); other words become ``<unk>``;
* windows: each client's training stream cut into consecutive windows of ``window`` inputs
  and their next words (:func:`networkedfl.datasets.windows`); a mini-batch is ``batch_size``
  windows drawn without replacement;
* frozen rows: the embedding rows of words absent from a client's training windows start
  at 0 and stay there (the per-client mask given to every algorithm);
* global embedding: PPMI-SVD of the pooled training splits (GloVe substitute,
  :func:`networkedfl.datasets.ppmi_svd_embedding`) or real GloVe vectors from
  ``embedding.glove_path``;
* client graph: each domain's TF-IDF vector over the vocabulary (its training counts), the
  cosine similarities, and the union of every client's ``k`` most similar other clients
  (undirected, edge weight = cosine similarity).
"""

from __future__ import annotations

import functools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ...datasets import (
    EOS,
    UNK,
    Vocabulary,
    build_vocabulary,
    encode_documents,
    load_glove,
    ppmi_svd_embedding,
    tfidf_vectors,
    windows,
)
from ...datasets.reviews import DOMAINS, LABELLED_SPLITS, PUBLISHED_TABLE_10_2, read_domain
from ...graphs import EmpiricalGraph, knn_graph
from ...seeding import generator_for, rng_for
from ..baseline_runs import run_baseline_steps
from ..baselines import EXTRA_BASELINES, STEP_BASELINES, baseline_options, extra_baselines
from ..claims import LOCAL, MEAN
from ..tuning import VALIDATION_METRIC, split_ragged
from .reviews import corpus_inputs
from .synthetic import DIAGNOSTICS

__all__ = [
    "METHOD_NAMES",
    "TASK_KEYS",
    "ReviewTask",
    "knn_similarity_graph",
    "prepare_review_task",
    "review_nlp_inputs",
    "review_nlp_settings",
    "review_task",
    "run_review_nlp",
]

Params = Mapping[str, Any]

#: Job id (setting) -> name in the table and the figure.
METHOD_NAMES: dict[str, str] = {
    "bigfl": "BiG-FL", "fesem": "FeSEM", "fedavg": "FedAvg", "dfl_sgd": "DFL-SGD", "dfl_gt": "DFL-GT",
    "local": LOCAL, "mean": MEAN, **EXTRA_BASELINES,
}


# ------------------------------------------------------------------------------ data


@dataclass(frozen=True, eq=False)
class ReviewTask:
    """Everything the methods share: vocabulary, windows, frozen rows, embedding, graph.

    Attributes
    ----------
    domains
        Client ``i`` is domain ``domains[i]``.
    vocabulary
        The model vocabulary (``V`` entries, specials first).
    train, test
        Per client, ``(m_i, L + 1)`` int64 windows (inputs ``[:, :-1]``, targets ``[:, 1:]``).
    present
        ``(n, V)`` bool: word ``w`` occurs in client ``i``'s training windows (its embedding
        row is trainable).
    embedding
        ``(V, d)`` global embedding the lookup tables start from.
    embedding_source
        ``"ppmi_svd"``, ``"glove"`` or ``"random"``.
    similarity
        ``(n, n)`` cosine similarities of the domains' TF-IDF vectors.
    graph
        The client graph (k-NN union of ``similarity``).
    """

    domains: tuple[str, ...]
    vocabulary: Vocabulary
    train: tuple[np.ndarray, ...]
    test: tuple[np.ndarray, ...]
    present: np.ndarray
    embedding: np.ndarray
    embedding_source: str
    similarity: np.ndarray
    graph: EmpiricalGraph


def knn_similarity_graph(similarity: np.ndarray, k: int) -> EmpiricalGraph:
    """Union of every node's ``k`` most similar other nodes, weighted by the similarity:
    :func:`networkedfl.graphs.knn_graph` of the distances ``-similarity``.

    Ties are broken by the lower node index (a stable sort), so the graph is deterministic.
    Edge weights are clipped at 0 from below (cosine similarities of TF-IDF vectors are
    non-negative anyway).
    """
    s = np.asarray(similarity, dtype=float)
    n = s.shape[0]
    if s.shape != (n, n):
        raise ValueError(f"similarity must be square, got {s.shape}")
    k = min(int(k), n - 1)
    if k < 1:
        raise ValueError("need k >= 1 and at least 2 nodes")
    edges = knn_graph(-s, k, rescale="unit").edges  # the k nearest = the k most similar
    return EmpiricalGraph(n, edges, np.clip(s[edges[:, 0], edges[:, 1]], 0.0, None))


def _local_steps(params: Params, train: Sequence[np.ndarray]) -> int:
    steps = params["local_steps"]
    if steps == "epoch":  # one pass over the average client's windows
        mean_windows = float(np.mean([len(t) for t in train]))
        return max(1, math.ceil(mean_windows / int(params["batch_size"])))
    return int(steps)


@functools.lru_cache(maxsize=1)
def _documents(corpus: tuple[str, ...] | str, domains: tuple[str, ...],
               limit: int | None) -> tuple[list[list[list[str]]], list[list[list[str]]]]:
    """Every domain's lowercased training documents and its first ``limit`` test documents,
    read and tokenised once per process (the seeds of a job differ in their draws, not in
    the corpus: about a second of a seed's task).  Shared: the callers only read them."""
    train_docs, test_docs = [], []
    for domain in domains:
        files = read_domain(corpus, domain, LABELLED_SPLITS)
        train_docs.append(files["train"].tokens(lowercase=True))
        test = files["test"].tokens(lowercase=True)
        test_docs.append(test if limit is None else test[:limit])
    return train_docs, test_docs


def prepare_review_task(
    params: Params,
    corpus: Sequence[str] | str,
    rng: np.random.Generator,
    *,
    glove_path: str | None = None,
) -> ReviewTask:
    """Read the corpus and build the shared data of all methods (see the module docstring).

    Parameters
    ----------
    params
        The target's parameters (``vocab_size``, ``window``, ``test_documents``,
        ``domains`` (optional subset), ``model``, ``embedding``, ``graph``).
    corpus
        The train and test files of the domains (paths) or the corpus directory.
    rng
        Draws the SVD start vector (or the random vectors of words missing from GloVe).
    glove_path
        Real GloVe vectors replace the PPMI-SVD embedding when given.
    """
    domains = tuple(params.get("domains") or DOMAINS)
    limit = params.get("test_documents")
    files = str(corpus) if isinstance(corpus, str | os.PathLike) else tuple(map(str, corpus))
    train_docs, test_docs = _documents(files, domains, None if limit is None else int(limit))
    vocabulary = build_vocabulary((doc for docs in train_docs for doc in docs),
                                  max_size=params.get("vocab_size"))
    v, length = len(vocabulary), int(params["window"])
    streams = [encode_documents(docs, vocabulary) for docs in train_docs]
    train = tuple(windows(ids, length) for ids, _ in streams)
    test = tuple(windows(encode_documents(docs, vocabulary)[0], length) for docs in test_docs)
    for domain, tr, te in zip(domains, train, test, strict=True):
        if len(tr) == 0 or len(te) == 0:
            raise ValueError(f"{domain}: no complete window of {length} tokens in its "
                             "training or test documents (raise test_documents)")
    present = np.zeros((len(domains), v), dtype=bool)
    counts = np.zeros((len(domains), v))
    for i, windows_i in enumerate(train):
        used = windows_i.ravel()
        present[i, np.unique(used)] = True
        counts[i] = np.bincount(used, minlength=v)

    spec = params["embedding"]
    dim = int(params["model"]["embed_dim"])
    if glove_path is not None:
        embedding, _ = load_glove(glove_path, vocabulary, dim=dim, seed=rng)
        source = "glove"
    elif spec["source"] == "ppmi_svd":
        ids = np.concatenate([s[0] for s in streams])
        docs = np.concatenate([s[1] + 10**7 * i for i, s in enumerate(streams)])
        embedding = ppmi_svd_embedding(ids, docs, v, dim=dim, window=int(spec["window"]),
                                       alpha=float(spec.get("alpha", 0.75)), seed=rng)
        source = "ppmi_svd"
    else:
        embedding = rng.standard_normal((v, dim)) * 0.1
        source = "random"

    words = np.array([t not in (UNK, EOS) for t in vocabulary.tokens])
    tfidf = tfidf_vectors(counts[:, words])
    similarity = tfidf @ tfidf.T
    graph = knn_similarity_graph(similarity, int(params["graph"]["neighbours"]))
    return ReviewTask(domains, vocabulary, train, test, present, embedding, source, similarity, graph)


#: The parameters :func:`prepare_review_task` reads: runs in one process whose values of
#: these agree (a tuning job's grid points of one seed) share one task.
TASK_KEYS = ("domains", "test_documents", "vocab_size", "window", "embedding", "model", "graph")


@functools.lru_cache(maxsize=2)
def _cached_task(spec: str, corpus: tuple[str, ...] | str, glove: str | None, base_seed: int,
                 experiment_id: str, seed: int) -> ReviewTask:
    files = corpus if isinstance(corpus, str) else list(corpus)
    return prepare_review_task(json.loads(spec), files, rng_for(base_seed, experiment_id, seed, "data"),
                               glove_path=glove)


def review_task(params: Params, corpus: Sequence[str] | str | os.PathLike, base_seed: int, experiment_id: str, seed: int,
                glove_path: str | None = None) -> ReviewTask:
    """:func:`prepare_review_task` with the seed's data stream, built once per process for
    every run of the same corpus, seed and :data:`TASK_KEYS` (a tuning job's grid points
    read the same task; about 3 s of corpus reading, vocabulary and PPMI-SVD each; a run
    job runs one method and builds it once anyway).  The task's arrays are shared: the runs
    only read them."""
    spec = json.dumps({key: params.get(key) for key in TASK_KEYS}, sort_keys=True)
    files = str(corpus) if isinstance(corpus, str | os.PathLike) else tuple(map(str, corpus))
    return _cached_task(spec, files, glove_path, int(base_seed), experiment_id, int(seed))


def review_nlp_inputs(params: Params) -> dict[str, Any]:
    """Train and test files of the domains, and the GloVe file if one is configured."""
    inputs: dict[str, Any] = corpus_inputs(params)
    chosen = params.get("domains")
    if chosen:
        inputs["corpus"] = [p for p in inputs["corpus"]
                            if p.rsplit("/", 1)[-1].split(".task.")[0] in set(chosen)]
    glove = params["embedding"].get("glove_path")
    if glove:
        inputs["glove"] = str(glove)
    return inputs


def review_nlp_settings(params: Params) -> list[str]:
    """One job per method (``bigfl``, ``fesem``, ``fedavg``, ``dfl_sgd``, ``dfl_gt``) or
    reference (``local``, ``mean``), then one per extra baseline (``extra_baselines``,
    :mod:`~networkedfl.experiments.baselines`; those counted in local steps only,
    :data:`~networkedfl.experiments.baselines.STEP_BASELINES`)."""
    unknown = [m for m in params["methods"] if m not in METHOD_NAMES or m in EXTRA_BASELINES]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; expected some of "
                         f"{[m for m in METHOD_NAMES if m not in EXTRA_BASELINES]}")
    extras = extra_baselines(params)
    stepless = [m for m in extras if m not in STEP_BASELINES]
    if stepless:
        raise ValueError(f"extra_baselines {stepless} do not run in Fig. 10.4 (its local work is counted "
                         f"in steps); those that do: {list(STEP_BASELINES)}")
    return [*params["methods"], *extras]


def unigram_losses(train: Sequence[np.ndarray], test: Sequence[np.ndarray], vocab_size: int) -> np.ndarray:
    """Predict-the-mean for next-word prediction: every client's add-one smoothed unigram
    distribution of its training targets, its mean cross-entropy on its test targets."""
    losses = []
    for tr, te in zip(train, test, strict=True):  # 16 clients, once per job
        counts = np.bincount(tr[:, 1:].ravel(), minlength=vocab_size) + 1.0
        logp = np.log(counts / counts.sum())
        losses.append(-logp[te[:, 1:].ravel()].mean())
    return np.array(losses)


# ------------------------------------------------------------------------------ run


def _padded(blocks: Sequence[np.ndarray], torch_mod: Any, device: Any) -> tuple[Any, Any, Any]:
    """Inputs, targets ``(n, M, L)`` int64 and weights ``(n, M)`` (0 on padding)."""
    n, m = len(blocks), max(len(b) for b in blocks)
    length = blocks[0].shape[1]
    stacked = np.zeros((n, m, length), dtype=np.int64)
    weights = np.zeros((n, m), dtype=np.float32)
    for i, b in enumerate(blocks):  # data assembly, once per job
        stacked[i, : len(b)] = b
        weights[i, : len(b)] = 1.0
    t = torch_mod.as_tensor(stacked, device=device)
    return t[:, :, :-1], t[:, :, 1:], torch_mod.as_tensor(weights, device=device)


class _Evaluator:
    """Mean test token cross-entropy of every client's own model on its own test windows,
    from the windows' word-pair counts (:class:`~networkedfl.nn.WordPairCounts`,
    built once per job), ``chunk`` distinct words of every client at a time."""

    def __init__(self, model: Any, test: Sequence[np.ndarray], vocab_size: int, dtype: Any, device: Any,
                 chunk: int = 256) -> None:
        import torch

        from ...nn import WordPairCounts

        ids, targets, weights = _padded(test, torch, device)
        self.model, self.chunk = model, chunk
        self.counts = WordPairCounts.from_windows(ids, targets, weights.to(dtype), vocab_size)

    def __call__(self, params: Any) -> np.ndarray:
        return self.counts.losses(self.model, params, chunk=self.chunk).cpu().numpy()


def _hidden_projection(layout: Any, dim: int, rng: np.random.Generator, dtype: Any, device: Any):
    """The fixed linear map of BiG-FL's UL input: the hidden layer ``(W_1, b_1)`` of every
    client times a Gaussian ``(d h + h, dim)`` matrix with entries ``N(0, 1/dim)``
    (a :class:`~networkedfl.algorithms.ColumnProjection`)."""
    import torch

    from ...algorithms import ColumnProjection

    hidden = layout.hidden_layer
    size = hidden.stop - hidden.start
    matrix = torch.as_tensor(rng.standard_normal((size, dim)) / math.sqrt(dim)).to(dtype=dtype, device=device)
    return ColumnProjection(hidden, matrix)


def run_review_nlp(params: Params, setting: str, seed: int, base_seed: int, *,
                   inputs: Mapping[str, Any], experiment_id: str) -> pd.DataFrame:
    """Train one method (``setting``) for one seed; tidy per-round test losses.

    Columns: ``method``, ``round``, ``domain`` (per-client rows; empty for averages),
    ``metric``, ``value``, ``seed``.  Metrics: ``test_loss`` (mean over clients of the
    mean token cross-entropy), ``test_perplexity`` (``exp`` of it), ``test_loss_client``
    (per domain), method diagnostics from the algorithms' histories (``upper_loss``,
    ``phi_distance``, ``consensus_distance``), FeSEM's final ``cluster`` of every domain,
    ``frozen_rows_max_abs`` (largest magnitude in a frozen embedding row at the end: 0),
    and, in the first method's job only, the data summary (``train_windows``,
    ``test_windows``, ``trainable_rows`` per domain, ``vocabulary_size``) and the client
    graph (``edge_weight`` rows with ``neighbour``).

    Reference bounds (issue 17): ``local`` (every domain trains alone: FedAvg with each
    client its own group) and ``mean`` (every domain's add-one smoothed unigram
    distribution, :func:`unigram_losses`).  The corpus has no ground-truth structure among
    the domains, so no oracle is defined.  With ``validation_fraction`` every domain holds
    out that share of its training windows and the loss on them is recorded as
    ``validation_loss`` (the tuning protocol, :mod:`~networkedfl.experiments.tuning`).
    """
    import torch

    from ...algorithms import bigfl, dfl_gt, dfl_sgd, fedavg_steps, fesem
    from ...nn import NextWordBatches, NPLMLayout, as_device, as_dtype, nplm

    if setting not in METHOD_NAMES:
        raise ValueError(f"unknown method {setting!r}; expected one of {list(METHOD_NAMES)}")
    dtype = as_dtype(params.get("dtype", "float32"))  # this experiment's default: float32
    device = as_device(params.get("device"))
    # everything but the method's own randomness is shared by all methods of a seed
    task = review_task(params, inputs["corpus"], base_seed, experiment_id, seed, glove_path=inputs.get("glove"))
    train_windows, eval_windows, loss_metric = task.train, task.test, "test_loss"
    if params.get("validation_fraction") is not None:
        train_windows, eval_windows = split_ragged(rng_for(base_seed, experiment_id, seed, "validation"),
                                                   params["validation_fraction"], task.train)
        loss_metric = VALIDATION_METRIC
    n_rounds = int(params["rounds"])
    name = METHOD_NAMES[setting]
    records: list[dict[str, Any]] = []

    def add(round_: int, metric: str, value: float, domain: Any = None, **extra: Any) -> None:
        records.append({"method": name, "round": round_, "domain": domain, **extra,
                        "metric": metric, "value": float(value), "seed": seed})

    if setting == "mean":
        losses = unigram_losses(train_windows, eval_windows, len(task.vocabulary))
        for round_ in (0, n_rounds):
            add(round_, loss_metric, losses.mean())
            if loss_metric == "test_loss":
                add(round_, "test_perplexity", math.exp(losses.mean()))
                for domain, loss in zip(task.domains, losses, strict=True):
                    add(round_, "test_loss_client", loss, domain)
        return pd.DataFrame.from_records(records)
    shape = params["model"]
    layout = NPLMLayout(len(task.vocabulary), int(shape["embed_dim"]), int(shape["hidden_dim"]))
    model = nplm(layout, embedding=task.embedding)
    start = model.initial_params(generator_for(base_seed, experiment_id, seed, "init"),
                                 dtype=torch.float64)
    init = layout.zero_absent_rows(start, task.present).to(dtype=dtype, device=device)
    mask = torch.as_tensor(layout.frozen_rows_mask(task.present)).to(dtype=dtype, device=device)
    from ...nn import ClientBatches

    x, y, w = _padded(train_windows, torch, device)
    # the same windows drawn, each batch's logits computed once per distinct input word
    data = NextWordBatches(ClientBatches(x, y, w.to(dtype)), layout.vocab_size)
    evaluate = _Evaluator(model, eval_windows, layout.vocab_size, dtype, device,
                          chunk=int(params.get("eval_chunk", 256)))
    every = int(params.get("eval_every", 1))

    def record_losses(round_: int, params_: Any) -> None:
        losses = evaluate(params_)
        mean = float(losses.mean())
        add(round_, loss_metric, mean if math.isfinite(mean) else math.inf)
        if loss_metric == "test_loss":
            add(round_, "test_perplexity", math.exp(min(mean, 700.0)))
            for domain, loss in zip(task.domains, losses, strict=True):
                add(round_, "test_loss_client", loss, domain)

    def callback(state: Any) -> None:
        if state.round % every == 0 or state.round == n_rounds:
            record_losses(state.round, state.client_params)

    record_losses(0, init)
    # one stream for every method of a seed (paired comparisons): FedAvg, Local and DFL-SGD
    # draw the same mini-batches at every step, DFL-GT the same sequence one step ahead (its
    # tracker's first gradient takes the first); FeSEM and BiG-FL the same in the first round,
    # until their own draws (k-means seeding; BiG-FL's hyper-gradient batch and negatives)
    # continue the stream differently
    common = {"n_rounds": n_rounds, "local_steps": _local_steps(params, train_windows),
              "batch_size": int(params["batch_size"]), "mask": mask, "callback": callback,
              "seed": rng_for(base_seed, experiment_id, seed, "batches"), "device": device,
              "dtype": dtype, "progress": bool(params.get("progress", False))}
    lr = float(params["lr"])
    held = bool(params.get("mask_average", True))  # aggregate a row over the clients holding it
    if setting in ("fedavg", "local"):
        groups = np.arange(len(task.domains)) if setting == "local" else None
        result = fedavg_steps(model, data, lr=lr, init=init, mask_average=held, groups=groups, **common)
    elif setting in EXTRA_BASELINES:  # not the chapter's: FedAvg's steps, data, mask and stream
        result = run_baseline_steps(setting, model, data, baseline_options(setting, params), lr=lr, init=init,
                                    mask_average=held, **common)
    elif setting in ("dfl_sgd", "dfl_gt"):
        run = dfl_sgd if setting == "dfl_sgd" else dfl_gt
        result = run(model, data, graph=task.graph, lr=lr, rule=params["dfl"]["rule"], init=init,
                     mask_average=held, **common)
    elif setting == "fesem":
        spec = params["fesem"]
        result = fesem(model, data, n_clusters=int(spec["n_clusters"]), lam=float(spec["lam"]), lr=lr,
                       init=init, mask_average=held, **common)
    else:
        spec = params["bigfl"]
        projection = _hidden_projection(layout, int(spec["projection_dim"]),
                                        rng_for(base_seed, experiment_id, seed, "projection"), dtype, device)
        result = bigfl(model, data, task.graph, lr=lr, lr_upper=float(spec["lr_upper"]),
                       lam=float(spec["lam"]), kappa=float(spec["kappa"]),
                       lam_upper=float(spec["lam_upper"]), n_negatives=int(spec["n_negatives"]),
                       neumann_terms=int(spec["neumann_terms"]), embedding=projection, init=init,
                       diagnostics=params.get("validation_fraction") is None,  # not read in tuning
                       **common)
    for row in result.history:
        for metric in DIAGNOSTICS:
            if metric in row:
                add(int(row["round"]), metric, row[metric])
    if setting == "fesem":  # the last E-step: which centre every domain follows
        for domain, cluster in zip(task.domains, result.assignment.tolist(), strict=True):
            add(n_rounds, "cluster", cluster, domain)
    frozen = result.client_params[:, layout.slices["embedding"]].reshape(
        len(task.domains), layout.vocab_size, layout.embed_dim)
    add(n_rounds, "frozen_rows_max_abs",
        float(frozen[~torch.as_tensor(task.present, device=device)].abs().max()) if (~task.present).any() else 0.0)
    if setting == review_nlp_settings(params)[0] and loss_metric == "test_loss":
        _describe_task(task, add)
    return pd.DataFrame.from_records(records)


def _describe_task(task: ReviewTask, add: Any) -> None:
    add(0, "vocabulary_size", len(task.vocabulary))
    for i, domain in enumerate(task.domains):
        add(0, "train_windows", len(task.train[i]), domain)
        add(0, "test_windows", len(task.test[i]), domain)
        add(0, "trainable_rows", int(task.present[i].sum()), domain)
    for (a, b), weight in zip(task.graph.edges, task.graph.weights, strict=True):
        add(0, "edge_weight", weight, task.domains[a], neighbour=task.domains[b])


def published_name(domain: str) -> str:
    """The domain's name in the chapter's Table 10.2."""
    return PUBLISHED_TABLE_10_2[domain].dataset
