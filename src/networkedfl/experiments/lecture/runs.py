"""The distributed-ML lecture (FedSGD vs FedAvg; client-server vs peer-to-peer).

``lecture_fig1_fedsgd_vs_fedavg`` is a demonstration the lecture itself does not run
(Tham, FedSGD vs FedAvg lecture): IID clients train a softmax regression with FedSGD, with FedAvg for
several local epochs ``E`` and batch sizes ``B``, with serverless FedAvg that gossips with
its ring neighbours (Metropolis-Hastings weights) and, as the reference for what the
exchange does, with the same local training and no exchange at all (``method: local``).
Every run is one job; the table records, per round, the test loss and accuracy, the
messages and bytes sent so far, the messages sent or received by the busiest participant
(the server, or the client with the most neighbours) and, for gossip and local training,
the consensus distance.

``lecture_table1_fedsgd_fedavg`` is the lecture's static table; its job also runs one
round of FedSGD and of FedAvg on a tiny problem and records what each uploaded, so the
claims check the table against the algorithms' communication logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ...seeding import rng_for

__all__ = [
    "LECTURE_TABLE",
    "gaussian_mixture_classification",
    "lecture_run_settings",
    "run_lecture_demo",
    "run_lecture_table",
]

Params = Mapping[str, Any]

#: The lecture's table, verbatim (Tham, FedSGD vs FedAvg lecture).
LECTURE_TABLE: dict[str, dict[str, str]] = {
    "FedSGD": {"Local": "gradient computation", "Upload": "local gradients",
               "Global": "gradient averaging", "Download": "updated model"},
    "FedAvg": {"Local": "training", "Upload": "local models",
               "Global": "model averaging", "Download": "updated model"},
}


def gaussian_mixture_classification(
    n_clients: int, per_client: int, n_test: int, dim: int, n_classes: int, separation: float,
    rng: np.random.Generator,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """IID synthetic classification: ``x = mu_y + N(0, I)``, class means ``mu_c`` of norm ~``separation``.

    Returns client features ``(n, m, d)``, client labels ``(n, m)``, test features and labels.
    """
    means = rng.standard_normal((n_classes, dim)) * (separation / np.sqrt(dim))
    total = n_clients * per_client + n_test
    labels = rng.integers(n_classes, size=total)
    features = means[labels] + rng.standard_normal((total, dim))
    train = n_clients * per_client
    return (features[:train].reshape(n_clients, per_client, dim),
            labels[:train].reshape(n_clients, per_client), features[train:], labels[train:])


def _run_name(run: Mapping[str, Any]) -> str:
    if run["method"] == "fedsgd":
        return "fedsgd"
    return f"{run['method']}-E{run['local_epochs']}-B{run['batch_size']}"


def lecture_run_settings(params: Params) -> list[str]:
    """One job per configured run (``fedsgd``, ``fedavg-E5-B10``, ``gossip-E1-B10``,
    ``local-E1-B10``, ...)."""
    return [_run_name(run) for run in params["runs"]]


def run_lecture_demo(params: Params, setting: str, seed: int, base_seed: int, *,
                     experiment_id: str) -> pd.DataFrame:
    """Run one configured method for one seed; tidy per-round records.

    ``local`` trains every client alone for ``rounds x E`` epochs (no messages) and records
    every ``E``-th epoch as a round, so that its consensus distance is the gossip run's
    without the exchange.  ``messages_busiest_node`` counts the messages the busiest
    participant sent or received so far: the server (every message of client-server
    training), or, for gossip, a client with the most neighbours (it sends one message to
    each neighbour and receives one from each in every gossip step).
    """
    import torch

    from ...algorithms import decentralized_fedavg, fedavg, fedsgd, local_training
    from ...algorithms.aggregate import consensus_distance
    from ...graphs import ring
    from ...nn import ClientData, losses_of_models, softmax_regression

    run = {_run_name(r): r for r in params["runs"]}[setting]
    data_rng = rng_for(base_seed, experiment_id, seed)  # the same data for every run
    spec = params["data"]
    x, y, x_test, y_test = gaussian_mixture_classification(
        int(params["n_clients"]), int(params["samples_per_client"]), int(params["n_test"]),
        int(spec["dim"]), int(spec["n_classes"]), float(spec["separation"]), data_rng)
    model = softmax_regression(int(spec["dim"]), int(spec["n_classes"]))
    clients = ClientData.from_arrays(x, y, dtype=torch.float64)  # the lecture's precision
    device = torch.device(params.get("device", "cpu"))
    test_x = torch.as_tensor(x_test, device=device)[None]
    test_y = torch.as_tensor(y_test, device=device)[None]
    serverless = run["method"] in ("gossip", "local")

    def evaluate(state):
        # every model held (clients for gossip and local training, the server's for
        # client-server) on the test set
        held = state.client_params if serverless else state.global_params
        loss = losses_of_models(model, held, test_x, test_y)[0]
        logits = torch.vmap(model.forward, in_dims=(0, None))(held, test_x[0])
        accuracy = (logits.argmax(-1) == test_y).double().mean(-1)
        out = {"test_loss": float(loss.mean()), "test_accuracy": float(accuracy.mean())}
        if run["method"] == "local":
            out["consensus_distance"] = consensus_distance(state.client_params)
        return out

    rounds = int(params["rounds"])
    common = {"n_rounds": rounds, "lr": float(params["lr"]),
              "seed": rng_for(base_seed, experiment_id, seed, setting),
              "callback": evaluate, "device": device, "dtype": torch.float64}
    busiest = 1.0  # messages of the busiest participant per message sent in all
    if run["method"] == "fedsgd":
        result = fedsgd(model, clients, **common)
    elif run["method"] == "fedavg":
        result = fedavg(model, clients, local_epochs=int(run["local_epochs"]),
                        batch_size=int(run["batch_size"]), **common)
    elif run["method"] == "gossip":  # every client exchanges with its two ring neighbours
        graph = ring(int(params["n_clients"]))
        busiest = float(graph.degrees.max()) / graph.n_edges
        result = decentralized_fedavg(model, clients, graph=graph, local_epochs=int(run["local_epochs"]),
                                      batch_size=int(run["batch_size"]), rule=run.get("rule", "metropolis"),
                                      **common)
    else:  # local training alone: E epochs per round, no messages (the same draws as one run)
        result = local_training(model, clients, local_epochs=int(run["local_epochs"]),
                                batch_size=int(run["batch_size"]), **common)
    history = result.history
    base = {"method": run["method"], "E": run.get("local_epochs", np.nan),
            "B": run.get("batch_size", np.nan), "seed": seed}
    metrics = ("test_loss", "test_accuracy", "messages_total", "bytes_total", "consensus_distance")
    records = [
        {**base, "round": row["round"], "metric": m, "value": float(row[m])}
        for row in history for m in metrics if m in row
    ]
    records += [{**base, "round": row["round"], "metric": "messages_busiest_node",
                 "value": float(row["messages_total"]) * busiest} for row in history]
    uploads = {entry["upload"] for entry in result.log}
    records.append({**base, "round": np.nan, "metric": "uploaded", "value": ",".join(sorted(uploads))})
    return pd.DataFrame.from_records(records)


def run_lecture_table(params: Params, setting: str, seed: int, base_seed: int, *,
                      experiment_id: str) -> pd.DataFrame:
    """The lecture's table, plus what one round of FedSGD and FedAvg actually uploads."""
    import torch

    from ...algorithms import fedavg, fedsgd
    from ...nn import ClientData, softmax_regression

    records = [{"method": method, "metric": column, "value": text, "seed": seed}
               for method, row in LECTURE_TABLE.items() for column, text in row.items()]
    rng = rng_for(base_seed, experiment_id, seed)
    x, y, _, _ = gaussian_mixture_classification(3, 20, 1, 4, 3, 3.0, rng)
    model, clients = softmax_regression(4, 3), ClientData.from_arrays(x, y, dtype=torch.float64)
    device, dtype = params.get("device", "cpu"), torch.float64  # the table's precision (8-byte floats)
    runs = {"FedSGD": fedsgd(model, clients, n_rounds=1, lr=0.1, seed=rng, device=device, dtype=dtype),
            "FedAvg": fedavg(model, clients, n_rounds=1, local_epochs=1, batch_size=5, lr=0.1,
                             seed=rng, device=device, dtype=dtype)}
    for method, result in runs.items():
        records.append({"method": method, "metric": "run_log_upload",
                        "value": result.log[0]["upload"], "seed": seed})
    return pd.DataFrame.from_records(records)
