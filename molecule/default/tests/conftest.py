import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared" / "pytest"))


def pytest_collection_modifyitems(items):
    """The day-2 tests (test_lifecycle.py) change who is in the cluster: they run after every other test, in file order."""
    items.sort(key=lambda item: item.fspath.basename == "test_lifecycle.py")
