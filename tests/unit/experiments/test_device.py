"""Every torch experiment takes its ``device`` from the config (issue 20, item 5)."""

import ast
import copy

import pytest
import yaml

from networkedfl.experiments import EXPERIMENTS
from networkedfl.pipeline.config import ConfigError, validate_config
from networkedfl.pipeline.provenance import default_root, target_modules

#: Targets whose module closure imports torch but whose run makes no tensor: the device
#: would be read by nothing, so their blocks have none.
NO_TENSORS = {
    "fedrelax_fig02a_trees_dm": "scikit-learn decision trees (Alg. 1)",
    "fedrelax_fig02b_trees_noise": "scikit-learn decision trees (Alg. 1)",
    "fedrelax_fig04_noniid_trees": "scikit-learn decision trees (Alg. 1)",
    "gfl_fig10_2_homologous_graphs": "a diagram of gfl_fig10_3_synthetic's numpy data",
    "gfl_table10_1_settings": "a table of gfl_fig10_3_synthetic's settings",
    "gtv_table2_mnist_clusters": "the clusters of a learnt graph file",
}
#: Targets that run other targets' blocks (``cases``): each case carries the device.
CASES = {"gtv_quirk_ablation", "gtv_quirk_ablation_mnist"}


def _is_torch_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "torch" for a in node.names)
    return isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "torch"


def _imports_torch_at_import_time(nodes: list[ast.stmt]) -> bool:
    """A torch import that runs when the module is imported: at module level or in a class
    body, not inside a function (a lazy import runs only for a caller that already uses torch,
    e.g. ``seeding.make_generator``) nor under ``if TYPE_CHECKING:`` (annotations only)."""
    for node in nodes:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            if _imports_torch_at_import_time(node.orelse):
                return True
            continue
        if _is_torch_import(node):
            return True
        for field in ("body", "orelse", "finalbody", "handlers"):
            if _imports_torch_at_import_time(getattr(node, field, None) or []):
                return True
    return False


def _imports_torch(module: str) -> bool:
    parts = module.split(".")[1:]
    path = default_root().joinpath(*parts)
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    return _imports_torch_at_import_time(ast.parse(path.read_text(encoding="utf-8")).body)


def _torch_targets() -> list[str]:
    return sorted(t for t in EXPERIMENTS if any(_imports_torch(m) for m in target_modules(t)))


def _config(repo):
    return yaml.safe_load((repo / "config" / "config.yaml").read_text())


def test_the_static_check_sees_torch_and_numpy_targets():
    torch_targets = set(_torch_targets())
    assert {"gfl_fig10_4_reviews_nlp", "gtv_fig06_mnist_methods", "lecture_fig1_fedsgd_vs_fedavg"} <= torch_targets
    assert "gtv_fig13_star_lambda" not in torch_targets  # pure numpy
    assert set(NO_TENSORS) | CASES <= torch_targets


@pytest.mark.parametrize("target", _torch_targets())
def test_every_torch_target_takes_its_device_from_the_config(repo, schema_path, target):
    config = _config(repo)
    block = config["experiments"][target]
    if target in NO_TENSORS:
        assert "device" not in block, f"{target} makes no tensor ({NO_TENSORS[target]})"
        return
    blocks = list(block["cases"].values()) if target in CASES else [block]
    for b in blocks:
        assert b.get("device") == "cpu", f"{target}: no `device: cpu` in config/config.yaml"
        b["device"] = "cuda:0"  # the schema accepts another device
    validate_config(config, schema_path)


def test_an_invalid_device_is_rejected_naming_the_key(repo, schema_path):
    config = copy.deepcopy(_config(repo))
    config["experiments"]["gtv_fig09_sbm_sampling"]["device"] = "not-a-device"
    with pytest.raises(ConfigError, match=r"\['gtv_fig09_sbm_sampling'\]\['device'\]"):
        validate_config(config, schema_path)
