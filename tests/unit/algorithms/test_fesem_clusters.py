"""FeSEM's clusters (issue 17, item 4): planted 3-cluster instances, run from the
initialisation of the chapter's figures, and the E-step checked against direct computations.

The figures (``gfl_fig10_3_synthetic``, ``gfl_fig10_4_reviews_nlp``) start every client from
one draw of ``model.initial_params`` (the target's ``"init"`` stream), give FeSEM the
target's ``"fesem"`` stream, no initial centres (round 1: warm-up, k-means++ and Lloyd) and
K, lambda_F, tau and the step of the configuration; the instances below do the same.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from networkedfl.algorithms import (
    assign_nearest,
    center_distances,
    cluster_means,
    cluster_support,
    fesem,
    kmeans,
)
from networkedfl.experiments.gfl.synthetic import SYNTHETIC_ID, _adjusted_rand, mlp
from networkedfl.nn import ClientBatches, make_generator
from networkedfl.pipeline.config import load_config
from networkedfl.seeding import rng_for

REPO = Path(__file__).resolve().parents[3]
N_PER, D_IN, D_OUT = 4, 3, 2


@pytest.fixture(scope="module")
def config():
    return load_config(REPO / "config" / "config.yaml",
                       schema_path=REPO / "workflow" / "schemas" / "config.schema.yaml")


def planted(seed, m=1000, shared=8.0, gap=2.0, noise=0.1, extra=0, extra_weight=3.0, absent=None):
    """12 clients, 4 per cluster, linear targets ``y = x W_k + noise``.

    ``W_k = shared * 1 + gap * e_(k, 0)`` on the first ``D_IN`` inputs: the clusters differ
    in one entry each, and the part every cluster shares is 4x larger than the gap, so every
    client's local move has a large common component (as on Fig. 10.3's plateau).  ``extra``
    further inputs, with true weights ``extra_weight`` in every cluster, can be left out per
    client: ``absent`` ``(n, D_IN + extra)`` marks the inputs a client never sees (always 0).
    """
    rng = np.random.default_rng([seed, 17])
    d = D_IN + extra
    truth = np.full((3, d, D_OUT), shared)
    truth[:, D_IN:] = extra_weight
    for k in range(3):
        truth[k, k, 0] += gap
    labels = np.repeat(np.arange(3), N_PER)
    x = rng.uniform(-1.0, 1.0, (3 * N_PER, m, d))
    if absent is not None:
        x = np.where(absent[:, None, :], 0.0, x)
    y = np.einsum("nmd,ndc->nmc", x, truth[labels])
    y = y + noise * rng.standard_normal((3 * N_PER, m, D_OUT))
    return x, y, labels


def figure_start(model, seed, base_seed):
    """The figures' common start and FeSEM generator (``run_synthetic``'s streams)."""
    init = model.initial_params(make_generator(rng_for(base_seed, SYNTHETIC_ID, seed, "init")),
                                dtype=torch.float64)
    return init, rng_for(base_seed, SYNTHETIC_ID, seed, "fesem")


def figure_kwargs(config):
    """K, lambda_F, tau, step and mini-batch of ``gfl_fig10_3_synthetic`` (its mini-batch is
    all of a node's samples: full batches here too)."""
    params = config["experiments"][SYNTHETIC_ID]
    assert int(params["batch_size"]) == int(params["synthetic"]["n_samples"])
    spec = params["fesem"]
    return {"n_clusters": int(spec["n_clusters"]), "lam": float(spec["lam"]),
            "lr": float(spec.get("lr", params["lr"])), "local_steps": int(params["local_steps"]),
            "batch_size": None}


def same_partition(labels, truth):
    """Equal up to relabelling: a bijection between the label sets."""
    pairs = set(zip(np.asarray(labels).tolist(), np.asarray(truth).tolist(), strict=True))
    return len(pairs) == len(set(truth.tolist())) == len(set(np.asarray(labels).tolist()))


# ------------------------------------------------------------------ planted recovery


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fesem_recovers_planted_clusters_from_the_figures_initialisation(seed, config):
    x, y, truth = planted(seed)
    model = mlp([D_IN, D_OUT], activation="sigmoid", bias=False, loss="half_squared_norm")
    init, generator = figure_start(model, seed, int(config["base_seed"]))
    kwargs = figure_kwargs(config)
    assert kwargs["n_clusters"] == 3
    states = []
    res = fesem(model, ClientBatches.from_arrays(x, y, dtype=torch.float64), n_rounds=12,
                init=init, seed=generator, dtype=torch.float64,
                callback=lambda s: states.append((s.client_params.clone(), s.global_params.clone(),
                                                  s.assignment.clone())), **kwargs)
    labels = res.assignment.numpy()
    assert _adjusted_rand(labels, truth) == 1.0
    assert same_partition(labels, truth)
    # no round puts everyone (or any two planted clusters) together
    assert all(sorted(row["cluster_sizes"]) == [N_PER] * 3 for row in res.history)

    # every EM round's E-step and M-step, recomputed directly (numpy, float64) from the
    # models the clients uploaded (the previous round's local models)
    for (theta, centres, a), (_, new_centres, new_a) in zip(states, states[1:], strict=False):
        theta, centres, a = theta.numpy(), centres.numpy(), a.numpy()
        current = np.stack([theta[a == k].mean(0) if (a == k).any() else centres[k]
                            for k in range(3)])
        d2 = ((theta[:, None, :] - current[None, :, :]) ** 2).sum(-1)
        np.testing.assert_array_equal(new_a.numpy(), d2.argmin(1))
        expected = np.stack([theta[new_a.numpy() == k].mean(0) for k in range(3)])
        np.testing.assert_allclose(new_centres.numpy(), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_fesem_with_frozen_coordinates_clusters_by_the_data_not_by_the_mask(seed, config):
    """Fig. 10.4's structure: per-client frozen coordinates (inputs a client never sees,
    weights held at 0, as the embedding rows of absent words) in a pattern that cuts across
    the planted clusters, and a common start whose values there are large (the pretrained
    embedding the lookup tables start from; here already the true weights).  Counting the
    frozen coordinates clusters the clients by what they lack (clients 0, 2, 4, ... against
    1, 3, 5, ...); FeSEM must find the planted clusters instead."""
    extra, weight = 6, 3.0
    n, d = 3 * N_PER, D_IN + extra
    absent = np.zeros((n, d), dtype=bool)
    absent[0::2, D_IN:D_IN + extra // 2] = True  # even clients lack one half of the extra inputs,
    absent[1::2, D_IN + extra // 2:] = True       # odd clients the other half
    x, y, truth = planted(seed, extra=extra, extra_weight=weight, absent=absent)
    model = mlp([d, D_OUT], activation="sigmoid", bias=False, loss="half_squared_norm")
    init, generator = figure_start(model, seed, int(config["base_seed"]))
    init = init.reshape(d, D_OUT)
    init[D_IN:] = weight
    mask = torch.as_tensor(np.repeat(~absent, D_OUT, axis=1), dtype=torch.float64)
    start = init.reshape(1, -1) * mask  # absent rows start at 0 (as zero_absent_rows)
    res = fesem(model, ClientBatches.from_arrays(x, y, dtype=torch.float64), n_rounds=8,
                init=start, mask=mask, mask_average=True, seed=generator, dtype=torch.float64,
                **figure_kwargs(config))
    assert same_partition(res.assignment.numpy(), truth), res.assignment.tolist()
    assert all(sorted(row["cluster_sizes"]) == [N_PER] * 3 for row in res.history)
    assert torch.all(res.client_params[mask == 0] == 0)  # frozen coordinates stayed at 0


# ------------------------------------------------------------------ E-step, directly


def direct_distances(params, centres, mask=None, support=None):
    p = np.asarray(params, dtype=np.float64)
    c = np.asarray(centres, dtype=np.float64)
    out = np.zeros((p.shape[0], c.shape[0]))
    for i in range(p.shape[0]):
        for k in range(c.shape[0]):
            w = np.ones(p.shape[1])
            if mask is not None:
                w = w * np.asarray(mask)[i]
            if support is not None:
                w = w * np.asarray(support)[k]
            out[i, k] = float(np.sum(w * (p[i] - c[k]) ** 2))
    return out


def test_e_step_is_the_argmin_of_the_direct_distances():
    g = torch.Generator().manual_seed(3)
    params = torch.randn(9, 6, generator=g, dtype=torch.float64)
    centres = torch.randn(3, 6, generator=g, dtype=torch.float64)
    mask = (torch.rand(9, 6, generator=g) > 0.3).double()
    support = (torch.rand(3, 6, generator=g) > 0.3).double()
    for m, s in [(None, None), (mask, None), (None, support), (mask, support)]:
        direct = direct_distances(params, centres, m, s)
        got = center_distances(params, centres, m, s).numpy()
        np.testing.assert_allclose(got, direct, rtol=1e-12)
        np.testing.assert_array_equal(assign_nearest(params, centres, m, s).numpy(),
                                      direct.argmin(1))


def test_e_step_is_exact_in_float32_for_models_grown_from_one_start():
    """Models that share a large start and differ by little: the squared-norm expansion
    (``torch.cdist``'s matrix-product mode, used from 25 rows on) loses the gaps in float32."""
    g = torch.Generator().manual_seed(0)
    start = 30.0 * torch.randn(64, generator=g)
    params = (start + 1e-3 * torch.randn(40, 64, generator=g)).float()
    centres = (start + 1e-3 * torch.randn(3, 64, generator=g)).float()
    direct = direct_distances(params.numpy(), centres.numpy())
    np.testing.assert_array_equal(assign_nearest(params, centres).numpy(), direct.argmin(1))


def test_support_ignores_coordinates_no_member_trains():
    # centre 1's members never train coordinate 1: its stale value there (0) must not count
    params = torch.tensor([[1.0, 5.0], [1.2, 5.0], [3.0, 0.0], [3.1, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0], [1.0, 0.0], [1.0, 0.0]])
    assignment = torch.tensor([0, 0, 1, 1])
    previous = torch.zeros(2, 2)
    centres = cluster_means(params, assignment, previous, mask)
    support = cluster_support(assignment, mask, torch.ones(2, 2))
    torch.testing.assert_close(support, torch.tensor([[1.0, 1.0], [1.0, 0.0]]))
    client = torch.tensor([[2.9, 5.0]])  # trains both coordinates, close to centre 1's data
    assert assign_nearest(client, centres, torch.ones(1, 2), support).item() == 1
    assert assign_nearest(client, centres, torch.ones(1, 2)).item() == 0  # stale zero counted
    # an emptied cluster keeps its previous support (not an empty one: distance 0 to all)
    kept = cluster_support(torch.tensor([0, 0, 0, 0]), mask, support)
    torch.testing.assert_close(kept[1], support[1])


def test_kmeans_restarts_keep_the_lowest_inertia():
    g = torch.Generator().manual_seed(1)
    points = torch.cat([torch.randn(6, 4, generator=g, dtype=torch.float64) + 4 * c
                        for c in torch.eye(4, dtype=torch.float64)[:3]])

    def inertia(centres, assignment):
        return float(center_distances(points, centres).gather(1, assignment[:, None]).sum())

    for seed in range(5):
        one = kmeans(points, 3, torch.Generator().manual_seed(seed), n_init=1)
        ten = kmeans(points, 3, torch.Generator().manual_seed(seed), n_init=10)
        assert inertia(*ten[:2]) <= inertia(*one[:2])  # restart 1 of 10 is the single run
        np.testing.assert_array_equal(ten[1].numpy(), assign_nearest(points, ten[0]).numpy())
    with pytest.raises(ValueError, match="n_init"):
        kmeans(points, 3, torch.Generator(), n_init=0)
