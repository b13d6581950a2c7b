"""Shared fixtures: the repository root and the merged test configuration."""

from pathlib import Path

import pytest

from networkedfl.pipeline.config import load_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def schema_path() -> Path:
    return SCHEMA


@pytest.fixture(scope="session")
def test_config() -> dict:
    return load_config(REPO / "config" / "config.yaml", REPO / "config" / "test.yaml", schema_path=SCHEMA)
