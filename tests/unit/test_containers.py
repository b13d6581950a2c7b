"""One vocabulary for the per-node containers (issue 43 item 4): ``NodeData``, ``FedRelaxData``,
the torch clients (``ClientData``, ``ClientBatches``, ``ClientBuckets``) and ``LinearProblem``
give each shared accessor one meaning (docs/package.md, "Per-node containers"), and the old
names still work with a ``FutureWarning`` naming the new one."""

import numpy as np
import pytest
import torch

from networkedfl import NodeData
from networkedfl.fedrelax import clustered_data, linear_problem
from networkedfl.nn import ClientBatches, ClientBuckets, ClientData, NextWordBatches, as_batches

SIZES = [3, 1, 2]  # real samples per node, padded to 3


def _ragged(d=2):
    rng = np.random.default_rng(0)
    return [rng.standard_normal((m, d)) for m in SIZES], [rng.standard_normal(m) for m in SIZES]


def test_the_shared_accessors_mean_the_same_on_every_container():
    x, y = _ragged()
    node = NodeData.from_ragged(x, y)
    clients = ClientData.from_client_arrays(x, y, dtype=torch.float64)
    batches = ClientBatches.from_client_data(clients)
    buckets = ClientBuckets.from_client_arrays(x, y, dtype=torch.float64)
    for c in (node, clients, batches, buckets):
        assert c.n_nodes == 3, type(c).__name__
        assert np.asarray(c.samples_per_node).tolist() == SIZES, type(c).__name__
    for c in (node, clients, batches, buckets):
        assert c.max_samples == 3, type(c).__name__  # the padded length (the largest bucket's)
    for c in (clients, batches, buckets):  # 0/1 sample weights: the counts, as floats
        assert c.weight_per_node.tolist() == [float(m) for m in SIZES], type(c).__name__
    fr = clustered_data([2, 2], 1.0, 0.0, dim=3, n_train=4, n_val=2, n_public=2, sigma=0.1, seed=0)
    assert (fr.n_nodes, fr.max_samples, fr.dim) == (4, 4, 3) and fr.samples_per_node.tolist() == [4] * 4
    problem = linear_problem(fr.graph, fr.features, fr.labels, fr.public)
    assert (problem.n_nodes, problem.dim) == (4, 3)


