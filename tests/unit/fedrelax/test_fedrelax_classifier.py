"""Issue 42 item 6 for FedRelax: a classifier network (labels of any type, ``classes_``,
``predict_proba``, scikit-learn's model selection and checks) and sample weights through a
``Pipeline``'s final step (Abdurakhmanova et al. 2024, eq. (10): the augmented refit (19) is
weighted, never resampled, where the local model takes weights)."""

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.neighbors import KNeighborsRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVC
from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor
from sklearn.utils.estimator_checks import check_estimator

from networkedfl.fedrelax import (
    FedRelax,
    FedRelaxClassifier,
    accepts_sample_weight,
    clustered_data,
    fedrelax,
)


def clustered_labels(seed=3, n_per_cluster=5, m=20):
    """Two clusters of nodes whose labels are the sign of a cluster's linear model, as strings."""
    data = clustered_data([n_per_cluster] * 2, 0.9, 0.05, 2, m, 30, 20, 0.0, np.random.default_rng(seed))
    names = np.array(["down", "up"])
    return data, names[(data.labels > 0).astype(int)], names[(data.val_labels > 0).astype(int)]


def classifier(**kwargs):
    return FedRelaxClassifier(DecisionTreeClassifier(max_depth=3, random_state=0), **kwargs)


# ------------------------------------------------------------------------------ classification


def test_string_labels_come_back_as_labels_of_their_dtype():
    """Before issue 42 FedRelax refused string labels ("could not convert string to float")."""
    data, y, y_val = clustered_labels()
    model = classifier(graph=data.graph, alpha=0.05, n_iter=3, random_state=0)
    model.fit(data.features, list(y), public=data.public)
    np.testing.assert_array_equal(model.classes_, ["down", "up"])
    n, m, d = data.val_features.shape
    table = np.column_stack([np.repeat(np.arange(n), m), data.val_features.reshape(-1, d)])
    pred = model.predict(table)
    assert isinstance(pred, np.ndarray) and pred.dtype == y.dtype and pred.shape == (n * m,)
    assert set(pred) <= {"down", "up"}
    assert model.score(table, y_val.ravel()) > 0.8  # the sign of a 2-d linear model, 20 points each
    np.testing.assert_array_equal(model.predict_node(3, data.val_features[3]), pred[3 * m: 4 * m])
    per_node = model.predict(list(data.val_features))  # per-node arrays: one (N,) ndarray, node after node
    assert isinstance(per_node, np.ndarray) and per_node.dtype == y.dtype
    np.testing.assert_array_equal(per_node, pred)


def test_integer_labels_stay_integers_not_floats():
    """Before issue 42 FedRelax with a classifier returned floats (0.0, 1.0, ...)."""
    data, y, _ = clustered_labels()
    codes = np.where(y == "up", 7, -3)
    model = classifier(graph=data.graph, alpha=0.05, n_iter=2, random_state=0)
    model.fit(data.features, codes, public=data.public)
    pred = model.predict(data.val_features)
    assert pred.dtype == codes.dtype and set(np.unique(pred)) <= {-3, 7}
    np.testing.assert_array_equal(model.classes_, [-3, 7])


def test_a_classifier_template_in_the_regressor_is_refused_naming_the_classifier():
    data, y, _ = clustered_labels()
    with pytest.raises(TypeError, match="FedRelaxClassifier"):
        FedRelax(DecisionTreeClassifier(), data.graph).fit(data.features, data.labels, public=data.public)
    with pytest.raises(TypeError, match="FedRelax"):
        FedRelaxClassifier(DecisionTreeRegressor(), data.graph).fit(data.features, y, public=data.public)


def test_predict_proba_has_a_column_per_class_of_the_whole_network():
    """A node whose local data and pseudo-labels hold one class still gets a column per class
    of the network (its model's columns put where its classes are in ``classes_``)."""
    data, y, _ = clustered_labels()
    y = y.copy()
    y[0] = "down"  # node 0 only ever sees "down" without coupling
    y[1, 0] = "left"  # a third class, at node 1 only
    model = classifier(graph=data.graph, alpha=0.0, n_iter=1, random_state=0)
    model.fit(data.features, y)
    proba = model.predict_proba(data.val_features)
    assert proba.shape == (*data.val_features.shape[:2], 3)
    np.testing.assert_allclose(proba.sum(-1), 1.0)
    np.testing.assert_array_equal(proba[0, :, list(model.classes_).index("down")], 1.0)
    np.testing.assert_array_equal(model.classes_[proba.argmax(-1)], model.predict(data.val_features))
    assert not hasattr(FedRelaxClassifier(LinearSVC()), "predict_proba")  # where the local model has it


def test_the_classifier_is_algorithm_1_on_the_label_codes():
    """Equivalence: FedRelaxClassifier on string labels is ``fedrelax`` on their codes 0..K-1 with
    classifiers as local models (pseudo-labels: the neighbours' predicted classes)."""
    data, y, _ = clustered_labels()
    codes = (y == "up").astype(float)
    model = classifier(graph=data.graph, alpha=0.1, n_iter=3, self_distillation=5, random_state=0)
    model.fit(data.features, y, public=data.public)
    direct = fedrelax(data.graph, data.features, codes, data.public,
                      DecisionTreeClassifier(max_depth=3, random_state=0), alpha=0.1, n_iter=3,
                      self_distillation=5, seed=0)
    expect = np.stack([est.predict(x) for est, x in zip(direct.estimators, data.val_features, strict=True)])
    np.testing.assert_array_equal(model.predict(data.val_features), model.classes_[expect.astype(int)])


