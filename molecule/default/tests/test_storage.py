"""Object storage and model distribution on lab nodes (the S3 server itself: molecule/object_store): versions synced with
checksums, zero-byte re-runs, switching current, repair of a truncated file, no secret in -vvv output."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest

from labtools import INV, INVENTORY, NODES, playbook, ssh

CONTROL = next(h for h in NODES if INV["hosts"][h]["group"] == "control")
COMPUTE = [h for h in NODES if h != CONTROL]
NAME = f"tiny-{os.getpid()}"  # a fresh model name per run: the store may hold earlier runs' files
SECRET_FILE = INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_s3_root_secret"
# The controller's rclone config model_publish.yml writes (root credentials; git-ignored, mode 0600).
RCLONE_CONF = INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_rclone.conf"


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """Two versions of a generated model: v1 about 200 MB, v2 smaller."""
    root = tmp_path_factory.mktemp("model")
    sums = {}
    for version, shards, size in (("v1", 4, 50), ("v2", 2, 8)):
        d = root / version
        d.mkdir()
        for i in range(shards):
            (d / f"model-{i:05d}.safetensors").write_bytes(os.urandom(size << 20))
        (d / "config.json").write_text(json.dumps({"version": version}))
        sums[version] = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in d.iterdir()}
    sums["dir"] = root
    for version in ("v1", "v2"):
        res = playbook("playbooks/model_publish.yml", "-e", f"model_name={NAME}", "-e", f"model_version={version}",
                       "-e", f"model_dir={root / version}", timeout=600)
        assert res.returncode == 0, res.stdout[-3000:]
    return sums


def sync(version, *extra):
    return playbook("playbooks/storage.yml", "-e", json.dumps({"model_sync_models": [{"name": NAME, "version": version}]}),
                    *extra, timeout=600)


def node_sums(n, version):
    out = ssh(n, f"cd /models/{NAME}/{version} && sha256sum *").stdout
    return {line.split()[1]: line.split()[0] for line in out.splitlines()}


def test_sync_checksummed_idempotent_switchable_and_self_repairing(model):
    res = sync("v1")
    assert res.returncode == 0, res.stdout[-3000:]
    for n in COMPUTE:
        assert node_sums(n, "v1") == model["v1"]
        assert ssh(n, f"readlink /models/{NAME}/current").stdout.strip() == "v1"
    again = sync("v1")
    assert again.returncode == 0 and "Copied (" not in again.stdout
    assert all(f"{n}" in again.stdout and "changed=0" in line for line in again.stdout.splitlines()
               for n in COMPUTE if line.startswith(n + " "))
    # Switch to v2 and back: one variable.
    assert sync("v2").returncode == 0
    for n in COMPUTE:
        assert ssh(n, f"readlink /models/{NAME}/current").stdout.strip() == "v2" and node_sums(n, "v2") == model["v2"]
    assert sync("v1").returncode == 0
    assert all(ssh(n, f"readlink /models/{NAME}/current").stdout.strip() == "v1" for n in COMPUTE)
    # A truncated and a corrupted (same size) file on one node are found and repaired; the other node moves nothing.
    # And a file gone from the store (an accident there: published versions never change) stays on every node: a
    # sync never deletes from a version a node may be serving.
    bad = COMPUTE[0]
    ssh(bad, f"truncate -s 1M /models/{NAME}/v1/model-00000.safetensors; "
             f"dd if=/dev/zero of=/models/{NAME}/v1/model-00001.safetensors bs=1k count=1 conv=notrunc status=none")
    store = ["rclone", "--config", str(RCLONE_CONF)]
    gone = f"sparkfleet:models/{NAME}/v1/model-00003.safetensors"
    subprocess.run([*store, "deletefile", gone], check=True, env=dict(os.environ, AWS_CA_BUNDLE=""))
    try:
        fix = sync("v1")
    finally:
        subprocess.run([*store, "copyto", str(model["dir"] / "v1" / "model-00003.safetensors"), gone], check=True,
                       env=dict(os.environ, AWS_CA_BUNDLE=""))
    assert fix.returncode == 0
    recap = {line.split()[0]: line for line in fix.stdout.splitlines() if line.split()[:1] and line.split()[0] in COMPUTE}
    assert "changed=1" in recap[bad] and all("changed=0" in recap[n] for n in COMPUTE if n != bad), recap
    assert all(node_sums(n, "v1") == model["v1"] for n in COMPUTE)


def test_secret_never_in_verbose_output(model, tmp_path):
    secret = SECRET_FILE.read_text().strip()
    assert len(secret) >= 16
    out = []
    # storage.yml converges the object store itself too (every task, gates off): its credentials tasks run at -vvv.
    res = sync("v1", "-vvv")
    out.append(res.stdout + res.stderr)
    src = tmp_path / "v3"
    src.mkdir()
    (src / "config.json").write_text("{}")
    res = playbook("playbooks/model_publish.yml", "-vvv", "-e", f"model_name={NAME}", "-e", "model_version=v3",
                   "-e", f"model_dir={src}")
    out.append(res.stdout + res.stderr)
    assert all(secret not in o for o in out)
    assert all(len(o) > 10000 for o in out)  # really verbose runs
    # and the node's own process list / rclone command lines carry none either
    assert secret not in subprocess.run(["docker", "exec", f"sparkfleet-{INV['vars']['sparkfleet_cluster_name']}-{CONTROL}",
                                         "ps", "auxww"], text=True, capture_output=True).stdout


def test_a_published_version_is_never_rewritten(model, tmp_path):
    """The same files again publish nothing; other files under a published version are refused, naming it."""
    again = playbook("playbooks/model_publish.yml", "-e", f"model_name={NAME}", "-e", "model_version=v2",
                     "-e", f"model_dir={model['dir'] / 'v2'}")
    assert again.returncode == 0 and "changed=0" in again.stdout.split("PLAY RECAP")[-1], again.stdout[-3000:]
    other = tmp_path / "v2"
    other.mkdir()
    (other / "config.json").write_text('{"version": "rewritten"}')
    res = playbook("playbooks/model_publish.yml", "-e", f"model_name={NAME}", "-e", "model_version=v2", "-e", f"model_dir={other}")
    assert res.returncode != 0 and f"{NAME} version v2 is published already with other files" in res.stdout, res.stdout[-3000:]
    out = subprocess.run(["rclone", "--config", str(RCLONE_CONF), "cat", f"sparkfleet:models/{NAME}/v2/config.json"],
                         text=True, capture_output=True, env=dict(os.environ, AWS_CA_BUNDLE=""))
    assert json.loads(out.stdout) == {"version": "v2"}, out.stdout + out.stderr


READER_FILE = INVENTORY / ".secrets" / f"{INV['vars']['sparkfleet_cluster_name']}_s3_reader_secret"


def test_compute_nodes_hold_only_a_read_only_identity(model):
    """Least privilege: a compute node reads models; it can neither write nor delete, and the root secret
    never leaves the control node."""
    root = SECRET_FILE.read_text().strip()
    reader = READER_FILE.read_text().strip()
    assert sync("v1").returncode == 0
    for n in COMPUTE:
        conf = ssh(n, "cat /etc/sparkfleet/rclone.conf").stdout
        assert reader in conf and root not in conf
        assert ssh(n, f"rclone --config /etc/sparkfleet/rclone.conf lsf sparkfleet:models/{NAME}/v1/").stdout.strip()
        write = ssh(n, "echo x > /tmp/w && rclone --config /etc/sparkfleet/rclone.conf --retries 1 --low-level-retries 1 "
                       f"copyto /tmp/w sparkfleet:models/{NAME}/v1/intruder", check=False)
        delete = ssh(n, "rclone --config /etc/sparkfleet/rclone.conf --retries 1 --low-level-retries 1 "
                        f"deletefile sparkfleet:models/{NAME}/v1/config.json", check=False)
        assert write.returncode != 0 and delete.returncode != 0, (write.stderr, delete.stderr)
        assert "AccessDenied" in write.stderr + delete.stderr
    assert sorted(node_sums(COMPUTE[0], "v1")) == sorted(model["v1"])  # nothing deleted


# Every shape of bad entry is the filter's unit test (tests/unit/test_filters.py); here, that the playbook stops on
# one before any sync, whichever field is bad.
@pytest.mark.parametrize("bad", [{"name": "../etc", "version": "v1"}, {"name": "ok", "version": "v1/../../x"}])
def test_model_names_are_validated_before_any_sync(bad):
    """rclone sync deletes what the source lacks: a name that escapes /models must never reach it."""
    res = playbook("playbooks/storage.yml", "-e", json.dumps({"model_sync_models": [bad]}), timeout=300)
    assert res.returncode != 0
    assert "model_sync_models" in res.stdout, res.stdout[-2000:]
    assert "TASK [sparkfleet.cluster.model_sync : Sync each model version" not in res.stdout


def test_tls_key_never_in_diff_output(tmp_path):
    """A dry run that would install TLS files shows neither the key nor its text in --diff output."""
    key, cert = tmp_path / "tls.key", tmp_path / "tls.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "2", "-subj", "/CN=sparkfleet-test"], check=True, capture_output=True)
    body = key.read_text().splitlines()[1]  # a line of the key's base64
    res = playbook("playbooks/storage.yml", "--check", "--diff", "-vvv", "--limit", CONTROL,
                   "-e", f"object_store_tls_cert={cert}", "-e", f"object_store_tls_key={key}")
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-3000:]
    assert "TLS certificate and key" in out and body not in out
