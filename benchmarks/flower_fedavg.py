"""FedAvg rounds in Flower's simulation engine, on the data of ``bench_fedavg_scale.py``.

Runs in the optional Flower environment, not the project's (it imports only ``flwr``,
``torch`` and ``numpy``; ``networkedfl`` need not be installed there)::

    python3 -m venv .venv-flower
    .venv-flower/bin/pip install "flwr[simulation]" -c constraints.txt
    .venv-flower/bin/pip install torch==2.13.0 -c constraints.txt   # the project's CPU torch

``bench_fedavg_scale.py`` calls it as ``.venv-flower/bin/python benchmarks/flower_fedavg.py
--workdir DIR`` after writing to ``DIR``: ``x.npy`` ``(n, m, d)`` float32 features,
``y.npy`` ``(n, m)`` int64 labels, ``w0.npy`` the flat initial weights (``(in, out)`` weight
matrices, each followed by its bias, as the project's ``from_module`` flattens
``nn.Linear``'s ``(out, in)`` weight and bias in that order), ``orders.npy``
``(rounds, epochs, n, m)`` every client's sample order per round and epoch (the orders the
project's FedAvg draws), and ``spec.json`` (layer sizes, batch size, step size, rounds).

It runs ``rounds`` rounds of Flower's ``FedAvg`` strategy with every client selected
(``fraction_fit=1``, no evaluation) on ``n`` simulated SuperNodes (``run_simulation``, the
Ray backend, one CPU per client): each client trains ``torch.nn.Sequential(Linear, ReLU,
Linear)`` with ``torch.optim.SGD`` on its blocks of ``batch`` samples in the given order and
returns its weights and its 200 samples, the server averages them weighted by the samples.
It writes ``flower.json``: the start and end time of every round (from the strategy's
``configure_fit`` to its ``aggregate_fit``, so Ray's start-up is not counted) and the final
flat weights.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from flwr.app import Context
from flwr.client import ClientApp, NumPyClient
from flwr.common import ndarrays_to_parameters, parameters_to_ndarrays
from flwr.server import ServerApp, ServerAppComponents, ServerConfig
from flwr.server.strategy import FedAvg
from flwr.simulation import run_simulation


def network(sizes: list[int]) -> torch.nn.Sequential:
    d, h, k = sizes
    return torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.ReLU(), torch.nn.Linear(h, k))


def to_arrays(flat: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Flat weights (``nn.Linear`` order: weight ``(out, in)``, then bias) as layer arrays."""
    out, off = [], 0
    for a, b in zip(sizes[:-1], sizes[1:], strict=True):
        out.append(flat[off:off + a * b].reshape(b, a))
        off += a * b
        out.append(flat[off:off + b])
        off += b
    return out


class Client(NumPyClient):
    def __init__(self, workdir: Path, spec: dict, cid: int) -> None:
        self.x = np.load(workdir / "x.npy", mmap_mode="r")[cid]
        self.y = np.load(workdir / "y.npy", mmap_mode="r")[cid]
        self.orders = np.load(workdir / "orders.npy", mmap_mode="r")[:, :, cid]
        self.spec = spec
        torch.set_num_threads(1)

    def fit(self, parameters, config):
        net = network(self.spec["sizes"])
        with torch.no_grad():
            for p, v in zip(net.parameters(), parameters, strict=True):
                p.copy_(torch.from_numpy(np.asarray(v)))
        opt = torch.optim.SGD(net.parameters(), lr=self.spec["lr"])
        x, y, b = torch.from_numpy(np.array(self.x)), torch.from_numpy(np.array(self.y)), self.spec["batch"]
        for order in self.orders[int(config["round"]) - 1]:
            order = torch.from_numpy(np.array(order, dtype=np.int64))
            for start in range(0, len(order), b):
                idx = order[start:start + b]
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x[idx]), y[idx]).backward()
                opt.step()
        return [p.detach().numpy().copy() for p in net.parameters()], len(self.y), {}


class TimedFedAvg(FedAvg):
    """FedAvg that records each round's start and end and keeps the last weights."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.rounds: list[list[float]] = []
        self.final: list[np.ndarray] | None = None

    def configure_fit(self, server_round, parameters, client_manager):
        self.rounds.append([time.time(), float("nan")])
        return super().configure_fit(server_round, parameters, client_manager)

    def aggregate_fit(self, server_round, results, failures):
        params, metrics = super().aggregate_fit(server_round, results, failures)
        self.rounds[-1][1] = time.time()
        if params is not None:
            self.final = parameters_to_ndarrays(params)
        metrics = dict(metrics or {})
        metrics["failures"] = len(failures)
        return params, metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, required=True)
    args = parser.parse_args()
    spec = json.loads((args.workdir / "spec.json").read_text())
    n, sizes = int(spec["n_clients"]), spec["sizes"]
    w0 = to_arrays(np.load(args.workdir / "w0.npy"), sizes)
    strategy = TimedFedAvg(fraction_fit=1.0, fraction_evaluate=0.0, min_fit_clients=n,
                           min_evaluate_clients=0, min_available_clients=n,
                           initial_parameters=ndarrays_to_parameters(w0),
                           on_fit_config_fn=lambda r: {"round": r}, accept_failures=False)

    def server_fn(context: Context) -> ServerAppComponents:
        return ServerAppComponents(strategy=strategy, config=ServerConfig(num_rounds=int(spec["rounds"])))

    def client_fn(context: Context):
        return Client(args.workdir, spec, int(context.node_config["partition-id"])).to_client()

    t0 = time.time()
    run_simulation(server_app=ServerApp(server_fn=server_fn), client_app=ClientApp(client_fn=client_fn),
                   num_supernodes=n, backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0}})
    final = None if strategy.final is None else np.concatenate([a.reshape(-1) for a in strategy.final])
    out = {"rounds": strategy.rounds, "wall_s": time.time() - t0, "flwr": __import__("flwr").__version__,
           "final": None if final is None else final.tolist()}
    (args.workdir / "flower.json").write_text(json.dumps(out))


if __name__ == "__main__":
    main()
