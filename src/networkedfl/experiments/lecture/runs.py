"""The distributed-ML lecture (FedSGD vs FedAvg; client-server vs peer-to-peer).

``lecture_fig1_fedsgd_vs_fedavg`` is a demonstration the lecture itself does not run
(EXPERIMENTS.md §7): IID clients train a softmax regression with FedSGD, with FedAvg for
several local epochs ``E`` and batch sizes ``B``, and with serverless FedAvg that gossips
with its ring neighbours (Metropolis-Hastings weights).  Every run is one job; the table
records, per round, the test loss and accuracy, the messages and bytes sent so far and,
for gossip, the consensus distance.

``lecture_table1_fedsgd_fedavg`` is the lecture's static table; its job also runs one
round of FedSGD and of FedAvg on a tiny problem and records what each uploaded, so the
claims check the table against the algorithms' communication logs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..registry import Claim, rng_for

__all__ = [
    "LECTURE_TABLE",
    "gaussian_mixture_classification",
    "lecture_run_settings",
    "run_lecture_demo",
    "run_lecture_table",
]

Params = Mapping[str, Any]

#: The lecture's table, verbatim (EXPERIMENTS.md §7).
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
    """One job per configured run (``fedsgd``, ``fedavg-E5-B10``, ``gossip-E1-B10``, ...)."""
    return [_run_name(run) for run in params["runs"]]


def run_lecture_demo(params: Params, setting: str, seed: int, base_seed: int, *,
                     experiment_id: str) -> pd.DataFrame:
    """Run one configured method for one seed; tidy per-round records."""
    import torch

    from ...algorithms import decentralized_fedavg, fedavg, fedsgd
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

    def evaluate(state):
        # every model held (clients for gossip, the server's for client-server) on the test set
        held = state.client_params if run["method"] == "gossip" else state.global_params
        loss = losses_of_models(model, held, test_x, test_y)[0]
        logits = torch.vmap(model.forward, in_dims=(0, None))(held, test_x[0])
        accuracy = (logits.argmax(-1) == test_y).double().mean(-1)
        return {"test_loss": float(loss.mean()), "test_accuracy": float(accuracy.mean())}

    common = {"n_rounds": int(params["rounds"]), "lr": float(params["lr"]),
              "seed": rng_for(base_seed, experiment_id, seed, setting),
              "callback": evaluate, "device": device, "dtype": torch.float64}
    if run["method"] == "fedsgd":
        result = fedsgd(model, clients, **common)
    elif run["method"] == "fedavg":
        result = fedavg(model, clients, local_epochs=int(run["local_epochs"]),
                        batch_size=int(run["batch_size"]), **common)
    else:  # gossip: every client exchanges with its two ring neighbours
        result = decentralized_fedavg(model, clients, ring(int(params["n_clients"])), local_epochs=int(run["local_epochs"]),
                                      batch_size=int(run["batch_size"]), rule=run.get("rule", "metropolis"),
                                      **common)
    base = {"method": run["method"], "E": run.get("local_epochs", np.nan),
            "B": run.get("batch_size", np.nan), "seed": seed}
    metrics = ("test_loss", "test_accuracy", "messages_total", "bytes_total", "consensus_distance")
    records = [
        {**base, "round": row["round"], "metric": m, "value": float(row[m])}
        for row in result.history for m in metrics if m in row
    ]
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


# ------------------------------------------------------------------------------ claims

def lecture_table_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    got = {(r.method, r.metric): str(r.value) for r in table.itertuples()}
    verbatim = {f"{m} / {c}": got.get((m, c)) == text
                for m, row in LECTURE_TABLE.items() for c, text in row.items()}
    wrong = [k for k, ok in verbatim.items() if not ok]
    uploads = {m: got.get((m, "run_log_upload")) for m in LECTURE_TABLE}
    return [
        Claim("rows and columns verbatim", not wrong,
              "all 8 cells match the lecture" if not wrong else f"differ: {wrong}"),
        Claim("the run log shows FedSGD uploading gradients and FedAvg models",
              uploads == {"FedSGD": "gradients", "FedAvg": "models"}, f"uploaded: {uploads}"),
    ]


def _curve(table: pd.DataFrame, method: str, metric: str, e=None, b=None) -> pd.Series:
    rows = table[(table["method"] == method) & (table["metric"] == metric)]
    if e is not None:
        rows = rows[(rows["E"] == e) & (rows["B"] == b)]
    return rows.assign(value=rows["value"].astype(float)).groupby("round")["value"].mean()


def lecture_demo_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    t = table[table["metric"] != "uploaded"]
    final = int(t["round"].max())
    fedavg_fast = _curve(t, "fedavg", "test_loss", 5, 10)
    fedsgd_loss = _curve(t, "fedsgd", "test_loss")
    curves = {_run_name({"method": m, "local_epochs": _int(e), "batch_size": _int(b)}):
              _curve(t, m, "test_loss", None if m == "fedsgd" else e, None if m == "fedsgd" else b)
              for (m, e, b), _ in t[t["metric"] == "test_loss"].groupby(["method", "E", "B"], dropna=False)}
    curves["gossip consensus distance"] = _curve(t, "gossip", "consensus_distance")
    decreasing = {name: bool(c.iloc[-1] < c.iloc[0]) for name, c in curves.items()}
    target = _curve(t, "fedavg", "test_loss", 1, 10).loc[10]
    sent_cs = _curve(t, "fedavg", "messages_total", 1, 10).loc[10]
    gossip_loss = _curve(t, "gossip", "test_loss")
    reached = gossip_loss[gossip_loss <= target]
    sent_p2p = _curve(t, "gossip", "messages_total").loc[reached.index[0]] if len(reached) else np.inf
    return [
        Claim(f"at round T = {final}, FedAvg (E = 5, B = 10) is below FedSGD in test loss",
              bool(fedavg_fast.loc[final] < fedsgd_loss.loc[final]),
              f"{fedavg_fast.loc[final]:.4g} vs {fedsgd_loss.loc[final]:.4g}"),
        Claim("every curve's test loss and the gossip consensus distance end below round 1",
              all(decreasing.values()),
              "; ".join(f"{k}: {c.iloc[0]:.3g} -> {c.iloc[-1]:.3g}" for k, c in curves.items())),
        Claim("to reach client-server FedAvg's (E = 1, B = 10) round-10 test loss, "
              "peer-to-peer sends at least as many messages",
              bool(sent_p2p >= sent_cs),
              f"target {target:.4g}: client-server {sent_cs:.0f} messages, peer-to-peer "
              + (f"{sent_p2p:.0f}" if np.isfinite(sent_p2p) else "never reaches it")),
    ]


def _int(value: Any) -> Any:
    return value if pd.isna(value) else int(value)
