"""Shared pytest fixtures for the Python test suites."""

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("DEVFLOW_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    if not SHARED.is_dir():
        pytest.fail(f"shared material not found at {SHARED} (set DEVFLOW_SHARED)")
    return SHARED
