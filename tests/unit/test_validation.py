"""Package validation (issue 22, item 6): the graph, the client containers and the
algorithms reject non-integer indices and counts, wrong shapes and empty data with a
ValueError naming the argument, before any computation (nothing is truncated, reshaped or
left to fail inside numpy or torch).  The rule for integers, shared through
:mod:`networkedfl._validation`: ints, numpy integers and integral floats (``3.0``) are
integers; ``bool``, ``2.7`` and NaN are not."""

import numpy as np
import pytest
import torch

from networkedfl import NodeData
from networkedfl._validation import check_int, check_int_array
from networkedfl.algorithms import dfl_sgd, fedavg, fedavg_steps, fedsgd, ifca
from networkedfl.graphs import EmpiricalGraph, GraphError, stochastic_block_model
from networkedfl.gtv import GTVRegressor, SquaredErrorLoss
from networkedfl.nn import ClientBatches, ClientData, as_batches, linear_regression

RNG = np.random.default_rng(0)
X, Y = RNG.standard_normal((3, 4, 2)), RNG.standard_normal((3, 4))


# ---------------------------------------------------------------- the shared helpers


@pytest.mark.parametrize("value", [3, np.int64(3), 3.0, np.float32(3.0), np.array(3)])
def test_integers_and_integral_floats_are_integers(value):
    assert check_int(value, "k") == 3 and type(check_int(value, "k")) is int


@pytest.mark.parametrize("value", [2.7, True, np.bool_(False), np.nan, np.inf, "3", None, [3]])
def test_non_integers_are_named(value):
    with pytest.raises(ValueError, match="k must be an integer"):
        check_int(value, "k")


def test_integer_bounds_are_named():
    assert check_int(0, "k", minimum=0) == 0
    with pytest.raises(ValueError, match=r"k must be a non-negative integer, got -1"):
        check_int(-1, "k", minimum=0)
    with pytest.raises(ValueError, match=r"k must be a positive integer, got 0"):
        check_int(0, "k", minimum=1)
    with pytest.raises(ValueError, match=r"k must be a positive integer, got 2.5"):
        check_int(2.5, "k", minimum=1)
    with pytest.raises(GraphError, match="k must be an integer"):
        check_int(2.5, "k", error=GraphError)


def test_integer_arrays():
    out = check_int_array([[0.0, 1.0], [2, 3]], "idx")
    assert out.dtype == np.int64 and out.tolist() == [[0, 1], [2, 3]]
    assert check_int_array([], "idx").dtype == np.int64
    for bad in ([0, 1.5], [True, False], [0, np.nan], ["0", "1"], [0, None]):
        with pytest.raises(ValueError, match="idx must hold integers"):
            check_int_array(bad, "idx")


# ---------------------------------------------------------------- EmpiricalGraph


def test_graph_names_non_numeric_weights():
    """Before: numpy's "could not convert string to float: 'a'", no argument named."""
    with pytest.raises(GraphError, match="weights must be numbers"):
        EmpiricalGraph(2, [[0, 1]], ["a"])


