"""The collection artifact: built with a lab (and its secrets) lying in the tree, it packs only the
collection - never secrets, caches, venvs, lab inventories or reports."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from conftest import ROOT

SECRET = "sparkfleet-test-secret-7f3a9c"
# Every kind of generated secret (the store's, the SSH and munge keys, Ray's token, the gateway's and vLLM's keys).
PLANTED = ["inventory/lab-pkgtest/hosts.yml", "inventory/lab-pkgtest/.secrets/pkgtest_s3_root_secret",
           "inventory/lab-pkgtest/.secrets/pkgtest_munge_key", "inventory/lab-pkgtest/.secrets/pkgtest_ray_token",
           "inventory/lab-pkgtest/.secrets/pkgtest_gateway_key_default", "inventory/lab-pkgtest/.secrets/pkgtest_vllm_api_key",
           "inventory/lab-pkgtest/.secrets/pkgtest_cluster_ed25519", "inventory/example/.secrets/example_s3_root_secret",
           "roles/object_store/.secrets/stray", "playbooks/.secrets/stray", ".cache/pkgtest/stray", "reports/pkgtest/report.json",
           "roles/firewall/files/stray.key", "plugins/modules/__pycache__/x.cpython-311.pyc"]


def test_collection_build_packs_no_secrets_caches_or_labs(tmp_path):
    made = []
    try:
        for rel in PLANTED:
            p = ROOT / rel
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_text(SECRET + "\n")
                made.append(p)
        res = subprocess.run([str(Path(sys.executable).parent / "ansible-galaxy"), "collection", "build", "--force",
                              "--output-path", str(tmp_path)], cwd=ROOT, text=True, capture_output=True,
                             env=dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg")))
        assert res.returncode == 0, res.stderr
        art = next(tmp_path.glob("sparkfleet-cluster-*.tar.gz"))
        with tarfile.open(art) as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            for m in members:
                if m.isfile():
                    assert SECRET.encode() not in tar.extractfile(m).read(), m.name
                assert not m.mode & 0o002, f"{m.name} is world-writable"
    finally:
        for p in made:
            p.unlink()
        for d in ("inventory/lab-pkgtest", "roles/object_store/.secrets", "playbooks/.secrets", ".cache/pkgtest",
                  "reports/pkgtest", "inventory/example/.secrets"):
            if (ROOT / d).is_dir() and not any(f.is_file() for f in (ROOT / d).rglob("*")):
                shutil.rmtree(ROOT / d)
    bad = [n for n in names if any(part in n for part in (".secrets", "inventory/lab", ".venv", ".cache", "reports/",
                                                           "__pycache__", "molecule/", "tests/", ".lab", ".git"))]
    assert bad == []
    assert not [n for n in names if n.endswith((".key", ".pem", ".pyc")) or "id_ed25519" in n]
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks" / "main.yml").exists())
    for must in ["LICENSE", "README.md", "meta/runtime.yml", "MANIFEST.json", "FILES.json",
                 "roles/object_store/files/sparkfleet-s3-buckets", "plugins/modules/gpu_facts.py",
                 "plugins/module_utils/inventory_schema.py", "playbooks/group_vars/all/services.yml"] + \
            [f"roles/{r}/tasks/main.yml" for r in roles] + [f"roles/{r}/meta/argument_specs.yml" for r in roles]:
        assert must in names, must
    assert "Apache License" in (ROOT / "LICENSE").read_text()


def test_every_module_documents_itself_in_valid_yaml():
    """ansible-doc (and the docs site) read DOCUMENTATION/EXAMPLES/RETURN as YAML: a stray ': ' in a plain
    description breaks them while the module still runs."""
    import re

    import yaml
    bad = []
    for f in sorted((ROOT / "plugins" / "modules").glob("*.py")):
        src = f.read_text()
        for key in ("DOCUMENTATION", "EXAMPLES", "RETURN"):
            m = re.search(key + r' = r"""(.*?)"""', src, re.S)
            try:
                assert m, "missing"
                yaml.safe_load(m.group(1))
            except Exception as e:  # noqa: BLE001 - report every broken block at once
                bad.append(f"{f.name} {key}: {str(e).splitlines()[0]}")
    assert not bad, bad
