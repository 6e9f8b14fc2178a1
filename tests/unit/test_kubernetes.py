"""The Kubernetes layer's files the lab cannot apply (no Kubernetes package source is reachable here): rendered by
Ansible from the roles' own templates and checked against real schemas. Kubernetes objects through
kubernetes-validate (the API's OpenAPI schemas, strict: an unknown field fails); kubeadm and kubelet configs through
the v1beta4/v1beta1 field references (tests/unit/schemas/kubeadm.py). Also containerd's drop-in logic and the
parsers behind the validation checks."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import jsonschema
import kubernetes_validate as kv
import pytest
import yaml
from conftest import ROOT
from schemas.kubeadm import GPU_OPERATOR_VALUES, SCHEMAS

from ansible_collections.sparkfleet.cluster.plugins.module_utils import containerd as cd
from ansible_collections.sparkfleet.cluster.plugins.module_utils import kube

K8S_VERSION = "1.34"
SETTINGS = {"sandbox_image": "registry.k8s.io/pause:3.10.1", "systemd_cgroup": True, "cni_bin_dir": "/opt/cni/bin",
            "cni_conf_dir": "/etc/cni/net.d", "nvidia_runtime": "", "nvidia_default": False}

RENDER = """
- hosts: spark-02
  gather_facts: false
  tasks:
    - ansible.builtin.include_vars: {file: "%(roles)s/kubeadm/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/kubeadm/vars/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/vllm_k8s/defaults/main.yml"}
    - ansible.builtin.include_vars: {file: "%(roles)s/vllm_k8s/vars/main.yml"}
    - ansible.builtin.template: {src: "%(roles)s/kubeadm/templates/kubeadm-init.yaml.j2", dest: "%(out)s/init.yaml", mode: "0600"}
    - ansible.builtin.template: {src: "%(roles)s/kubeadm/templates/kubeadm-join.yaml.j2", dest: "%(out)s/join.yaml", mode: "0600"}
    - ansible.builtin.template: {src: "%(roles)s/kubeadm/templates/gpu-operator-values.yaml.j2", dest: "%(out)s/gpu.yaml", mode: "0644"}
    - ansible.builtin.template: {src: "%(roles)s/kubeadm/templates/rdma-shared-device-plugin.yaml.j2", dest: "%(out)s/rdma.yaml", mode: "0644"}
    - ansible.builtin.template: {src: "%(roles)s/vllm_k8s/templates/vllm.yaml.j2", dest: "%(out)s/vllm.yaml", mode: "0644"}
