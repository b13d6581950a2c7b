"""GTV penalties: the dual proximal operators, conjugates and values against their definitions.

With ``g_e = r_e * phi`` (``r_e = lambda * A_e``) the dual step of Algorithm 1 is
``prox_{step g_e^*}``.  For a norm ``phi`` the conjugate ``g_e^*`` is the indicator of the
dual-norm ball of radius ``r_e`` (l_inf ball for ``l1``, l2 ball for ``nlasso``), so the
prox is the Euclidean projection onto that ball; for ``mocha`` (``phi = ||.||^2``) it is
``||u||^2 / (4 r_e)``.  Every reference below is computed from these definitions only.
"""

import numpy as np
import pytest
from scipy.optimize import minimize

from networkedfl.gtv import PENALTIES, get_penalty

NORM_PENALTIES = ("l1", "nlasso")


def _random_problem(seed, n_edges=8, dim=3):
    rng = np.random.default_rng(seed)
    z = 2.0 * rng.standard_normal((n_edges, dim))
    radius = rng.uniform(0.2, 2.5, n_edges)
    step = rng.uniform(0.1, 3.0, n_edges)
    return rng, z, radius, step


def _dual_norm(name, u):
    """The norm whose ball is the domain of g^*: l_inf for l1, l2 for nlasso."""
    return np.abs(u).max(axis=-1) if name == "l1" else np.linalg.norm(u, axis=-1)


