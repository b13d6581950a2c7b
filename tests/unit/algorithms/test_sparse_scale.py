"""Sparse end to end (issue 42, item 3): no dense ``n x n`` array in the mixing-matrix
checks, DFL or gossip, so a 10^5-node ring runs in a process allowed 2 GiB; the sparse
mixing path gives the dense one's numbers on small graphs; one graph-argument name."""

import os
import resource
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import networkedfl
from networkedfl.algorithms import (
    check_doubly_stochastic,
    decentralized_fedavg,
    dfl_gt,
    dfl_sgd,
    gossip_average,
    mixing_matrix,
    mixing_operator,
)
from networkedfl.graphs import ring, stochastic_block_model
from networkedfl.nn import ClientData, linear_regression

TWO_GIB = 2 << 30

SCRIPT = textwrap.dedent("""
    import numpy as np, torch
    from networkedfl.algorithms import decentralized_fedavg, dfl_gt, dfl_sgd, gossip_average, mixing_matrix
    from networkedfl.graphs import ring
    from networkedfl.nn import ClientData, linear_regression

    n = 100_000
    rng = np.random.default_rng(0)
    data = ClientData.from_arrays(rng.standard_normal((n, 2, 3)), rng.standard_normal((n, 2)),
                                  dtype=torch.float64)
    graph = ring(n)
    common = dict(n_rounds=2, lr=0.1, seed=0)
    for run in (dfl_sgd, dfl_gt):
        result = run(linear_regression(3), data, graph, local_steps=2, batch_size=None, **common)
        assert result.client_params.shape == (n, 3) and result.log[-1]["messages_up"] == 2 * n
    result = decentralized_fedavg(linear_regression(3), data, graph, local_epochs=1, batch_size=2, **common)
    assert result.client_params.shape == (n, 3)
    values = rng.standard_normal(n)
    mixed = gossip_average(values, mixing_matrix(graph), 3)
    assert abs(mixed.mean() - values.mean()) < 1e-12
    print("ok")
""")


def _limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (TWO_GIB, TWO_GIB))


def test_dfl_and_gossip_on_a_100k_node_ring_run_within_2_gib():
    """Before: ``check_doubly_stochastic`` densified W (``Unable to allocate 74.5 GiB``)."""
    src = str(Path(networkedfl.__file__).resolve().parents[1])
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MALLOC_ARENA_MAX": "2",
           "PYTHONPATH": os.pathsep.join([src, os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env,
                          timeout=600, preexec_fn=_limit_memory)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


# ------------------------------------------------------------------------ the check


def test_the_check_accepts_sparse_and_names_the_offending_row_and_column():
    w = mixing_matrix(ring(6))
    check_doubly_stochastic(w)
    check_doubly_stochastic(sp.coo_matrix(w))
    check_doubly_stochastic(torch.as_tensor(w.toarray()).to_sparse())
    bad = w.tolil()
    bad[2, 3] += 0.25  # row 2 and column 3 now sum to 1.25
    with pytest.raises(ValueError, match=r"row 2 sums to 1\.25.*column 3 sums to 1\.25"):
        check_doubly_stochastic(bad.tocsr())
    shifted = w.tolil()
    shifted[4, 5] += 0.1
    shifted[4, 4] -= 0.1
    with pytest.raises(ValueError, match=r"stochastic[^;]*: column 4 sums to 0\.9 \(2 columns off\)$"):
        check_doubly_stochastic(shifted.tocsr())  # the rows still sum to 1: only columns named
    negative = sp.csr_matrix(np.array([[1.5, -0.5], [-0.5, 1.5]]))
    with pytest.raises(ValueError, match=r"negative entries.*\(0, 1\)"):
        check_doubly_stochastic(negative)
    with pytest.raises(ValueError, match="square"):
        check_doubly_stochastic(sp.csr_matrix((3, 4)))
    with pytest.raises(ValueError, match="not finite"):
        check_doubly_stochastic(sp.csr_matrix(np.array([[np.nan, 1.0], [1.0, 0.0]])))


# --------------------------------------------------------------- sparse = dense mixing


def _problem(n=8, seed=0):
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, 5, 3)), rng.standard_normal((n, 5))
    return ClientData.from_arrays(x, y, dtype=torch.float64)


@pytest.mark.parametrize("run", [dfl_sgd, dfl_gt])
def test_sparse_and_dense_mixing_matrices_give_the_same_run(run):
    graph = stochastic_block_model([4, 4], 0.9, 0.3, np.random.default_rng(1))
    w = mixing_matrix(graph)
    options = dict(n_rounds=3, local_steps=2, lr=0.05, batch_size=2, seed=4)
    runs = [run(linear_regression(3), _problem(), m, **options)
            for m in (graph, w, sp.coo_matrix(w), w.toarray(), torch.as_tensor(w.toarray()))]
    for other in runs[1:]:
        torch.testing.assert_close(other.client_params, runs[0].client_params, rtol=0, atol=1e-14)
        assert other.log[-1]["messages_up"] == runs[0].log[-1]["messages_up"]


def test_mixing_operator_is_sparse_for_every_input_and_counts_messages():
    graph = ring(5)
    w = mixing_matrix(graph)
    for given in (graph, w, w.toarray(), torch.as_tensor(w.toarray())):
        op, messages = mixing_operator(given, dtype=torch.float64)
        assert op.layout == torch.sparse_coo and messages == 10
        np.testing.assert_array_equal(op.to_dense().numpy(), w.toarray())


def test_gossip_average_sparse_equals_dense_and_keeps_the_type():
    w = mixing_matrix(ring(7))
    values = np.random.default_rng(2).standard_normal((7, 2, 3))
    expected = np.linalg.matrix_power(w.toarray(), 4) @ values.reshape(7, -1)
    for mixing in (w, torch.as_tensor(w.toarray()).to_sparse()):
        got = gossip_average(values, mixing, 4)
        assert isinstance(got, np.ndarray) and got.shape == values.shape
        np.testing.assert_allclose(got.reshape(7, -1), expected, rtol=0, atol=1e-14)
        tensor = gossip_average(torch.as_tensor(values), mixing, 4)
        assert isinstance(tensor, torch.Tensor)
        np.testing.assert_allclose(tensor.reshape(7, -1).numpy(), expected, rtol=0, atol=1e-14)


# ------------------------------------------------------------------ the argument's name


@pytest.mark.parametrize("run", [dfl_sgd, dfl_gt])
def test_dfl_takes_graph_and_the_old_mixing_keyword_with_a_warning(run):
    graph = ring(8)
    options = dict(n_rounds=2, local_steps=1, lr=0.1, batch_size=None, seed=0)
    new = run(linear_regression(3), _problem(), graph=graph, **options)
    with pytest.warns(FutureWarning, match=rf"{run.__name__}\(mixing=...\) is deprecated; use graph=..."):
        old = run(linear_regression(3), _problem(), mixing=graph, **options)
    assert torch.equal(new.client_params, old.client_params)
    for both in (((graph,), {"mixing": graph}), ((), {"graph": graph, "mixing": graph})):
        with pytest.raises(TypeError, match="got 'mixing' and 'graph'.*give 'graph' only"):
            run(linear_regression(3), _problem(), *both[0], **both[1], **options)
    with pytest.raises(TypeError, match="missing.*'graph'"):
        run(linear_regression(3), _problem(), **options)


def test_decentralized_fedavg_takes_the_same_graph_keyword():
    result = decentralized_fedavg(linear_regression(3), _problem(), graph=ring(8), n_rounds=1,
                                  local_epochs=1, batch_size=None, lr=0.1, seed=0)
    assert result.client_params.shape == (8, 3)
