"""Shared pytest helpers: paths to the repo, its fixtures and ../shared/fixtures."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# module_utils import as part of the collection (collections/ansible_collections/sparkfleet/cluster -> repo).
sys.path.insert(0, str(ROOT / "collections"))
# sparkfleet_tools (the drift bundle builder) imports from the repo root; plain `pytest` does not put it on sys.path.
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "unit"))
sys.path.insert(0, str(ROOT / "tests"))
SHARED = ROOT.parent / "shared" / "fixtures"
# Copies of ../shared/fixtures live in tests/fixtures too (same relative paths), so the tests do
# not depend on ../shared being beside the checkout; the repo's copy wins.
LOCAL = ROOT / "tests" / "fixtures"


def read_fixture(path: Path) -> str:
    """A fixture file minus its '# source:' first line."""
    text = path.read_text()
    return text.split("\n", 1)[1] if text.startswith("# source:") else text


def fixture_path(rel: str) -> Path:
    """A fixture by relative path: the repo's copy first, then ../shared; skip the test if neither exists."""
    for base in (LOCAL, SHARED):
        if (base / rel).exists():
            return base / rel
    pytest.skip(f"fixture {rel} not available")


@pytest.fixture
def fixture_text():
    return lambda rel: read_fixture(fixture_path(rel))