def test_graph_rejects_edge_indices_beyond_int64_without_a_cast_warning():
    """Before: 1e30 was cast to int64 (RuntimeWarning: invalid value encountered in cast)
    and the error spoke of the endpoint range only by the wrapped value's accident."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(GraphError, match="edges must hold integers"):
            EmpiricalGraph(2, np.array([[0.0, 1e30]]), [1.0])


# ---------------------------------------------------------------- NodeData


def test_node_data_counts_follow_the_integer_rule():
    with pytest.raises(ValueError, match="counts must hold integers"):
        NodeData(X, Y, np.array([1.5, 2.0, 4.0]))
    with pytest.raises(ValueError, match="counts must hold integers"):
        NodeData(X, Y, np.array([True, True, True]))
    with pytest.raises(ValueError, match=r"counts must have shape \(3,\)"):
        NodeData(X, Y, np.array([[1], [2], [4]]))
    assert NodeData(X, Y, np.array([1.0, 2.0, 4.0])).counts.tolist() == [1, 2, 4]


@pytest.mark.parametrize(
    ("features", "labels", "message"),
    [
        pytest.param(X[0], Y, r"features must have shape \(n, m, d\), got \(4, 2\)", id="features-2d"),
        pytest.param(X, Y[:2], r"labels must have shape \(3, 4\) \(one row per node of features\), got \(2, 4\)",
                     id="fewer-label-rows"),
        pytest.param(X, Y[:, :3], r"labels must have shape \(3, 4\)", id="fewer-labels"),
        pytest.param(np.zeros((0, 4, 2)), np.zeros((0, 4)), "features hold no node", id="no-nodes"),
        pytest.param(np.zeros((3, 0, 2)), np.zeros((3, 0)), "features hold no sample", id="no-samples"),
    ],
)
def test_node_data_names_the_argument_with_the_wrong_shape(features, labels, message):
    """Before: one message naming both arrays, and an empty NodeData was accepted."""
    with pytest.raises(ValueError, match=message):
        NodeData(features, labels)


# ---------------------------------------------------------------- ClientData


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        pytest.param([1.5, 2, 4], "counts must hold integers", id="float"),  # was truncated to 1
        pytest.param([True, True, False], "counts must hold integers", id="bool"),  # was 1, 1, 0
        pytest.param([[1], [2], [4]], r"counts must have shape \(3,\)", id="column"),  # was reshaped
        pytest.param([1, 2], r"counts must have shape \(3,\)", id="short"),
        pytest.param([1, 2, 5], r"counts must lie in \[0, 4\]", id="too-large"),
    ],
)
def test_client_data_counts(counts, message):
    with pytest.raises(ValueError, match=message):
        ClientData.from_arrays(X, Y, counts)


def test_client_data_integral_float_counts_equal_integer_counts():
    a = ClientData.from_arrays(X, Y, [1.0, 2.0, 4.0])
    b = ClientData.from_arrays(X, Y, [1, 2, 4])
    assert torch.equal(a.sample_weights, b.sample_weights)


@pytest.mark.parametrize(
    ("features", "targets", "message"),
    [
        pytest.param(X, Y[:2], r"targets must have shape \(3, 4\) \(one row per client of features\), got \(2, 4\)",
                     id="fewer-target-rows"),
        pytest.param(X, Y[:, :, None], r"targets must have shape \(3, 4\)", id="targets-3d"),
        pytest.param(X[0, 0], Y[0], r"features must have shape \(n, m, \.\.\.\), got \(2,\)", id="features-1d"),
        pytest.param(np.zeros((0, 4, 2)), np.zeros((0, 4)), "features hold no client", id="no-clients"),
    ],
)
def test_client_data_names_the_argument_with_the_wrong_shape(features, targets, message):
    """Before: zero clients failed inside torch (RuntimeError: cannot reshape tensor of 0
    elements) and shape errors named all three arrays at once."""
    with pytest.raises(ValueError, match=message):
        ClientData.from_arrays(features, targets)


def test_client_data_constructor_names_sample_weights():
    x, y = torch.as_tensor(X), torch.as_tensor(Y)
    with pytest.raises(ValueError, match=r"sample_weights must have shape \(3, 4\).*got \(3, 3\)"):
        ClientData(x, y, torch.ones(3, 3, dtype=x.dtype))
    with pytest.raises(ValueError, match="features hold no client"):
        ClientData(x[:0], y[:0], torch.ones(0, 4, dtype=x.dtype))
    with pytest.raises(ValueError, match="features hold no client"):
        ClientData.from_arrays(X, Y).subset([])


# ---------------------------------------------------------------- ClientBatches


def test_client_batches_reject_zero_clients_and_name_the_argument():
    """Before: ClientBatches with zero clients was accepted (and failed later in torch)."""
    with pytest.raises(ValueError, match="features hold no client"):
        ClientBatches.from_arrays(np.zeros((0, 4, 2)), np.zeros((0, 4)))
    with pytest.raises(ValueError, match=r"targets must have shape \(3, 4, \.\.\.\).*got \(2, 4\)"):
        ClientBatches.from_arrays(X, Y[:2])
    with pytest.raises(ValueError, match=r"sample_weights must have shape \(3, 4\).*got \(3, 3\)"):
        ClientBatches.from_arrays(X, Y, np.ones((3, 3)))
    with pytest.raises(TypeError, match="ClientBatches fields must be torch tensors"):
        ClientBatches(X, torch.as_tensor(Y), torch.ones(3, 4, dtype=torch.float64))
    vector_targets = ClientBatches.from_arrays(X, RNG.standard_normal((3, 4, 8)))
    assert vector_targets.targets.shape == (3, 4, 8)


class _EmptySource:
    """A user's batch source that holds no client."""

    n_nodes = 0

    def sample(self, batch_size, generator):
        return torch.zeros(0, 1, 2), torch.zeros(0, 1), torch.zeros(0, 1)


