import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_shared" / "pytest"))
# The default scenario's fabric tests: the rollback test runs here too, on the netplan path.
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "default" / "tests"))