def _random_points_in_ball(name, rng, radius, count, dim):
    """Random points of the dual-norm ball of the given radius, including boundary points."""
    if name == "l1":
        pts = rng.uniform(-radius, radius, (count, dim))
        corners = radius * rng.choice([-1.0, 1.0], (count, dim))
        return np.concatenate([pts, corners])
    directions = rng.standard_normal((count, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    inside = directions * radius * rng.uniform(0.0, 1.0, (count, 1)) ** (1.0 / dim)
    return np.concatenate([inside, radius * directions])


def _soft_threshold(x, t):
    """prox of t*||.||_1 (t per row)."""
    t = np.asarray(t, float)[:, None]
    return np.sign(x) * np.maximum(np.abs(x) - t, 0.0)


def _block_soft_threshold(x, t):
    """prox of t*||.||_2 (t per row)."""
    out = np.zeros_like(x)
    for e, row in enumerate(x):
        nrm = np.linalg.norm(row)
        if nrm > t[e]:
            out[e] = (1.0 - t[e] / nrm) * row
    return out


@pytest.mark.parametrize("name", NORM_PENALTIES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_norm_dual_prox_is_projection_characterisation(name, seed):
    rng, z, radius, step = _random_problem(seed)
    p = get_penalty(name).dual_prox(z, step, radius)
    # p lies in the ball ...
    assert np.all(_dual_norm(name, p) <= radius * (1 + 1e-12))
    # ... and (z - p) . (q - p) <= 0 for every q of the ball (variational inequality).
    for e in range(z.shape[0]):
        q = _random_points_in_ball(name, rng, radius[e], 400, z.shape[1])
        inner = (q - p[e]) @ (z[e] - p[e])
        assert inner.max() <= 1e-10
    # points already inside the ball are left unchanged
    inside = z / np.maximum(_dual_norm(name, z), 1e-300)[:, None] * (0.5 * radius)[:, None]
    np.testing.assert_allclose(get_penalty(name).dual_prox(inside, step, radius), inside, atol=1e-14)


@pytest.mark.parametrize("name", NORM_PENALTIES)
def test_norm_dual_prox_matches_constrained_minimisation(name):
    _, z, radius, step = _random_problem(3, n_edges=5)
    p = get_penalty(name).dual_prox(z, step, radius)
    for e in range(z.shape[0]):
        def obj(u, e=e):
            return float(np.sum((u - z[e]) ** 2))

        def jac(u, e=e):
            return 2.0 * (u - z[e])

        if name == "l1":
            res = minimize(
                obj, np.zeros(z.shape[1]), jac=jac, method="L-BFGS-B",
                bounds=[(-radius[e], radius[e])] * z.shape[1],
                options={"ftol": 1e-15, "gtol": 1e-12},
            )
        else:
            cons = {
                "type": "ineq",
                "fun": lambda u, e=e: radius[e] ** 2 - float(u @ u),
                "jac": lambda u: -2.0 * u,
            }
            # start inside the ball but not at 0, where the constraint's gradient vanishes
            # (SLSQP of scipy >= 1.16 then stops with "positive directional derivative")
            start = 0.5 * radius[e] * z[e] / max(float(np.linalg.norm(z[e])), 1e-300)
            res = minimize(
                obj, start, jac=jac, method="SLSQP", constraints=[cons],
                options={"ftol": 1e-10, "maxiter": 500},
            )
        assert res.success
        np.testing.assert_allclose(p[e], res.x, atol=1e-6)


@pytest.mark.parametrize("name", NORM_PENALTIES)
def test_norm_dual_prox_does_not_depend_on_step(name):
    # prox of step * indicator = projection, for every step > 0
    _, z, radius, step = _random_problem(4)
    pen = get_penalty(name)
    np.testing.assert_array_equal(pen.dual_prox(z, step, radius), pen.dual_prox(z, 10 * step, radius))


@pytest.mark.parametrize("seed", [0, 1])
def test_mocha_dual_prox_matches_numerical_minimisation(seed):
    _, z, radius, step = _random_problem(seed, n_edges=6)
    p = get_penalty("mocha").dual_prox(z, step, radius)
    for e in range(z.shape[0]):
        def obj(u, e=e):
            return float(step[e] * (u @ u) / (4 * radius[e]) + 0.5 * np.sum((u - z[e]) ** 2))

        def jac(u, e=e):
            return step[e] * u / (2 * radius[e]) + (u - z[e])

        res = minimize(obj, np.zeros(z.shape[1]), jac=jac, method="BFGS", options={"gtol": 1e-12})
        np.testing.assert_allclose(p[e], res.x, atol=1e-7)
    # first-order optimality condition: step * u / (2 r) + u - z = 0
    grad = step[:, None] * p / (2 * radius[:, None]) + p - z
    np.testing.assert_allclose(grad, 0.0, atol=1e-12)


@pytest.mark.parametrize("name", ["l1", "nlasso", "mocha"])
@pytest.mark.parametrize("seed", [0, 5])
def test_moreau_decomposition(name, seed):
    """z = prox_{s g*}(z) + s prox_{g/s}(z/s), with independent primal proxes of g = r phi."""
    _, z, radius, step = _random_problem(seed)
    z *= 3.0  # make sure some rows exceed the radius and some do not
    z[::3] *= 0.05
    dual_part = get_penalty(name).dual_prox(z, step, radius)
    scaled = z / step[:, None]
    if name == "l1":
        primal = _soft_threshold(scaled, radius / step)
    elif name == "nlasso":
        primal = _block_soft_threshold(scaled, radius / step)
    else:
        # prox of (r/s) ||v||^2: argmin (r/s)||v||^2 + 0.5||v - x||^2 = x / (1 + 2 r / s)
        primal = scaled / (1.0 + 2.0 * radius / step)[:, None]
    np.testing.assert_allclose(dual_part + step[:, None] * primal, z, atol=1e-12)
    if name != "mocha":
        # both the clipped and the untouched regimes are exercised
        clipped = _dual_norm(name, z) > radius
        assert clipped.any() and (~clipped).any()


@pytest.mark.parametrize("name", ["l1", "nlasso", "mocha"])
def test_zero_radius_gives_zero_dual(name):
    _, z, radius, step = _random_problem(6)
    radius[::2] = 0.0
    p = get_penalty(name).dual_prox(z, step, radius)
    assert np.all(p[::2] == 0.0)
    assert np.all(np.abs(p[1::2]) > 0)


@pytest.mark.parametrize("name", NORM_PENALTIES)
def test_norm_conjugate_is_ball_indicator(name):
    rng, _, radius, _ = _random_problem(7, n_edges=6)
    pen = get_penalty(name)
    direction = rng.standard_normal((6, 3))
    on_sphere = direction / _dual_norm(name, direction)[:, None] * radius[:, None]
    np.testing.assert_array_equal(pen.conjugate(0.99 * on_sphere, radius), 0.0)
    np.testing.assert_array_equal(pen.conjugate(on_sphere, radius), 0.0)
    np.testing.assert_array_equal(pen.conjugate(np.zeros((6, 3)), radius), 0.0)
    assert np.all(np.isinf(pen.conjugate(1.01 * on_sphere, radius)))
    assert np.all(pen.conjugate(1.01 * on_sphere, radius) > 0)


def test_l1_and_nlasso_conjugates_use_the_right_dual_norm():
    radius = np.array([1.0])
    # ||u||_inf = 0.9 <= 1 < ||u||_2 = 0.9 sqrt(2)
    u = np.array([[0.9, 0.9]])
    assert PENALTIES["l1"].conjugate(u, radius)[0] == 0.0
    assert np.isinf(PENALTIES["nlasso"].conjugate(u, radius)[0])


def test_mocha_conjugate_closed_form_and_supremum():
    rng, _, radius, _ = _random_problem(8, n_edges=5)
    u = rng.standard_normal((5, 3))
    conj = get_penalty("mocha").conjugate(u, radius)
    np.testing.assert_allclose(conj, np.sum(u**2, axis=1) / (4 * radius), rtol=1e-13)
    # definition: sup_v u.v - r ||v||^2 (numerically, a concave maximisation)
    for e in range(5):
        res = minimize(
            lambda v, e=e: -(u[e] @ v - radius[e] * (v @ v)),
            np.zeros(3),
            jac=lambda v, e=e: -(u[e] - 2 * radius[e] * v),
            method="BFGS",
            options={"gtol": 1e-12},
        )
        np.testing.assert_allclose(conj[e], -res.fun, rtol=1e-9)
    # radius 0: g = 0, so g* is the indicator of {0}
    zero = np.zeros(2)
    assert get_penalty("mocha").conjugate(np.zeros((2, 3)), zero).tolist() == [0.0, 0.0]
    assert np.all(np.isinf(get_penalty("mocha").conjugate(u[:2], zero)))


@pytest.mark.parametrize("name", ["l1", "nlasso", "mocha"])
def test_values_and_fenchel_young(name):
    rng, _, radius, _ = _random_problem(9, n_edges=7)
    v = rng.standard_normal((7, 3))
    pen = get_penalty(name)
    expected = {
        "l1": radius * np.abs(v).sum(axis=1),
        "nlasso": radius * np.sqrt((v**2).sum(axis=1)),
        "mocha": radius * (v**2).sum(axis=1),
    }[name]
    np.testing.assert_allclose(pen.value(v, radius), expected, rtol=1e-13)
    # Fenchel-Young: g(v) + g*(u) >= u.v, with equality for u in the subdifferential
    for _ in range(20):
        u = rng.standard_normal((7, 3))
        assert np.all(pen.value(v, radius) + pen.conjugate(u, radius) >= np.sum(u * v, axis=1) - 1e-12)
    subgrad = {
        "l1": radius[:, None] * np.sign(v),
        "nlasso": radius[:, None] * v / np.linalg.norm(v, axis=1, keepdims=True),
        "mocha": 2 * radius[:, None] * v,
    }[name]
    np.testing.assert_allclose(
        pen.value(v, radius) + pen.conjugate(subgrad, radius), np.sum(subgrad * v, axis=1), atol=1e-12
    )


def test_get_penalty_unknown_name_lists_choices():
    with pytest.raises(ValueError, match="bogus") as info:
        get_penalty("bogus")
    for valid in ("l1", "nlasso", "mocha"):
        assert valid in str(info.value)


def test_get_penalty_lookup_and_passthrough():
    for name in ("l1", "nlasso", "mocha"):
        assert get_penalty(name).name == name
    custom = PENALTIES["nlasso"]
    assert get_penalty(custom) is custom


@pytest.mark.parametrize("name", ["nlasso", "l1", "mocha"])
@pytest.mark.parametrize(("d", "order"), [(2, "C"), (2, "F"), (1, "C"), (5, "C"), (5, "F")])
def test_the_in_place_dual_prox_operator_equals_the_dual_prox_bit_for_bit(name, d, order):
    """What the primal-dual iteration calls (in place, on reused buffers) is exactly the
    penalty's dual prox (33), for every layout the iteration uses; zero radii included."""
    from networkedfl.gtv import get_penalty, row_norms

    rng = np.random.default_rng(d)
    z = np.array(rng.standard_normal((50, d)) * 3, order=order)
    step = 0.2 + rng.random(50)
    radius = rng.random(50)
    radius[:5] = 0.0
    penalty = get_penalty(name)
    expected = penalty.dual_prox(z.copy(order=order), step, radius)
    operator = penalty.dual_prox_operator(step, radius)
    for _ in range(2):  # the operator keeps buffers between calls
        work = z.copy(order=order)
        got = operator(work)
        assert np.array_equal(got, expected)
    assert np.array_equal(row_norms(z), np.sqrt(np.einsum("ed,ed->e", z, z)))
