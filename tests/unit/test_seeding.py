"""One random-source convention (issue 19 item 2): every public function that draws takes
``seed`` = ``None | int | numpy.random.Generator`` (and a ``torch.Generator`` where torch
draws); the scikit-learn-style estimators keep scikit-learn's ``random_state``."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
import torch

import networkedfl
from networkedfl.datasets import dirichlet_label_skew, heterogeneous_nodes, quantity_skew, shards
from networkedfl.fedrelax import clustered_data, noniid_data
from networkedfl.graphs import stochastic_block_model
from networkedfl.gtv import linear_model_data, sampling_mask
from networkedfl.nn import ClientData, linear_regression, make_generator
from networkedfl.seeding import as_rng, int_seed

#: Other names for a random source that the public API must no longer use.
OLD_NAMES = {"rng", "random_state", "generator", "random_seed", "gen"}
#: Where another name is deliberate (module docstring of networkedfl.seeding).
ALLOWED = {
    # scikit-learn estimators: random_state, as scikit-learn's own
    "networkedfl.fedrelax._nonparametric.FedRelax.__init__",
    "networkedfl.gtv._estimator.GTVRegressor.__init__",
    # protocols the algorithms call with the torch.Generator they made from seed
    "networkedfl.nn._client_batches.BatchSource.sample",
    "networkedfl.nn._client_batches.ClientBatches.sample",
    "networkedfl.nn._nplm.NextWordBatches.sample",
    "networkedfl.nn._models.require_generator",
}


def _public_callables():
    skip = ("networkedfl.pipeline", "networkedfl.experiments")
    for info in pkgutil.walk_packages(networkedfl.__path__, "networkedfl."):
        if info.name.startswith(skip):  # private modules too: their public names are the API
            continue
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if name.startswith("_") or getattr(obj, "__module__", None) != info.name:
                continue
            if inspect.isfunction(obj):
                yield f"{info.name}.{name}", obj
            elif inspect.isclass(obj):
                for meth_name, meth in vars(obj).items():
                    if inspect.isfunction(meth) and (meth_name == "__init__" or not meth_name.startswith("_")):
                        yield f"{info.name}.{name}.{meth_name}", meth


def test_no_public_function_uses_another_name_for_the_random_source():
    offenders = []
    for qualname, fn in _public_callables():
        params = set(inspect.signature(fn).parameters)
        if params & OLD_NAMES and qualname not in ALLOWED:
            offenders.append(f"{qualname}({', '.join(sorted(params & OLD_NAMES))})")
    assert not offenders, "use seed= (networkedfl.seeding): " + "; ".join(offenders)


def test_as_rng_follows_numpy():
    g = np.random.default_rng(5)
    assert as_rng(g) is g  # used as it is: the caller's stream advances
    assert as_rng(7).random() == np.random.default_rng(7).random()
    assert as_rng(np.int64(7)).random() == np.random.default_rng(7).random()
    assert isinstance(as_rng(None), np.random.Generator)
    for bad in (1.5, "0", True):
        with pytest.raises(TypeError, match="seed must be None, an int, a numpy"):
            as_rng(bad)
    with pytest.raises(ValueError, match="non-negative"):
        as_rng(-1)
    assert int_seed(11) == 11
    assert int_seed(np.random.default_rng(0)) == int(np.random.default_rng(0).integers(2**31 - 1))


def test_make_generator_accepts_every_source():
    t = torch.Generator().manual_seed(3)
    assert make_generator(t) is t
    a = torch.rand(3, generator=make_generator(4))
    assert torch.equal(a, torch.rand(3, generator=torch.Generator().manual_seed(4)))
    n = np.random.default_rng(0)
    seed = int(np.random.default_rng(0).integers(0, 2**63 - 1))
    assert torch.equal(torch.rand(3, generator=make_generator(n)),
                       torch.rand(3, generator=torch.Generator().manual_seed(seed)))
    assert isinstance(make_generator(None), torch.Generator)
    with pytest.raises(TypeError, match="seed must be"):
        make_generator(0.5)


# every numpy data generator: an int seed equals default_rng(int); a Generator is shared;
# None works
NUMPY_DRAWS = {
    "stochastic_block_model": lambda seed: stochastic_block_model([5, 5], 0.8, 0.1, seed=seed).edges,
    "linear_model_data": lambda seed: linear_model_data(np.ones((4, 2)), 3, 0.1, seed=seed).labels,
    "sampling_mask": lambda seed: sampling_mask(20, 0.5, seed=seed),
    "clustered_data": lambda seed: clustered_data([3, 3], 0.9, 0.1, 2, 4, 2, 3, 0.1, seed).labels,
    "noniid_data": lambda seed: noniid_data(4, 2, 2, 4, 2, 3, 0.1, seed).labels,
    "heterogeneous_nodes": lambda seed: heterogeneous_nodes(seed, dim=2, n_train=3, n_test=2).x_train[0],
    "dirichlet_label_skew": lambda seed: np.concatenate(dirichlet_label_skew(np.arange(40) % 4, 4, 0.5, seed=seed)),
    "shards": lambda seed: np.concatenate(shards(np.arange(40) % 4, 4, 2, seed=seed)),
    "quantity_skew": lambda seed: np.concatenate(quantity_skew(40, 4, 1.0, seed=seed)),
}


@pytest.mark.parametrize("name", sorted(NUMPY_DRAWS))
def test_numpy_functions_take_seed(name):
    draw = NUMPY_DRAWS[name]
    np.testing.assert_array_equal(draw(3), draw(np.random.default_rng(3)))
    np.testing.assert_array_equal(draw(3), draw(3))
    shared = np.random.default_rng(3)
    first, second = draw(shared), draw(shared)  # one stream: the second call continues it
    assert first.shape != second.shape or not np.array_equal(first, second)
    draw(None)
    with pytest.raises(TypeError, match="seed"):
        draw(0.5)


def test_torch_algorithms_take_every_source():
    from networkedfl.algorithms import fedavg

    data = ClientData.from_arrays(np.arange(40.0).reshape(4, 5, 2) / 40, np.arange(20.0).reshape(4, 5))

    def run(seed):
        return fedavg(linear_regression(2), data, n_rounds=2, local_epochs=1, batch_size=2,
                      lr=0.1, client_fraction=0.5, seed=seed).global_params

    torch.testing.assert_close(run(1), run(torch.Generator().manual_seed(1)), rtol=0, atol=0)
    torch.testing.assert_close(run(np.random.default_rng(2)), run(np.random.default_rng(2)), rtol=0, atol=0)
    assert torch.isfinite(run(None)).all()


def test_numpy_and_scikit_learn_sources_are_accepted_too():
    """Issue 35 item 7: a ``SeedSequence``, a ``BitGenerator`` and the legacy ``RandomState``
    (what scikit-learn users pass as ``random_state``) give reproducible streams."""
    for make in (lambda: np.random.SeedSequence(0), lambda: np.random.PCG64(0),
                 lambda: np.random.RandomState(0)):
        assert as_rng(make()).random() == as_rng(make()).random()
        assert torch.equal(torch.rand(3, generator=make_generator(make())),
                           torch.rand(3, generator=make_generator(make())))
    assert as_rng(np.random.SeedSequence(4)).random() == np.random.default_rng(np.random.SeedSequence(4)).random()
    shared = np.random.RandomState(1)  # a RandomState advances, as in scikit-learn
    assert as_rng(shared).random() != as_rng(shared).random()
    with pytest.raises(TypeError, match="random_state must be"):
        as_rng("0", name="random_state")


#: Calls that seed a process-wide generator (torch's, NumPy's legacy one, the stdlib's):
#: the package seeds nothing global (networkedfl.seeding), every draw takes its own source.
GLOBAL_SEEDING = {("torch", "manual_seed"), ("torch", "random", "manual_seed"), ("torch", "cuda", "manual_seed"),
                  ("torch", "cuda", "manual_seed_all"), ("torch", "seed"), ("np", "random", "seed"),
                  ("numpy", "random", "seed"), ("random", "seed")}


def _dotted(node) -> tuple[str, ...]:
    """``torch.random.manual_seed`` as ``("torch", "random", "manual_seed")``; () for a call on
    anything but a name (``torch.Generator().manual_seed``: a generator of its own)."""
    import ast

    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return (node.id, *reversed(parts)) if isinstance(node, ast.Name) else ()


def _global_seeding_calls(source: str) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of every call in ``source`` that seeds a global generator."""
    import ast

    tree = ast.parse(source)
    aliases = {a.asname or a.name: (node.module, a.name) for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.module for a in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _dotted(node.func)
            if name and name[0] in aliases:
                module, attr = aliases[name[0]]
                name = (*module.split("."), attr, *name[1:])
            if name in GLOBAL_SEEDING:
                found.append((node.lineno, ".".join(name)))
    return found


def test_the_global_seeding_scan_finds_every_spelling():
    """The scan below can fail: each way of seeding a global generator is found, a
    generator of one's own is not."""
    assert _global_seeding_calls("import torch\ntorch.manual_seed(0)") == [(2, "torch.manual_seed")]
    assert _global_seeding_calls("from torch import manual_seed as ms\nms(1)") == [(2, "torch.manual_seed")]
    assert _global_seeding_calls("import numpy as np\nnp.random.seed(3)") == [(2, "np.random.seed")]
    assert _global_seeding_calls("import torch\ntorch.cuda.manual_seed_all(3)") == [(2, "torch.cuda.manual_seed_all")]
    assert _global_seeding_calls("import torch\ng = torch.Generator().manual_seed(0)") == []


def test_no_module_of_the_package_seeds_a_global_generator():
    """Issue 43 item 3: no ``torch.manual_seed`` (nor NumPy's or the stdlib's global seeding)
    anywhere in src/; a call through an alias (``from torch import manual_seed``) counts too."""
    from pathlib import Path

    root = Path(networkedfl.__file__).parent
    found = [f"{path.relative_to(root.parent)}:{line} {name}" for path in sorted(root.rglob("*.py"))
             for line, name in _global_seeding_calls(path.read_text(encoding="utf-8"))]
    assert not found, found


def test_the_derivations_of_the_streams_are_unchanged():
    """Issue 43 item 3: moving ``rng_for``, the graph's stream and the torch generator into
    :mod:`networkedfl.seeding` changed no draw (values drawn before the move, from
    ``experiments.registry.rng_for``, ``mnist_graph.graph_seed`` and
    ``nn.make_generator(rng_for(...))``)."""
    from networkedfl.experiments.registry import rng_for as old_home
    from networkedfl.seeding import generator_for, graph_rng, rng_for

    assert old_home is rng_for  # the old import keeps working
    assert rng_for(2023, "gtv_fig09_sbm_pout", 3, {"p_out": 0.01}, "init").integers(0, 2**62, 3).tolist() == [
        2590571149587053936, 4199413387454273896, 1957872620211304377]
    assert rng_for(0, "x", 0).integers(0, 2**62, 2).tolist() == [715286392484747304, 2273810367424846557]
    assert graph_rng(2023, "five_clusters").integers(0, 2**62, 3).tolist() == [
        2245845525954196485, 1226648556157409694, 1138425642778919807]
    assert torch.randint(0, 2**62, (3,), generator=generator_for(2023, "gfl_fig10_3_synthetic", 1, "init")).tolist() \
        == [46520251077413700, 2356316583076933593, 4343791099676454271]
    assert make_generator is networkedfl.seeding.make_generator  # nn re-exports the one definition