def test_clone_and_grid_search_select_alpha_holding_out_samples():
    data, y, _ = clustered_labels()
    n, m, d = data.features.shape
    node = np.repeat(np.arange(n), m)
    table = np.column_stack([node, data.features.reshape(-1, d)])
    base = classifier(graph=data.graph, n_iter=2, random_state=0)
    assert clone(base).get_params()["alpha"] == base.alpha
    search = GridSearchCV(base, {"alpha": [0.0, 0.1]}, cv=StratifiedKFold(2, shuffle=True, random_state=0))
    search.fit(table, y.ravel(), public=data.public[0][:7])  # 7 rows != len(X): not split
    assert search.best_estimator_.classes_.tolist() == ["down", "up"]
    assert 0.0 <= search.best_score_ <= 1.0


def test_regression_targets_are_refused_by_the_classifier():
    data = clustered_labels()[0]
    with pytest.raises(ValueError, match="Unknown label type"):
        classifier(graph=data.graph).fit(data.features, data.labels, public=data.public)


#: Checks of sklearn.utils.estimator_checks that FedRelaxClassifier fails, and why (docs/package.md).
CLASSIFIER_EXPECTED_FAILURES = {}


@pytest.mark.filterwarnings("error::RuntimeWarning")  # no cast of an infinite y on the way to its error
def test_check_estimator_passes_all_but_the_documented_checks():
    results = check_estimator(FedRelaxClassifier(DecisionTreeClassifier(max_depth=3), n_iter=2),
                              on_fail=None, on_skip=None,
                              expected_failed_checks=CLASSIFIER_EXPECTED_FAILURES)
    failed = sorted(r["check_name"] for r in results if r["status"] == "failed")
    assert not failed, failed
    assert sum(r["status"] == "passed" for r in results) >= 54, results  # all but array API (skipped)


# ----------------------------------------------------------------------------- Pipeline weights


def test_a_pipeline_takes_the_weights_of_its_final_step():
    """Before issue 42 a Pipeline (whose ``fit`` names no ``sample_weight``) was fitted on a
    weighted resample of the augmented dataset, silently."""
    pipe = make_pipeline(StandardScaler(), LinearRegression())
    assert accepts_sample_weight(pipe)
    assert not accepts_sample_weight(make_pipeline(StandardScaler(), KNeighborsRegressor()))


def test_weighting_through_a_pipeline_equals_weighting_the_bare_estimator():
    """Equivalence: an identity-preprocessing Pipeline around a linear model gives the bare
    model's coefficients at every node; a resample would not (its draws differ from the weights)."""
    data = clustered_data([4, 4], 0.9, 0.1, 3, 10, 12, 15, 0.1, np.random.default_rng(5))
    kwargs = dict(alpha=0.3, n_iter=3, seed=0, weighting="objective")
    bare = fedrelax(data.graph, data.features, data.labels, data.public, LinearRegression(), **kwargs)
    piped = fedrelax(data.graph, data.features, data.labels, data.public,
                     make_pipeline(StandardScaler(with_mean=False, with_std=False), LinearRegression()),
                     **kwargs)
    for b, p in zip(bare.estimators, piped.estimators, strict=True):
        np.testing.assert_allclose(p[-1].coef_, b.coef_, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(p[-1].intercept_, b.intercept_, rtol=1e-9, atol=1e-12)


def test_a_scaling_pipeline_predicts_as_the_weighted_bare_model_on_scaled_data():
    """A StandardScaler in front of a linear model changes nothing of the least-squares fit's
    predictions when the refit is weighted (an affine map of the features)."""
    data = clustered_data([4, 4], 0.9, 0.1, 3, 10, 12, 15, 0.1, np.random.default_rng(6))
    kwargs = dict(alpha=0.3, n_iter=3, seed=0)
    bare = fedrelax(data.graph, data.features, data.labels, data.public, LinearRegression(), **kwargs)
    piped = fedrelax(data.graph, data.features, data.labels, data.public,
                     make_pipeline(StandardScaler(), LinearRegression()), **kwargs)
    for b, p, x in zip(bare.estimators, piped.estimators, data.val_features, strict=True):
        np.testing.assert_allclose(p.predict(x), b.predict(x), rtol=1e-8, atol=1e-10)


def test_with_metadata_routing_the_final_step_that_requests_weights_gets_them():
    """scikit-learn's metadata routing on: ``sample_weight`` goes to the step that requested it
    (the same refit as the bare model); a Pipeline whose step did not request it is an error
    from scikit-learn, not a silent resample."""
    import sklearn

    data = clustered_data([3, 3], 0.9, 0.1, 2, 8, 10, 12, 0.1, np.random.default_rng(7))
    kwargs = dict(alpha=0.3, n_iter=2, seed=0)
    bare = fedrelax(data.graph, data.features, data.labels, data.public, LinearRegression(), **kwargs)
    with sklearn.config_context(enable_metadata_routing=True):
        requested = make_pipeline(StandardScaler(with_mean=False, with_std=False).set_fit_request(sample_weight=False),
                                  LinearRegression().set_fit_request(sample_weight=True))
        piped = fedrelax(data.graph, data.features, data.labels, data.public, requested, **kwargs)
        with pytest.raises(Exception, match="sample_weight"):
            fedrelax(data.graph, data.features, data.labels, data.public,
                     make_pipeline(StandardScaler(), LinearRegression()), **kwargs)
    for b, p in zip(bare.estimators, piped.estimators, strict=True):
        np.testing.assert_allclose(p[-1].coef_, b.coef_, rtol=1e-9, atol=1e-12)