def test_the_weight_per_node_is_the_summed_sample_weight_not_the_count():
    weights = torch.tensor([[0.5, 2.0, 0.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    data = ClientData(torch.zeros(2, 3, 1, dtype=torch.float64), torch.zeros(2, 3, dtype=torch.float64), weights)
    assert data.weight_per_node.tolist() == [2.5, 1.0] and data.samples_per_node.tolist() == [2, 1]
    assert data.counts.tolist() == [2, 1]  # ClientData's name for samples_per_node, kept


@pytest.mark.parametrize(("make", "old", "new"), [
    (lambda: NodeData.from_ragged(*_ragged()), "n_samples", "max_samples"),
    (lambda: clustered_data([2], 1.0, 0.0, dim=2, n_train=3, n_val=1, n_public=1, sigma=0.1, seed=0),
     "n_samples", "max_samples"),
    (lambda: ClientData.from_client_arrays(*_ragged(), dtype=torch.float64), "n_clients", "n_nodes"),
    (lambda: ClientData.from_client_arrays(*_ragged(), dtype=torch.float64), "n_samples", "weight_per_node"),
    (lambda: ClientBuckets.from_client_arrays(*_ragged(), dtype=torch.float64), "n_clients", "n_nodes"),
    (lambda: ClientBuckets.from_client_arrays(*_ragged(), dtype=torch.float64), "n_samples", "weight_per_node"),
    (lambda: NextWordBatches(ClientBatches.from_client_data(ClientData.from_client_arrays(
        *_ragged(), dtype=torch.float64)), 5), "n_clients", "n_nodes"),
])
def test_an_old_name_warns_naming_the_new_one_and_still_works(make, old, new):
    container = make()
    with pytest.warns(FutureWarning, match=rf"\.{old} is deprecated; use \w+\.{new}"):
        value = getattr(container, old)
    expected = getattr(container, new)
    assert torch.equal(value, expected) if isinstance(expected, torch.Tensor) else value == expected


class _OldSource:
    """A user's batch source written against the old protocol (``n_clients``)."""

    n_clients = 2
    marker = "mine"

    def sample(self, batch_size, generator):
        return torch.ones(2, 1, 1), torch.ones(2, 1), torch.ones(2, 1)


def test_a_batch_source_with_the_old_n_clients_warns_and_still_runs():
    with pytest.warns(FutureWarning, match="n_clients is deprecated: a batch source names .* n_nodes"):
        source = as_batches(_OldSource(), torch.float64, "cpu")
    assert source.n_nodes == 2 and source.marker == "mine"  # other attributes pass through
    assert torch.equal(source.sample(1, None)[0], torch.ones(2, 1, 1))


def test_british_spellings_of_public_names_warn_and_still_work():
    """Issue 43 item 5: one spelling (-ize/-er, as scikit-learn's ``cluster_centers_``); the
    old names and keywords warn, naming the new ones, and give the same results."""
    from networkedfl.algorithms import (
        center_distances,
        centre_distances,
        kmeans_centers,
        kmeans_centres,
        personalised_steps,
        personalized_steps,
    )
    from networkedfl.datasets import (
        gaussian_mixture_centers,
        gaussian_mixture_centres,
        homologous_graphs,
    )
    from networkedfl.nn import linear_regression

    params, centers = torch.eye(3, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64)
    with pytest.warns(FutureWarning, match="centre_distances is deprecated; use center_distances"):
        assert torch.equal(centre_distances(params, centers), center_distances(params, centers))
    with pytest.warns(FutureWarning, match=r"center_distances\(centres=...\) is deprecated; use centers"):
        assert torch.equal(center_distances(params, centres=centers), center_distances(params, centers))
    with pytest.raises(TypeError, match="give 'centers' only"):
        center_distances(params, centres=centers, centers=centers)
    with pytest.warns(FutureWarning, match="kmeans_centres is deprecated; use kmeans_centers"):
        assert torch.equal(kmeans_centres(params, 2, 0), kmeans_centers(params, 2, 0))
    with pytest.warns(FutureWarning, match="gaussian_mixture_centres is deprecated"):
        old = gaussian_mixture_centres(0, 3, 2, (-0.5, 0.5))
    np.testing.assert_array_equal(old, gaussian_mixture_centers(0, 3, 2, (-0.5, 0.5)))
    kw = dict(n_nodes=12, std=0.5, weight_shape=(2, 2), n_neighbours=3)
    with pytest.warns(FutureWarning) as caught:
        hg = homologous_graphs(1, n_centres=3, centre_range=(-0.5, 0.5), **kw)
    assert sorted(str(w.message) for w in caught) == [
        "homologous_graphs(centre_range=...) is deprecated; use center_range=...",
        "homologous_graphs(n_centres=...) is deprecated; use n_centers=..."]
    with pytest.warns(FutureWarning, match=r"HomologousGraphs\.centres is deprecated; use HomologousGraphs\.centers"):
        np.testing.assert_array_equal(hg.centres, homologous_graphs(1, n_centers=3, center_range=(-0.5, 0.5), **kw).centers)
    model = linear_regression(2, bias=False)
    args = (model, torch.zeros(2, 2, dtype=torch.float64), torch.zeros(2, 2, dtype=torch.float64),
            torch.ones(2, 3, 2, dtype=torch.float64), torch.ones(2, 3, dtype=torch.float64),
            torch.ones(2, 3, dtype=torch.float64))
    with pytest.warns(FutureWarning, match="personalised_steps is deprecated; use personalized_steps"):
        old = personalised_steps(*args, lam=1.0, lr=0.1, steps=3)
    assert torch.equal(old, personalized_steps(*args, lam=1.0, lr=0.1, steps=3))


def test_every_rename_warns_with_one_class_shown_by_default_from_a_user_s_module(tmp_path):
    """Issue 42 item 8: one mechanism (``_validation.warn_renamed``) and one class,
    ``FutureWarning``: Python's default filters show it when a researcher's own module (not
    ``__main__``) calls an old name, where a ``DeprecationWarning`` would be hidden."""
    import subprocess
    import sys

    from networkedfl import _validation

    assert _validation.RENAMED_WARNING is FutureWarning
    (tmp_path / "user_code.py").write_text(
        "from networkedfl.datasets import gaussian_mixture_centres\n"
        "gaussian_mixture_centres(0, 3, 2, (-0.5, 0.5))\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "import user_code"], cwd=tmp_path, capture_output=True, text=True,
                          env={**__import__("os").environ, "PYTHONWARNINGS": ""}, check=True)
    assert "user_code.py:2: FutureWarning: gaussian_mixture_centres is deprecated" in done.stderr, done.stderr


def test_renamed_keywords_refuse_the_new_name_given_by_position():
    from networkedfl._validation import renamed_keywords

    @renamed_keywords(old="new")
    def f(a, new=None):
        return a, new

    with pytest.warns(FutureWarning, match=r"f\(old=...\) is deprecated; use new=..."):
        assert f(1, old=2) == (1, 2)
    with pytest.raises(TypeError, match="got 'old' and 'new'"):
        f(1, 3, old=2)
