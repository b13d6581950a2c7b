"""Synthetic data (the noisy linear model, sampling sets, perturbations) and the metrics."""

import math
from fractions import Fraction

import numpy as np
import pytest

from networkedfl.gtv import (
    NodeData,
    cluster_weights_per_node,
    label_mse,
    linear_model_data,
    linear_predictions,
    parameter_mse,
    per_node_parameter_error,
    perturb_weights,
    sampling_mask,
)

# ---------------------------------------------------------------- linear model data


def test_linear_model_data_shapes():
    w = np.random.default_rng(0).standard_normal((5, 3))
    data = linear_model_data(w, 7, 0.1, np.random.default_rng(1))
    assert data.features.shape == (5, 7, 3)
    assert data.labels.shape == (5, 7)
    assert (data.n_nodes, data.max_samples, data.dim) == (5, 7, 3)
    x, y = data.pooled(np.array([1, 3]))
    np.testing.assert_array_equal(x, np.concatenate([data.features[1], data.features[3]]))
    np.testing.assert_array_equal(y, np.concatenate([data.labels[1], data.labels[3]]))


def test_noiseless_labels_equal_linear_model():
    w = np.random.default_rng(2).standard_normal((6, 4))
    data = linear_model_data(w, 9, 0.0, np.random.default_rng(3))
    for i in range(6):
        for k in range(9):
            expected = sum(data.features[i, k, j] * w[i, j] for j in range(4))
            assert data.labels[i, k] == pytest.approx(expected, rel=1e-12, abs=1e-12)


def test_reproducible_per_seed():
    w = np.ones((3, 2))
    a = linear_model_data(w, 4, 0.5, np.random.default_rng(5))
    b = linear_model_data(w, 4, 0.5, np.random.default_rng(5))
    c = linear_model_data(w, 4, 0.5, np.random.default_rng(6))
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.features, c.features)


def test_noise_has_requested_standard_deviation():
    n, m, d, sigma = 40, 2500, 3, 0.7
    w = np.random.default_rng(7).standard_normal((n, d))
    data = linear_model_data(w, m, sigma, np.random.default_rng(8))
    resid = (data.labels - np.einsum("nmd,nd->nm", data.features, w)).ravel()
    count = resid.size
    # sample std of N Gaussians has standard error ~ sigma / sqrt(2 N)
    assert abs(resid.std() - sigma) <= 5 * sigma / np.sqrt(2 * count)
    assert abs(resid.mean()) <= 5 * sigma / np.sqrt(count)
    # noise is independent of the features: empirical correlation ~ 0
    x = data.features.reshape(-1, d)
    corr = x.T @ resid / count
    assert np.all(np.abs(corr) <= 5 * sigma / np.sqrt(count))
    # default features are standard normal: covariance ~ identity
    _assert_covariance_close(x, np.eye(d))


def _assert_covariance_close(samples, cov):
    """Entrywise 5-standard-error check of the empirical (zero-mean) covariance."""
    count = samples.shape[0]
    emp = samples.T @ samples / count
    se = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov**2) / count)
    assert np.all(np.abs(emp - cov) <= 5 * se), (emp, cov)
    assert np.all(np.abs(samples.mean(axis=0)) <= 5 * np.sqrt(np.diag(cov) / count))


def test_feature_covariance_shared():
    cov = np.array([[2.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 0.5]])
    w = np.zeros((20, 3)) + 1.0
    data = linear_model_data(w, 3000, 0.0, np.random.default_rng(9), feature_cov=cov)
    _assert_covariance_close(data.features.reshape(-1, 3), cov)


def test_feature_covariance_per_node():
    cov_a = np.array([[1.0, 0.8], [0.8, 1.0]])
    cov_b = np.array([[0.3, -0.1], [-0.1, 2.0]])
    covs = np.stack([cov_a] * 3 + [cov_b] * 3)
    w = np.ones((6, 2))
    data = linear_model_data(w, 8000, 0.1, np.random.default_rng(10), feature_cov=covs)
    _assert_covariance_close(data.features[:3].reshape(-1, 2), cov_a)
    _assert_covariance_close(data.features[3:].reshape(-1, 2), cov_b)


def test_negative_noise_rejected():
    with pytest.raises(ValueError):
        linear_model_data(np.ones((2, 2)), 3, -0.1, np.random.default_rng(0))


def test_cluster_weights_per_node():
    cw = np.array([[1.0, 2.0], [-3.0, 0.5], [0.0, 4.0]])
    clusters = np.array([2, 0, 0, 1, 2])
    got = cluster_weights_per_node(clusters, cw)
    np.testing.assert_array_equal(got, [cw[c] for c in clusters])


# ---------------------------------------------------------------- NodeData validation


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["features", "labels"])
def test_node_data_rejects_non_finite(bad, where):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 4))
    if where == "features":
        x[1, 2, 1] = bad
    else:
        y[2, 0] = bad
    with pytest.raises(ValueError, match="NaN or infinite"):
        NodeData(x, y)


@pytest.mark.parametrize(
    ("xshape", "yshape"), [((3, 4, 2), (3, 5)), ((3, 4, 2), (4, 4)), ((3, 4), (3, 4))]
)
def test_node_data_rejects_bad_shapes(xshape, yshape):
    with pytest.raises(ValueError):
        NodeData(np.zeros(xshape), np.zeros(yshape))


