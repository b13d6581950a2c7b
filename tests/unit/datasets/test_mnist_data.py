"""MNIST: the IDX reader on the vendored files and on broken files, and the node partition."""

import gzip
import struct

import numpy as np
import pytest

from networkedfl.datasets.mnist import MNIST_FILES, IdxError, load_mnist, read_idx
from networkedfl.experiments.gtv.mnist_graph import partition_mnist

# data/vendored/mnist/README.md
TRAIN_HISTOGRAM = [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
TEST_HISTOGRAM = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


@pytest.fixture(scope="module")
def vendored(repo):
    return repo / "data" / "vendored" / "mnist"


@pytest.fixture(scope="module")
def train(vendored):
    return load_mnist(vendored, "train")


def test_vendored_splits_have_the_published_counts_and_histograms(vendored, train):
    test = load_mnist(vendored, "test")
    assert train.images.shape == (60000, 28, 28) and train.images.dtype == np.uint8
    assert test.images.shape == (10000, 28, 28)
    assert np.bincount(train.labels, minlength=10).tolist() == TRAIN_HISTOGRAM
    assert np.bincount(test.labels, minlength=10).tolist() == TEST_HISTOGRAM
    assert train.images.mean() == pytest.approx(33.318, abs=5e-4)
    assert test.images.mean() == pytest.approx(33.791, abs=5e-4)
    x = train.features()
    assert x.shape == (60000, 784) and x.dtype == np.float32 and x.min() == 0 and x.max() == 1


def test_the_files_can_be_named_by_a_list_or_a_mapping(vendored, train):
    paths = [str(vendored / MNIST_FILES[("train", part)]) for part in ("labels", "images")]
    by_list = load_mnist(paths, "train")
    by_map = load_mnist({"train_images": paths[1], "train_labels": paths[0]}, "train")
    assert np.array_equal(by_list.labels, train.labels) and np.array_equal(by_map.images[:5], train.images[:5])
    with pytest.raises(FileNotFoundError, match="t10k-images"):
        load_mnist(paths, "test")


def _idx(payload: bytes, shape, code=0x08) -> bytes:
    return bytes([0, 0, code, len(shape)]) + struct.pack(f">{len(shape)}I", *shape) + payload


def _write(path, data: bytes, compress=True):
    if compress:
        with gzip.open(path, "wb") as fh:
            fh.write(data)
    else:
        path.write_bytes(data)
    return path


def test_reader_round_trips_every_element_type(tmp_path):
    values = np.arange(24, dtype=np.int32).reshape(2, 3, 4) - 5
    path = _write(tmp_path / "a.idx.gz", _idx(values.astype(">i4").tobytes(), values.shape, 0x0C))
    out = read_idx(path)
    assert out.dtype == np.int32 and out.dtype.isnative and np.array_equal(out, values)
    raw = _write(tmp_path / "b.idx", _idx(np.array([1.5, -2.0], ">f8").tobytes(), (2,), 0x0E), False)
    assert read_idx(raw).tolist() == [1.5, -2.0]


@pytest.mark.parametrize("data, message", [
    (bytes([0, 1, 8, 1]) + struct.pack(">I", 2) + b"ab", "bad magic number 0x00010801"),
    (bytes([0, 0, 0x07, 1]) + struct.pack(">I", 2) + b"ab", "unknown IDX element type 0x07"),
    (bytes([0, 0, 8, 3]) + struct.pack(">I", 2), "truncated header"),
    (_idx(b"\x00" * 10, (2, 3, 2)), "truncated payload: 10 bytes after the header, shape"),
    (_idx(b"\x00" * 13, (2, 3, 2)), "1 unexpected trailing bytes"),
    (b"\x00\x00", "truncated header"),
])
def test_bad_files_are_named_in_a_clear_error(tmp_path, data, message):
    path = _write(tmp_path / "broken-idx.gz", data)
    with pytest.raises(IdxError, match=message) as info:
        read_idx(path)
    assert str(path) in str(info.value)


def test_truncated_gzip_stream_and_wrong_shape_are_reported(tmp_path, vendored):
    whole = (vendored / MNIST_FILES[("test", "labels")]).read_bytes()
    cut = tmp_path / "t10k-labels-idx1-ubyte.gz"
    cut.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(IdxError, match="t10k-labels-idx1-ubyte.gz: cannot decompress"):
        read_idx(cut)
    with pytest.raises(IdxError, match="declares 1 dimension"):
        read_idx(vendored / MNIST_FILES[("test", "labels")], expected_ndim=3)
    images = _write(tmp_path / "img.gz", _idx(b"\x00" * 2 * 27 * 28, (2, 27, 28)))
    with pytest.raises(IdxError, match=r"shape \(2, 27, 28\), expected \(None, 28, 28\)"):
        read_idx(images, expected_shape=(None, 28, 28))


def test_partition_is_disjoint_within_the_clusters_and_reproducible(train):
    clusters = [[0, 1], [2, 3], [8, 9]]
    idx, node_cluster = partition_mnist(train.labels, clusters, 4, 30, np.random.default_rng(1))
    again, _ = partition_mnist(train.labels, clusters, 4, 30, np.random.default_rng(1))
    assert idx.shape == (12, 30) and np.array_equal(idx, again)
    assert np.unique(idx).size == idx.size  # no image at two nodes
    assert node_cluster.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    for c, digits in enumerate(clusters):
        assert set(np.unique(train.labels[idx[node_cluster == c]])) == set(digits)
    with pytest.raises(ValueError, match="disjoint"):
        partition_mnist(train.labels, [[0, 1], [1, 2]], 1, 5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="has 12665 images"):
        partition_mnist(train.labels, [[0, 1]], 100, 500, np.random.default_rng(0))


def test_graph_artefact_round_trips_and_jobs_are_deterministic(repo, vendored, train, test_config, tmp_path):
    """The cached graph reloads unchanged; a seed's single ``all`` job gives exactly the
    records of the per-method jobs (run separately: deterministic); Table II is read from
    the same artefact."""
    import pandas as pd

    from networkedfl.experiments import get_experiment
    from networkedfl.experiments.gtv.mnist import ALL_METHODS, mnist_settings
    from networkedfl.experiments.gtv.mnist_graph import (
        build_mnist_graph,
        load_mnist_graph,
        save_mnist_graph,
    )

    spec = test_config["mnist_graphs"]["five_clusters"]
    graph = build_mnist_graph("five_clusters", spec, train, test_config["base_seed"])
    path = tmp_path / "five_clusters.npz"
    save_mnist_graph(graph, path)
    back = load_mnist_graph(path)
    assert np.array_equal(back.edges, graph.edges) and np.array_equal(back.indices, graph.indices)
    assert back.spec == graph.spec and back.graph.n_edges == len(graph.edges)
    inputs = {"mnist": str(vendored), "graph": str(path)}
    params = dict(test_config["experiments"]["gtv_fig07_mnist_five_clusters"])
    params["methods"] = {k: params["methods"][k] for k in ("primal_dual", "local_sgd")}
    params.pop("extra_baselines", None)  # the test profile's extra baselines take IFCA's values
    experiment = get_experiment("gtv_fig07_mnist_five_clusters")
    assert mnist_settings(params) == [ALL_METHODS]
    assert mnist_settings({**params, "one_job": False}) == ["primal_dual", "local_sgd"]
    base = test_config["base_seed"]

    together = experiment.run(params, ALL_METHODS, 0, base, inputs=inputs)
    apart = pd.concat([experiment.run(params, m, 0, base, inputs=inputs)
                       for m in ("primal_dual", "local_sgd")], ignore_index=True)
    pd.testing.assert_frame_equal(together, apart)
    assert {"method", "metric", "value", "seed", "iteration"} <= set(together.columns)
    start = together[(together["iteration"] == 0) & (together["metric"] == "accuracy")]["value"]
    assert start.nunique() == 1  # every method starts from the same vector
    table2 = get_experiment("gtv_table2_mnist_clusters")
    t2 = table2.run(test_config["experiments"]["gtv_table2_mnist_clusters"], "all", 0, base,
                    inputs={"graph": str(path)})
    assert all(c.passed for c in table2.claims(t2, {}))