@pytest.mark.parametrize("algorithm", ["dfl_sgd", "fedavg_steps"])
def test_step_algorithms_reject_a_source_without_clients(algorithm):
    """Before: a source of zero clients ran: DFL-SGD stopped with NonFiniteError (NaN
    server model), FedAvg with ZeroDivisionError."""
    kwargs = {"n_rounds": 2, "local_steps": 1, "lr": 0.1, "batch_size": None, "seed": 0}
    run = {
        "dfl_sgd": lambda: dfl_sgd(linear_regression(2), _EmptySource(), np.zeros((0, 0)), **kwargs),
        "fedavg_steps": lambda: fedavg_steps(linear_regression(2), _EmptySource(), **kwargs),
    }[algorithm]
    with pytest.raises(ValueError, match="data holds no client"):
        run()
    with pytest.raises(ValueError, match="data holds no client"):
        as_batches(_EmptySource(), torch.float64, "cpu")


# ---------------------------------------------------------------- torch algorithms


@pytest.mark.parametrize("algorithm", ["fedavg", "fedsgd", "ifca"])
def test_server_algorithms_name_a_participant_mask_without_clients(algorithm):
    """Before: an all-false participants mask failed inside torch (RuntimeError: cannot
    reshape tensor of 0 elements) in the first round."""
    data = ClientData.from_arrays(X, Y)
    kwargs = {"n_rounds": 2, "lr": 0.1, "participants": np.zeros(3, bool), "seed": 0}
    run = {
        "fedavg": lambda: fedavg(linear_regression(2), data, local_epochs=1, batch_size=None, **kwargs),
        "fedsgd": lambda: fedsgd(linear_regression(2), data, **kwargs),
        "ifca": lambda: ifca(linear_regression(2, init="bernoulli"), data, n_clusters=2, **kwargs),
    }[algorithm]
    with pytest.raises(ValueError, match="participants select no client"):
        run()


@pytest.mark.parametrize("n_rounds", [-5, 2.5, True, None])
def test_round_counts_are_checked(n_rounds):
    with pytest.raises(ValueError, match="n_rounds must be a non-negative integer"):
        fedavg(linear_regression(2), ClientData.from_arrays(X, Y), n_rounds=n_rounds, local_epochs=1,
               batch_size=None, lr=0.1, seed=0)


# ---------------------------------------------------------------- GTVRegressor


def test_gtv_regressor_checks_n_iter_and_warns_on_an_empty_mask():
    graph = stochastic_block_model([3, 3], 1.0, 0.5, seed=0)
    x, y = RNG.standard_normal((6, 4, 2)), RNG.standard_normal((6, 4))
    for n_iter in (-5, 0, 2.5, True):
        with pytest.raises(ValueError, match="n_iter must be a positive integer"):
            GTVRegressor(graph, lam=0.1, n_iter=n_iter).fit(x, y)
    with pytest.warns(UserWarning, match="the sampling mask selects no node"):
        GTVRegressor(graph, lam=0.1, n_iter=3).fit(x, y, mask=np.zeros(6, bool))


