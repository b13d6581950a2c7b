"""Issue 35 items 4 and 7 for the FedRelax estimator: the graph at construction (as
GTVRegressor), one public table for every node, scikit-learn's and numpy's random sources for
``random_state``, a callback in the constructor that can stop the run, and ``check_estimator``."""

import numpy as np
import pytest
from sklearn.tree import DecisionTreeRegressor
from sklearn.utils.estimator_checks import check_estimator

from networkedfl.fedrelax import FedRelax, clustered_data, fedrelax


def small(seed=3):
    return clustered_data([5, 5], 0.9, 0.05, 2, 10, 10, 8, 0.1, np.random.default_rng(seed))


def tree():
    return DecisionTreeRegressor(max_depth=3, random_state=0)


def test_the_graph_at_construction_is_algorithm_1():
    data = small()
    model = FedRelax(tree(), data.graph, alpha=0.05, n_iter=2, random_state=0)
    model.fit(data.features, data.labels, public=data.public)
    direct = fedrelax(data.graph, data.features, data.labels, data.public, tree(), alpha=0.05,
                      n_iter=2, seed=0)
    for a, b in zip(model.estimators_, direct.estimators, strict=True):
        np.testing.assert_array_equal(a.predict(data.val_features[0]), b.predict(data.val_features[0]))
    assert model.n_features_in_ == 3  # the node column and d = 2
    with pytest.raises(TypeError, match=r"FedRelax\(estimator, graph"):
        FedRelax(tree(), alpha=0.05).fit(data.graph, data.features, data.labels, data.public)


def test_one_public_table_is_shared_by_every_node():
    data = small()
    table = data.public[0]
    one = FedRelax(tree(), data.graph, alpha=0.05, n_iter=2, random_state=0)
    one.fit(data.features, data.labels, public=table)
    copies = FedRelax(tree(), data.graph, alpha=0.05, n_iter=2, random_state=0)
    copies.fit(data.features, data.labels, public=np.stack([table] * data.graph.n_nodes))
    np.testing.assert_array_equal(one.predict(data.val_features), copies.predict(data.val_features))


def test_the_samples_table_with_a_node_column():
    data = small()
    n, m, d = data.features.shape
    node = np.repeat(np.arange(n), m)
    table = np.column_stack([node, data.features.reshape(-1, d)])
    flat = FedRelax(tree(), data.graph, alpha=0.05, n_iter=2, random_state=0)
    flat.fit(table, data.labels.ravel(), public=data.public)
    nested = FedRelax(tree(), data.graph, alpha=0.05, n_iter=2, random_state=0)
    nested.fit(data.features, data.labels, public=data.public)
    np.testing.assert_array_equal(flat.predict(table), nested.predict(data.features).ravel())


@pytest.mark.parametrize("source", [lambda: np.random.RandomState(0), lambda: np.random.SeedSequence(0)],
                         ids=["RandomState", "SeedSequence"])
def test_random_state_takes_the_sources_numpy_and_scikit_learn_users_pass(source):
    data = small()
    kwargs = dict(alpha=0.05, n_iter=2, self_distillation=5)
    a = FedRelax(tree(), data.graph, random_state=source(), **kwargs).fit(data.features, data.labels,
                                                                           public=data.public)
    b = FedRelax(tree(), data.graph, random_state=source(), **kwargs).fit(data.features, data.labels,
                                                                           public=data.public)
    np.testing.assert_array_equal(a.predict(data.features), b.predict(data.features))


def test_a_bad_random_state_is_named_as_such():
    data = small()
    with pytest.raises(TypeError, match="random_state must be"):
        FedRelax(tree(), data.graph, random_state="zero").fit(data.features, data.labels,
                                                              public=data.public)


def test_a_callback_in_the_constructor_records_and_stops():
    data = small()
    model = FedRelax(tree(), data.graph, alpha=0.05, n_iter=10, random_state=0,
                     callback=lambda k, models: True if k == 2 else {"k": k})
    model.fit(data.features, data.labels, public=data.public)
    assert [row["iteration"] for row in model.history_] == [0, 1, 2]


#: Checks of sklearn.utils.estimator_checks that FedRelax fails, and why (docs/package.md).
FEDRELAX_EXPECTED_FAILURES = {}


def test_check_estimator_passes_all_but_the_documented_checks():
    results = check_estimator(FedRelax(DecisionTreeRegressor(max_depth=3), n_iter=2), on_fail=None,
                              on_skip=None, expected_failed_checks=FEDRELAX_EXPECTED_FAILURES)
    failed = sorted(r["check_name"] for r in results if r["status"] == "failed")
    assert not failed, failed
    passed = sum(r["status"] == "passed" for r in results)
    assert passed >= 35, passed  # 11 of 41 before issue 35
