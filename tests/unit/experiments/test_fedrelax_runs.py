"""Fig. 1c's least-squares model: its closed-form gradients and losses are the generic
``vmap(grad(...))`` path's, and the baselines' table does not depend on which one runs."""

import numpy as np
import pandas as pd
import pytest
import torch
from torch.func import grad, vmap

import networkedfl.experiments.fedrelax.runs as fr
from networkedfl.nn import client_gradients, linear_regression, losses_of_models


def test_least_squares_closed_forms_equal_the_generic_path():
    rng = np.random.default_rng(3)
    model = fr.least_squares_model(4)
    params = torch.as_tensor(rng.standard_normal((3, 4)))
    x, y = torch.as_tensor(rng.standard_normal((3, 6, 4))), torch.as_tensor(rng.standard_normal((3, 6)))
    w = torch.as_tensor(rng.random((3, 6)))
    w[0] = 0.0  # an empty (padded) client: gradient and loss 0
    torch.testing.assert_close(model.batch_gradient(params, x, y, w), vmap(grad(model.loss))(params, x, y, w),
                               rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(model.batch_loss(params, x, y, w), vmap(model.loss)(params, x, y, w),
                               rtol=1e-12, atol=1e-14)
    assert model.batch_loss(params, x, y, w)[0] == 0
    # the nn helpers take the closed forms; a tracked or single-client input the generic path
    generic = linear_regression(4)
    torch.testing.assert_close(client_gradients(model, params, x, y, w), client_gradients(generic, params, x, y, w),
                               rtol=1e-12, atol=1e-14)
    torch.testing.assert_close(losses_of_models(model, params, x, y, w), losses_of_models(generic, params, x, y, w),
                               rtol=1e-12, atol=1e-14)
    assert model.batch_gradient(params.clone().requires_grad_(True), x, y, w) is None
    assert model.batch_loss(params[0], x[0], y[0], w[0]) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_the_baselines_table_is_the_generic_models(test_config, monkeypatch, seed):
    target = "fedrelax_fig01c_baselines"
    params = {k: v for k, v in test_config["experiments"][target].items() if k != "tuning"}
    closed = fr.run_baselines(params, "all", seed, 3, experiment_id=target)
    monkeypatch.setattr(fr, "least_squares_model", lambda d: linear_regression(d))
    generic = fr.run_baselines(params, "all", seed, 3, experiment_id=target)
    assert set(closed["method"]) >= {"oracle", "fedavg", "ifca_correct", "ifca_incorrect"}
    pd.testing.assert_frame_equal(closed, generic, check_exact=False, rtol=1e-9)
