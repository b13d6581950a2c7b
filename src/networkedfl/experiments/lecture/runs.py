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
from ..claims import all_of, below, claim, exact, per_seed, threshold
from ..registry import Claim

__all__ = [
    "LECTURE_TABLE",
    "gaussian_mixture_classification",
    "lecture_demo_claims",
    "lecture_run_settings",
    "lecture_table_claims",
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


# ------------------------------------------------------------------------------ claims


def lecture_table_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """The lecture's table, cell for cell, and the uploads in the runs' logs: exact checks."""
    got = {(r.method, r.metric): str(r.value) for r in table.itertuples()}
    verbatim = {f"{m} / {c}": got.get((m, c)) == text
                for m, row in LECTURE_TABLE.items() for c, text in row.items()}
    wrong = [k for k, ok in verbatim.items() if not ok]
    uploads = {m: got.get((m, "run_log_upload")) for m in LECTURE_TABLE}
    return [
        exact("rows and columns verbatim", not wrong,
              "all 8 cells match the lecture" if not wrong else f"differ: {wrong}"),
        exact("the run log shows FedSGD uploading gradients and FedAvg models",
              uploads == {"FedSGD": "gradients", "FedAvg": "models"}, f"uploaded: {uploads}"),
    ]


def _runs_table(table: pd.DataFrame) -> pd.DataFrame:
    """The demo's numeric rows with a ``run`` column (``fedsgd``, ``fedavg-E5-B10``, ...)."""
    t = table[table["metric"] != "uploaded"]
    names = [_run_name({"method": m, "local_epochs": _int(e), "batch_size": _int(b)})
             for m, e, b in zip(t["method"], t["E"], t["B"], strict=True)]
    return t.assign(value=t["value"].astype(float), run=names)


def _at_round(t: pd.DataFrame, metric: str, round_: int) -> pd.DataFrame:
    """Per seed (rows) and run (columns): ``metric`` at ``round_``."""
    return per_seed(t[t["round"] == round_], ["run"], metric)


def _messages_to_reach(t: pd.DataFrame, run: str, target: pd.Series, last: int) -> pd.Series:
    """Per seed: the messages ``run`` had sent in all when its test loss first reached the
    seed's ``target``; a run that never reaches it counts ``last + 1`` rounds' messages (a
    lower bound of what it would need, so the comparison stays conservative)."""
    part = t[t["run"] == run]
    loss = part[part["metric"] == "test_loss"].pivot_table(index="seed", columns="round", values="value")
    sent = part[part["metric"] == "messages_total"].pivot_table(index="seed", columns="round", values="value")
    out = {}
    for seed, curve in loss.iterrows():
        reached = curve.index[curve.to_numpy() <= target.get(seed, -np.inf)]
        per_round = sent.loc[seed, last] / last
        out[seed] = sent.loc[seed, reached[0]] if len(reached) else per_round * (last + 1)
    return pd.Series(out, dtype=float)


def lecture_demo_claims(table: pd.DataFrame, params: Params) -> list[Claim]:
    """The demo's claims, from per-seed values paired by seed (every run of a seed trains on
    the same data).  Losses and message counts are compared on the log scale.

    The consensus distance of gossip starts at zero (every client starts from one model) and
    rises while local training pulls the clients apart; with a constant step the exchange
    holds it at a level set by the step, the gradient noise and the ring's spectral gap
    rather than driving it to zero.  What the exchange does is measured against the same
    local training without it (``local-E1-B10``): the claim compares the two at round T.
    """
    t = _runs_table(table)
    final = int(t["round"].max())
    first = int(t["round"].min())
    last_loss, first_loss = _at_round(t, "test_loss", final), _at_round(t, "test_loss", first)
    runs = sorted(set(last_loss.columns) & set(first_loss.columns))
    gossip, alone, cs = "gossip-E1-B10", "local-E1-B10", "fedavg-E1-B10"
    spread = _at_round(t, "consensus_distance", final)
    target = _at_round(t, "test_loss", 10)[cs] if cs in set(t["run"]) and 10 <= final else pd.Series(dtype=float)
    sent_cs = _at_round(t, "messages_total", 10)[cs] if len(target) else pd.Series(dtype=float)
    sent_p2p = _messages_to_reach(t, gossip, target, final) if gossip in set(t["run"]) else pd.Series(dtype=float)
    ratio = pd.concat([sent_p2p, sent_cs], axis=1).dropna()

    def case_of(fn, name, a, b, **kw):
        pair = pd.concat([a, b], axis=1).dropna()
        return fn(name, pair.iloc[:, 0], pair.iloc[:, 1], **kw)

    def column(frame: pd.DataFrame, run: str) -> pd.Series:
        return frame[run] if run in frame.columns else pd.Series(dtype=float)

    return [
        claim(f"at round T = {final}, FedAvg (E = 5, B = 10) is below FedSGD in test loss",
              case_of(below, "FedAvg E5 B10 / FedSGD", column(last_loss, "fedavg-E5-B10"),
                      column(last_loss, "fedsgd"), what="test loss ratio")),
        all_of(f"every curve's test loss ends below its round-{first} value",
               [case_of(below, run, last_loss[run], first_loss[run], what=f"round {final} / round {first}")
                for run in runs]),
        claim("gossip keeps the clients' models together: its consensus distance (zero at the common "
              f"start) ends at round T = {final} below that of the same local training without exchange",
              case_of(below, "gossip / no exchange", column(spread, gossip), column(spread, alone),
                      what="consensus distance ratio")),
        claim("to reach client-server FedAvg's (E = 1, B = 10) round-10 test loss, "
              "peer-to-peer sends at least as many messages",
              threshold("peer-to-peer / client-server messages", ratio.iloc[:, 0] / ratio.iloc[:, 1]
                        if len(ratio) else [], gt=1.0, strict=False, scale="log",
                        what="messages ratio (a run never reaching the loss counts T + 1 rounds)")),
    ]


def _int(value: Any) -> Any:
    return value if pd.isna(value) else int(value)