"""

# What the role's probe and the cluster model give on two DGX Sparks (DGX OS: driver and toolkit preinstalled).
PROBE = {"gpus": 1, "driver": True, "toolkit": True, "kubeadm": "", "joined": False}
INVENTORY = {"all": {"children": {
    "control": {"hosts": {"spark-01": {}}},
    "compute": {"hosts": {h: {"ansible_connection": "local", "_kubeadm_probe": {"stdout": json.dumps(PROBE)},
                              "ansible_facts": {"architecture": "aarch64", "nvidia": {"gpus": [{"index": 0}]}}}
                          for h in ("spark-01", "spark-02")}},
    "cluster": {"children": {"control": {}, "compute": {}}}}}}
EXTRA = {
    "_kubeadm_node": {"name": "spark-02", "mgmt_ip": "192.168.10.12"},
    "_kubeadm_control": {"name": "spark-01", "mgmt_ip": "192.168.10.11"},
    "_kubeadm_token": "abcdef.0123456789abcdef", "_kubeadm_ca_hash": "0" * 64,
    "sparkfleet_fabric_interfaces": ["enp1s0f0np0", "enP2p1s0f0np0"],
    "vllm_k8s_model": "llama-3.1-8b", "vllm_k8s_image": "vllm/vllm-openai@sha256:" + "a" * 64,
    "_vllm_k8s_admin": {"stat": {"exists": True}},
}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    out = tmp_path_factory.mktemp("kube")
    pb = out / "render.yml"
    pb.write_text(RENDER % {"roles": ROOT / "roles", "out": out})
    (out / "inventory.yml").write_text(json.dumps(INVENTORY))
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"))
    res = subprocess.run([str(ROOT / ".venv" / "bin" / "ansible-playbook"), "-i", str(out / "inventory.yml"), str(pb),
                          "-e", f"ansible_python_interpreter={sys.executable}", "-e", json.dumps(EXTRA)],
                         cwd=ROOT, env=env, text=True, capture_output=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    return {f: [d for d in yaml.safe_load_all((out / f"{f}.yaml").read_text()) if d]
            for f in ("init", "join", "gpu", "rdma", "vllm")}


def kubeadm_valid(doc):
    jsonschema.validate(doc, SCHEMAS[doc["kind"]])


def test_kubeadm_init_config_passes_the_v1beta4_schema_with_our_choices(rendered):
    docs = {d["kind"]: d for d in rendered["init"]}
    assert set(docs) == {"InitConfiguration", "ClusterConfiguration", "KubeletConfiguration"}
    for d in docs.values():
        kubeadm_valid(d)
    init, cluster, kubelet = docs["InitConfiguration"], docs["ClusterConfiguration"], docs["KubeletConfiguration"]
    assert init["localAPIEndpoint"] == {"advertiseAddress": "192.168.10.11", "bindPort": 6443}
    assert init["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-ip", "value": "192.168.10.12"}]
    assert init["nodeRegistration"]["taints"] == []  # spark-02 is in compute: it takes pods
    assert cluster["networking"] == {"podSubnet": "10.244.0.0/16", "serviceSubnet": "10.96.0.0/12", "dnsDomain": "cluster.local"}
    assert cluster["kubernetesVersion"] == "v1.34.1" and cluster["controlPlaneEndpoint"] == "192.168.10.11:6443"
    assert kubelet["cgroupDriver"] == "systemd" and kubelet["containerRuntimeEndpoint"].endswith("containerd.sock")


def test_join_config_passes_the_schema_and_pins_the_ca(rendered):
    (join,) = rendered["join"]
    kubeadm_valid(join)
    bt = join["discovery"]["bootstrapToken"]
    assert bt["apiServerEndpoint"] == "192.168.10.11:6443" and bt["caCertHashes"] == ["sha256:" + "0" * 64]


@pytest.mark.parametrize("path,bad", [
    (("networking",), {"podSubnett": "10.244.0.0/16"}),        # a typo in a field name
    ((), {"controlPlaneEndPoint": "x:6443"}),                    # wrong case
    (("apiServer",), {"extraArgs": {"v": "5"}}),                 # v1beta3's map form of extraArgs
])
def test_a_wrong_kubeadm_field_fails(rendered, path, bad):
    doc = json.loads(json.dumps(next(d for d in rendered["init"] if d["kind"] == "ClusterConfiguration")))
    target = doc
    for p in path:
        target = target[p]
    target.update(bad)
    with pytest.raises(jsonschema.ValidationError):
        kubeadm_valid(doc)


def test_kubernetes_objects_pass_the_strict_openapi_schema(rendered):
    docs = rendered["rdma"] + rendered["vllm"]
    assert {d["kind"] for d in docs} == {"ConfigMap", "DaemonSet", "Namespace", "Deployment", "Service"}
    for d in docs:
        kv.validate(d, K8S_VERSION, strict=True)
    for pod in (kube.cuda_pod("sparkfleet-cuda-spark-01", "spark-01", "cuda:13", 1),
                *kube.net_pods("sparkfleet-net", "spark-01", "spark-02", "agnhost:2.53")):
        kv.validate(pod, K8S_VERSION, strict=True)


def test_vllm_manifest_model_parallelism_probe_and_digest(rendered):
    dep = next(d for d in rendered["vllm"] if d["kind"] == "Deployment")
    c = dep["spec"]["template"]["spec"]["containers"][0]
    assert c["image"].endswith("@sha256:" + "a" * 64)
    args = c["args"]
    assert args[args.index("--model") + 1] == "/models/llama-3.1-8b/current"
    assert args[args.index("--tensor-parallel-size") + 1] == "1"  # one GB10 per Spark
    assert c["resources"]["limits"] == {"nvidia.com/gpu": 1}
    assert c["readinessProbe"]["httpGet"]["path"] == "/v1/models"
    svc = next(d for d in rendered["vllm"] if d["kind"] == "Service")
    assert 30000 <= svc["spec"]["ports"][0]["nodePort"] <= 32767


def test_a_wrong_manifest_field_fails(rendered):
    dep = json.loads(json.dumps(next(d for d in rendered["vllm"] if d["kind"] == "Deployment")))
    dep["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = {}
    with pytest.raises(kv.ValidationError):
        kv.validate(dep, K8S_VERSION, strict=True)


def test_gpu_operator_values_leave_driver_and_toolkit_to_dgx_os(rendered):
    (values,) = rendered["gpu"]
    jsonschema.validate(values, GPU_OPERATOR_VALUES)
    assert values["driver"]["enabled"] is False and values["toolkit"]["enabled"] is False
    assert values["operator"]["defaultRuntime"] == "containerd"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(values | {"drivers": {"enabled": False}}, GPU_OPERATOR_VALUES)


def test_rdma_plugin_selects_both_cx7_halves(rendered):
    cfg = next(d for d in rendered["rdma"] if d["kind"] == "ConfigMap")
    conf = json.loads(cfg["data"]["config.json"])
    assert conf["configList"][0]["selectors"]["ifNames"] == ["enp1s0f0np0", "enP2p1s0f0np0"]


# A manifest in the shape of Flannel's released kube-flannel.yml (namespace kube-flannel, one DaemonSet).
FLANNEL = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kube-flannel"}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kube-flannel-cfg", "namespace": "kube-flannel"},
     "data": {"cni-conf.json": "{}", "net-conf.json": json.dumps({"Network": "10.244.0.0/16", "EnableNFTables": False,
                                                                  "Backend": {"Type": "vxlan"}})}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "kube-flannel-ds", "namespace": "kube-flannel"},
     "spec": {"selector": {"matchLabels": {"app": "flannel"}},
              "template": {"metadata": {"labels": {"app": "flannel"}},
                           "spec": {"hostNetwork": True, "containers": [
                               {"name": "kube-flannel", "image": "ghcr.io/flannel-io/flannel:v0.27.4",
                                "command": ["/opt/bin/flanneld"], "args": ["--ip-masq", "--kube-subnet-mgr", "--iface=eth0"]}]}}}},
]


def test_flannel_is_pinned_to_the_management_network_and_pod_cidr():
    out = kube.flannel_patch(FLANNEL, "10.200.0.0/16", iface_can_reach="192.168.10.11")
    for d in out:
        kv.validate(d, K8S_VERSION, strict=True)
    args = out[2]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["--ip-masq", "--kube-subnet-mgr", "--iface-can-reach=192.168.10.11"]
    conf = json.loads(out[1]["data"]["net-conf.json"])
    assert conf["Network"] == "10.200.0.0/16" and conf["Backend"] == {"Type": "vxlan"} and conf["EnableNFTables"] is False
    assert kube.flannel_patch(FLANNEL, "10.244.0.0/16", iface="enP7s7")[2]["spec"]["template"]["spec"]["containers"][0][
        "args"][-1] == "--iface=enP7s7"
    assert FLANNEL[2]["spec"]["template"]["spec"]["containers"][0]["args"][-1] == "--iface=eth0"  # input untouched
    with pytest.raises(kube.ManifestError):
        kube.flannel_patch(FLANNEL[:2], "10.244.0.0/16")


NODES_JSON = json.dumps({"items": [
    {"metadata": {"name": "spark-01"}, "status": {"conditions": [{"type": "Ready", "status": "True"}],
                                                  "allocatable": {"cpu": "20", "nvidia.com/gpu": "1"}}},
    {"metadata": {"name": "spark-02"}, "status": {"conditions": [{"type": "Ready", "status": "False",
                                                                  "reason": "KubeletNotReady", "message": "cni plugin not initialized"}],
                                                  "allocatable": {"cpu": "20"}}},
]})


def test_node_checks_ready_and_gpus():
    checks = kube.node_checks(NODES_JSON, {"spark-01": 1, "spark-02": 1, "spark-03": 1})
    assert [c["status"] for c in checks["spark-01"]] == ["pass", "pass"]
    ready, gpu = checks["spark-02"]
    assert ready["status"] == "fail" and "cni plugin not initialized" in ready["detail"]
    assert gpu["status"] == "fail" and "allocatable 0" in gpu["detail"]
    assert checks["spark-03"][0]["status"] == "fail" and "not registered" in checks["spark-03"][0]["detail"]
    bad = kube.node_checks("error: the server doesn't have a resource type", {"spark-01": 1})
    assert bad["spark-01"][0]["status"] == "fail"


DOCKER_CONFIG = '#   Copyright 2018-2022 Docker Inc.\n\n#root = "/var/lib/containerd"\ndisabled_plugins = ["cri"]\n'
DEBIAN_CONFIG = ('version = 2\n\n[plugins]\n  [plugins."io.containerd.grpc.v1.cri"]\n    max_container_log_line_size = 8192\n'
                 '    [plugins."io.containerd.grpc.v1.cri".cni]\n      bin_dir = "/usr/lib/cni"\n'
                 '      conf_dir = "/etc/cni/net.d"\n')
GLOB = "/etc/containerd/conf.d/*.toml"


def test_dockers_config_gets_cri_imports_and_version_and_keeps_its_lines():
    text, notes = cd.plan_main(DOCKER_CONFIG, GLOB, 1)
    assert "disabled_plugins = []" in text and f'imports = ["{GLOB}"]' in text and text.startswith("version = 2\n")
    assert "#   Copyright 2018-2022 Docker Inc." in text and '#root = "/var/lib/containerd"' in text
    assert len(notes) == 3
    assert cd.plan_main(text, GLOB, 1) == (text, [])  # idempotent
    keep, _ = cd.plan_main('version = 2\ndisabled_plugins = ["cri", "io.containerd.snapshotter.v1.zfs"]\n', GLOB, 1)
    assert 'disabled_plugins = ["io.containerd.snapshotter.v1.zfs"]' in keep


def test_containerd_1x_dropin_carries_the_packages_cri_table():
    main = cd.loads(cd.plan_main(DEBIAN_CONFIG, GLOB, 1)[0])
    drop = cd.loads(cd.dropin(1, 6, SETTINGS, main))
    cri = drop["plugins"][cd.CRI_V1]
    assert cri["max_container_log_line_size"] == 8192  # the package's key survives 1.x's whole-table replace
    assert cri["cni"]["bin_dir"] == "/opt/cni/bin"      # ours wins where both set it
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    assert cri["sandbox_image"] == "registry.k8s.io/pause:3.10.1" and drop["version"] == 2


def test_containerd_2x_dropin_and_the_nvidia_runtime():
    drop = cd.loads(cd.dropin(2, 1, SETTINGS | {"nvidia_runtime": "/usr/bin/nvidia-container-runtime",
                                                 "nvidia_default": True}, {}))
    rt = drop["plugins"]["io.containerd.cri.v1.runtime"]
    assert drop["version"] == 3 and rt["cni"]["bin_dirs"] == ["/opt/cni/bin"]
    assert rt["containerd"]["default_runtime_name"] == "nvidia"
    assert rt["containerd"]["runtimes"]["nvidia"]["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
    assert drop["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"] == SETTINGS["sandbox_image"]


def test_effective_config_problems_and_refusals():
    dump = cd.dropin(1, 7, SETTINGS, {})
    assert cd.effective_problems(dump, 1, 7, SETTINGS) == []
    wrong = dump.replace("SystemdCgroup = true", "SystemdCgroup = false")
    assert cd.effective_problems(wrong, 1, 7, SETTINGS) == [
        "plugins.io.containerd.grpc.v1.cri.containerd.runtimes.runc.options.SystemdCgroup is False, want True"]
    with pytest.raises(cd.ConfigError):
        cd.plan_main('[plugins.cri]\n  sandbox_image = "x"\n', GLOB, 1)  # version 1 with tables: not edited by line
    assert cd.parse_version("containerd containerd.io v1.7.27 05044ec0a9") == (1, 7, 27)
    assert cd.parse_version("containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7") == (2, 1, 4)
    assert cd.parse_version("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3") == (1, 6, 20)
