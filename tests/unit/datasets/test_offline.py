"""The offline switch (issue 45, item 6): ``NETWORKEDFL_OFFLINE=1`` or ``data: download:
offline: true`` forbids every network source; local sources (the vendored copy, a directory,
``file://``) still serve.  When no source gives a verified copy, the error names the switch:
how to allow the mirrors when offline, how to forbid them when online."""

import shutil
import urllib.error

import pytest

from networkedfl.datasets import (
    DownloadError,
    download,
    fetch_dataset,
    fetch_file,
    file_digests,
    get_dataset,
)
from networkedfl.io import vendored_dataset

MNIST = get_dataset("mnist")
SMALL = "t10k-labels-idx1-ubyte.gz"
MIRROR = "https://mirror.invalid/mnist/"


@pytest.fixture
def no_network(monkeypatch):
    """Every network request fails the test (the opener is where urllib connects); a
    ``file://`` URL is read as before."""
    calls, real = [], download._opener

    class Opener:
        def __init__(self, watchdog):
            self.opener = real(watchdog)

        def open(self, request, timeout):
            if not request.full_url.startswith("file://"):
                calls.append(request.full_url)
                raise AssertionError(f"a network source was contacted: {request.full_url}")
            return self.opener.open(request, timeout=timeout)

    monkeypatch.setattr(download, "_opener", Opener)
    return calls


@pytest.fixture
def network_down(monkeypatch):
    """Every network request fails as a dead mirror would."""
    calls = []

    class Opener:
        def open(self, request, timeout):
            calls.append(request.full_url)
            raise urllib.error.URLError("no network in the tests")

    monkeypatch.setattr(download, "_opener", lambda watchdog: Opener())
    return calls


@pytest.fixture
def sources(repo, tmp_path):
    """A local directory holding a corrupted copy of SMALL (a bad vendored file) and one
    holding the good copy."""
    bad, good = tmp_path / "bad", tmp_path / "good"
    bad.mkdir()
    data = bytearray((vendored_dataset(repo, "mnist") / SMALL).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / SMALL).write_bytes(bytes(data))
    shutil.copytree(vendored_dataset(repo, "mnist"), good)
    return str(bad), str(good)


@pytest.mark.parametrize("how", ["argument", "environment"])
def test_offline_refuses_the_mirrors_and_names_the_switch_to_allow_them(sources, no_network, tmp_path,
                                                                      monkeypatch, how):
    bad, _ = sources
    monkeypatch.delenv(download.OFFLINE_ENV, raising=False)
    kwargs = {"offline": True} if how == "argument" else {}
    if how == "environment":
        monkeypatch.setenv(download.OFFLINE_ENV, "1")
    with pytest.raises(DownloadError) as err:
        fetch_file(SMALL, tmp_path / "out" / SMALL, [bad, MIRROR], MNIST.sha256[SMALL], **kwargs)
    message = str(err.value)
    assert no_network == []
    assert f"{bad}: " in message and "mismatch" in message.lower()  # the bad vendored copy, named
    assert f"{MIRROR}: not contacted" in message
    assert "offline: refusing to download" in message and "NETWORKEDFL_OFFLINE" in message
    assert "data: download: offline" in message
    assert not (tmp_path / "out" / SMALL).exists()


def test_offline_still_takes_a_local_copy(sources, no_network, tmp_path):
    bad, good = sources
    dest = tmp_path / "out" / SMALL
    assert fetch_file(SMALL, dest, [bad, MIRROR, good], MNIST.sha256[SMALL], offline=True) == good
    assert file_digests(dest)[0] == MNIST.sha256[SMALL] and no_network == []
    assert fetch_file(SMALL, tmp_path / "uri" / SMALL, [f"file://{good}"], MNIST.sha256[SMALL],
                      offline=True) == f"file://{good}"


def test_online_a_failure_that_reached_the_network_names_the_switch_to_forbid_it(sources, network_down, tmp_path,
                                                                                 monkeypatch):
    bad, _ = sources
    monkeypatch.delenv(download.OFFLINE_ENV, raising=False)
    logged = []
    with pytest.raises(DownloadError) as err:
        fetch_file(SMALL, tmp_path / SMALL, [bad, MIRROR], MNIST.sha256[SMALL], log=logged.append)
    message = str(err.value)
    assert network_down == [MIRROR + SMALL]
    assert "set NETWORKEDFL_OFFLINE=1 or data: download: offline: true" in message
    # the log says that the mirrors are tried after the bad local copy, and how to forbid it
    assert any(MIRROR in line and "NETWORKEDFL_OFFLINE=1" in line for line in logged)


@pytest.mark.parametrize(("value", "offline"), [("1", True), ("true", True), ("yes", True), ("0", False),
                                                ("", False), ("false", False)])
def test_the_environment_variable(monkeypatch, value, offline):
    monkeypatch.setenv(download.OFFLINE_ENV, value)
    assert download.offline_requested() is offline
    assert download.offline_requested(True) is True


def test_the_environment_variable_refuses_a_value_it_does_not_know(monkeypatch):
    monkeypatch.setenv(download.OFFLINE_ENV, "maybe")
    with pytest.raises(ValueError, match="NETWORKEDFL_OFFLINE"):
        download.offline_requested()


def test_fetch_dataset_passes_offline_on(sources, no_network, tmp_path):
    bad, _ = sources
    with pytest.raises(DownloadError, match="offline: refusing to download"):
        fetch_dataset(MNIST, tmp_path, [bad, MIRROR], files=[SMALL], offline=True)
    assert no_network == []


def test_the_config_key_is_validated(repo, schema_path):
    import copy

    import yaml

    from networkedfl.pipeline.config import ConfigError, validate_config

    config = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    assert config["data"]["download"]["offline"] is False
    on = copy.deepcopy(config)
    on["data"]["download"]["offline"] = True
    validate_config(on, schema_path)
    on["data"]["download"]["offline"] = "yes"
    with pytest.raises(ConfigError, match=r"config\['data'\]\['download'\]\['offline'\]"):
        validate_config(on, schema_path)