@pytest.mark.parametrize(
    "mask",
    [
        pytest.param(np.array([0, 2, 3, 4, 5, 1]), id="indices"),  # was read as [False, True, ..., True]
        pytest.param(np.array([0.5, 1, 1, 1, 1, 1]), id="fractions"),
        pytest.param(np.array([2, 1, 1, 1, 1, 1]), id="counts"),
    ],
)
def test_sampling_mask_must_be_boolean(mask):
    data = NodeData(RNG.standard_normal((6, 4, 2)), RNG.standard_normal((6, 4)))
    with pytest.raises(ValueError, match="mask must"):
        SquaredErrorLoss(data, mask=mask)


# ---------------------------------------------------------------- magnitudes (issue 45, item 5)
# Weights and data the solvers cannot represent: beyond 1e150 their squares and sums overflow
# float64 (1.8e308), below the smallest normal float (2.2e-308) they are subnormal and lose
# their digits; both are refused with the argument and the offending entry named.


@pytest.mark.parametrize(("weight", "what"), [(1e308, r"1e\+308"), (1e200, r"1e\+200"), (5e-324, "5e-324"),
                                              (1e-310, "1e-310")])
def test_graph_refuses_edge_weights_the_solvers_cannot_represent(weight, what):
    with pytest.raises(GraphError, match=rf"edge weights.*edge 1 has {what}"):
        EmpiricalGraph(3, [[0, 1], [1, 2]], [1.0, weight])


def test_graph_keeps_ordinary_zero_and_extreme_but_representable_weights():
    graph = EmpiricalGraph(4, [[0, 1], [1, 2], [2, 3]], [0.0, 1e150, np.finfo(float).tiny])
    assert graph.weights.tolist() == [0.0, 1e150, np.finfo(float).tiny]


def test_gtv_regressor_names_features_or_labels_beyond_the_representable():
    graph = EmpiricalGraph(2, [[0, 1]], [1.0])
    table = np.column_stack([[0, 0, 1, 1], RNG.standard_normal(4)])
    labels = RNG.standard_normal(4)
    big = table.copy()
    big[2, 1] = 1e200
    with pytest.raises(ValueError, match=r"X.*1e\+200"):
        GTVRegressor(graph, n_iter=5).fit(big, labels)
    tiny = labels.copy()
    tiny[3] = 5e-324
    with pytest.raises(ValueError, match=r"y.*5e-324"):
        GTVRegressor(graph, n_iter=5).fit(table, tiny)
    assert GTVRegressor(graph, n_iter=5).fit(table, labels).coef_.shape == (2, 1)


def test_node_data_names_features_beyond_the_representable():
    x = X.copy()
    x[1, 2, 0] = 1e200
    with pytest.raises(ValueError, match=r"features.*\(1, 2, 0\).*1e\+200"):
        NodeData(x, Y)
    y = Y.copy()
    y[2, 1] = -5e-324
    with pytest.raises(ValueError, match=r"labels.*\(2, 1\).*-5e-324"):
        NodeData(X, y)
    assert NodeData(X * 1e100, Y * 1e-100).features.shape == X.shape


def test_fedrelax_names_features_beyond_the_representable():
    from sklearn.tree import DecisionTreeRegressor

    from networkedfl.fedrelax import FedRelax

    table = np.column_stack([RNG.standard_normal(6)])
    table[4, 0] = 1e200
    with pytest.raises(ValueError, match=r"X.*1e\+200"):
        FedRelax(estimator=DecisionTreeRegressor(), n_iter=1).fit(table, RNG.standard_normal(6))


def test_fedrelax_function_names_the_node_array_beyond_the_representable():
    from sklearn.tree import DecisionTreeRegressor

    from networkedfl.fedrelax import fedrelax

    graph = EmpiricalGraph(2, [[0, 1]], [1.0])
    xs = [RNG.standard_normal((3, 2)) for _ in range(2)]
    ys = [RNG.standard_normal(3) for _ in range(2)]
    public = [RNG.standard_normal((4, 2)) for _ in range(2)]
    ys[1][2] = 1e-310
    with pytest.raises(ValueError, match=r"labels\[1\]: entry 2 has 1e-310"):
        fedrelax(graph, xs, ys, public, DecisionTreeRegressor(), alpha=0.1, n_iter=1)