# ---------------------------------------------------------------- sampling set


@pytest.mark.parametrize(
    ("n", "fraction"),
    [(10, 0.3), (10, 0.7), (100, 0.29), (100, 0.57), (7, 0.5), (50, 0.0), (50, 1.0), (33, 0.1)],
)
def test_sampling_mask_size_and_reproducibility(n, fraction):
    expected = math.floor(Fraction(str(fraction)) * n)
    mask = sampling_mask(n, fraction, np.random.default_rng(3))
    assert mask.dtype == bool and mask.shape == (n,)
    assert int(mask.sum()) == expected
    np.testing.assert_array_equal(mask, sampling_mask(n, fraction, np.random.default_rng(3)))


def test_sampling_mask_depends_on_seed_and_is_uniform():
    n, fraction, reps = 12, 0.25, 3000
    masks = np.array([sampling_mask(n, fraction, np.random.default_rng(s)) for s in range(reps)])
    assert len({m.tobytes() for m in masks[:50]}) > 1
    p = 3 / 12
    freq = masks.mean(axis=0)
    assert np.all(np.abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / reps))


@pytest.mark.parametrize("fraction", [-0.1, 1.5])
def test_sampling_mask_rejects_bad_fraction(fraction):
    with pytest.raises(ValueError):
        sampling_mask(10, fraction, np.random.default_rng(0))


# ---------------------------------------------------------------- perturbation


def test_perturb_weights_scale():
    """w_i + scale * eps_i / ||w_i|| with eps_i ~ N(0, I) (docs/deviations/gtv.md#fig11-perturbation)."""
    rng = np.random.default_rng(12)
    n, d, scale = 4000, 3, 1e-3
    w = rng.standard_normal((n, d)) * rng.uniform(0.5, 4.0, (n, 1))
    out = perturb_weights(w, scale, np.random.default_rng(13))
    assert out.shape == w.shape
    eps = (out - w) * np.linalg.norm(w, axis=1, keepdims=True) / scale
    # eps is standard normal: zero mean, identity covariance, E||eps||^2 = d
    assert np.all(np.abs(eps.mean(axis=0)) <= 5 / np.sqrt(n))
    _assert_covariance_close(eps, np.eye(d))
    sq = np.sum(eps**2, axis=1)
    assert abs(sq.mean() - d) <= 5 * np.sqrt(2 * d / n)
    # the perturbation norm is inversely proportional to ||w_i||: no correlation of eps with ||w||
    big = np.linalg.norm(w, axis=1) > np.median(np.linalg.norm(w, axis=1))
    assert abs(sq[big].mean() - sq[~big].mean()) <= 5 * np.sqrt(2 * d / (n / 2) * 2)
    # scale 0 leaves the weights unchanged
    np.testing.assert_array_equal(perturb_weights(w, 0.0, np.random.default_rng(0)), w)


def test_perturb_weights_zero_vector_rejected():
    with pytest.raises(ValueError):
        perturb_weights(np.array([[1.0, 0.0], [0.0, 0.0]]), 1e-3, np.random.default_rng(0))


# ---------------------------------------------------------------- metrics


def test_parameter_mse_by_hand():
    w = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 3.0]])
    wbar = np.array([[1.5, 2.0], [1.0, 1.0], [3.0, 0.0]])
    # squared errors: 0.25, 1 + 4 = 5, 9
    per_node = [0.25, 5.0, 9.0]
    np.testing.assert_allclose(per_node_parameter_error(w, wbar), per_node)
    assert parameter_mse(w, wbar) == pytest.approx((0.25 + 5.0 + 9.0) / 3)
    assert parameter_mse(w, wbar, nodes=np.array([0, 2])) == pytest.approx((0.25 + 9.0) / 2)
    assert parameter_mse(w, wbar, nodes=np.array([False, True, True])) == pytest.approx(7.0)
    assert parameter_mse(wbar, wbar) == 0.0


def test_parameter_mse_random_against_loop():
    rng = np.random.default_rng(14)
    w, wbar = rng.standard_normal((7, 3)), rng.standard_normal((7, 3))
    total = 0.0
    for i in range(7):
        for k in range(3):
            total += (w[i, k] - wbar[i, k]) ** 2
    assert parameter_mse(w, wbar) == pytest.approx(total / 7, rel=1e-13)


def test_label_mse_and_predictions_by_hand():
    x = np.array([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [2.0, -1.0]]])
    y = np.array([[1.0, 1.0], [0.0, 4.0]])
    data = NodeData(x, y)
    w = np.array([[2.0, 1.0], [1.0, -1.0]])
    pred = linear_predictions(data, w)
    # node 0: x.w = [2, 1]; node 1: [0, 3]
    np.testing.assert_allclose(pred, [[2.0, 1.0], [0.0, 3.0]])
    # squared errors: [1, 0] and [0, 1]
    assert label_mse(pred, y) == pytest.approx(0.5)
    assert label_mse(pred, y, nodes=np.array([0])) == pytest.approx(0.5)
    assert label_mse(pred, y, nodes=np.array([False, True])) == pytest.approx(0.5)
    y2 = y.copy()
    y2[1, 1] = 6.0  # node 1 errors: [0, 9]
    assert label_mse(pred, y2) == pytest.approx((1 + 0 + 0 + 9) / 4)
    assert label_mse(pred, y2, nodes=np.array([1])) == pytest.approx(4.5)
