"""Strict JSON schemas of the kubeadm and kubelet config types our templates use, transcribed field by field from the
API references (kubeadm.k8s.io/v1beta4: kubernetes/website content/en/docs/reference/config-api/
kubeadm-config.v1beta4.md; kubelet.config.k8s.io/v1beta1: kubelet-config.v1beta1.md). The Kubernetes OpenAPI (which
kubernetes-validate bundles) has no component-config types, so these are the schema a wrong field name fails."""
from __future__ import annotations


def obj(props: dict, required=()) -> dict:
    return {"type": "object", "properties": props, "additionalProperties": False, "required": list(required)}


STR, INT, BOOL = {"type": "string"}, {"type": "integer"}, {"type": "boolean"}
STRS = {"type": "array", "items": STR}
ARGS = {"type": "array", "items": obj({"name": STR, "value": STR}, ["name", "value"])}
ENVS = {"type": "array", "items": {"type": "object"}}
VOLUMES = {"type": "array", "items": obj({"name": STR, "hostPath": STR, "mountPath": STR, "readOnly": BOOL,
                                          "pathType": STR}, ["name", "hostPath", "mountPath"])}
TAINT = obj({"key": STR, "value": STR, "effect": STR, "timeAdded": STR}, ["key", "effect"])
API_ENDPOINT = obj({"advertiseAddress": STR, "bindPort": INT})
NODE_REGISTRATION = obj({"name": STR, "criSocket": STR, "taints": {"type": "array", "items": TAINT},
                         "kubeletExtraArgs": ARGS, "ignorePreflightErrors": STRS, "imagePullPolicy": STR,
                         "imagePullSerial": BOOL})
TIMEOUTS = obj({k: STR for k in ("controlPlaneComponentHealthCheck", "kubeletHealthCheck", "kubernetesAPICall",
                                 "etcdAPICall", "tlsBootstrap", "discovery", "upgradeManifests")})
PATCHES = obj({"directory": STR})
COMPONENT = obj({"extraArgs": ARGS, "extraVolumes": VOLUMES, "extraEnvs": ENVS})
API_SERVER = obj({"extraArgs": ARGS, "extraVolumes": VOLUMES, "extraEnvs": ENVS, "certSANs": STRS})
LOCAL_ETCD = obj({"imageRepository": STR, "imageTag": STR, "dataDir": STR, "extraArgs": ARGS, "extraEnvs": ENVS,
                  "serverCertSANs": STRS, "peerCertSANs": STRS})
EXTERNAL_ETCD = obj({"endpoints": STRS, "caFile": STR, "certFile": STR, "keyFile": STR}, ["endpoints"])
KIND = lambda k: {"const": k}  # noqa: E731
APIV = {"const": "kubeadm.k8s.io/v1beta4"}

SCHEMAS = {
    "InitConfiguration": obj({
        "apiVersion": APIV, "kind": KIND("InitConfiguration"),
        "bootstrapTokens": {"type": "array", "items": obj({"token": STR, "description": STR, "ttl": STR, "expires": STR,
                                                           "usages": STRS, "groups": STRS}, ["token"])},
        "dryRun": BOOL, "nodeRegistration": NODE_REGISTRATION, "localAPIEndpoint": API_ENDPOINT,
        "certificateKey": STR, "skipPhases": STRS, "patches": PATCHES, "timeouts": TIMEOUTS}, ["apiVersion", "kind"]),
    "ClusterConfiguration": obj({
        "apiVersion": APIV, "kind": KIND("ClusterConfiguration"),
        "etcd": obj({"local": LOCAL_ETCD, "external": EXTERNAL_ETCD}),
        "networking": obj({"serviceSubnet": STR, "podSubnet": STR, "dnsDomain": STR}),
        "kubernetesVersion": STR, "controlPlaneEndpoint": STR, "apiServer": API_SERVER,
        "controllerManager": COMPONENT, "scheduler": COMPONENT,
        "dns": obj({"imageRepository": STR, "imageTag": STR, "disabled": BOOL}), "proxy": obj({"disabled": BOOL}),
        "certificatesDir": STR, "imageRepository": STR, "featureGates": {"type": "object"}, "clusterName": STR,
        "encryptionAlgorithm": {"enum": ["RSA-2048", "RSA-3072", "RSA-4096", "ECDSA-P256"]},
        "certificateValidityPeriod": STR, "caCertificateValidityPeriod": STR}, ["apiVersion", "kind"]),
    "JoinConfiguration": obj({
        "apiVersion": APIV, "kind": KIND("JoinConfiguration"), "dryRun": BOOL, "nodeRegistration": NODE_REGISTRATION,
        "caCertPath": STR,
        "discovery": obj({"bootstrapToken": obj({"token": STR, "apiServerEndpoint": STR, "caCertHashes": STRS,
                                                 "unsafeSkipCAVerification": BOOL}, ["token"]),
                          "file": obj({"kubeConfigPath": STR}, ["kubeConfigPath"]), "tlsBootstrapToken": STR}),
        "controlPlane": obj({"localAPIEndpoint": API_ENDPOINT, "certificateKey": STR}),
        "skipPhases": STRS, "patches": PATCHES, "timeouts": TIMEOUTS}, ["apiVersion", "kind", "discovery"]),
    # KubeletConfiguration has ~100 fields; the ones a kubeadm cluster commonly sets (and all we set).
    "KubeletConfiguration": obj({
        "apiVersion": {"const": "kubelet.config.k8s.io/v1beta1"}, "kind": KIND("KubeletConfiguration"),
        **{k: STR for k in ("cgroupDriver", "containerRuntimeEndpoint", "staticPodPath", "clusterDomain", "resolvConf",
                            "cpuManagerPolicy", "memoryManagerPolicy", "topologyManagerPolicy", "topologyManagerScope",
                            "reservedSystemCPUs", "shutdownGracePeriod", "shutdownGracePeriodCriticalPods",
                            "tlsMinVersion", "address", "imageMinimumGCAge", "evictionPressureTransitionPeriod")},
        **{k: BOOL for k in ("failSwapOn", "rotateCertificates", "serverTLSBootstrap", "protectKernelDefaults")},
        **{k: INT for k in ("maxPods", "podPidsLimit", "port", "readOnlyPort", "imageGCHighThresholdPercent",
                            "imageGCLowThresholdPercent")},
        "clusterDNS": STRS, "tlsCipherSuites": STRS,
        **{k: {"type": "object"} for k in ("systemReserved", "kubeReserved", "evictionHard", "evictionSoft",
                                           "featureGates", "authentication", "authorization", "logging",
                                           "memorySwap")}}, ["apiVersion", "kind"]),
}

# The GPU Operator chart values we set (gpu-operator values.yaml: driver, toolkit, operator, cdi, devicePlugin).
GPU_OPERATOR_VALUES = obj({
    "driver": obj({"enabled": BOOL, "version": STR, "rdma": obj({"enabled": BOOL, "useHostMofed": BOOL})}),
    "toolkit": obj({"enabled": BOOL, "version": STR, "env": ENVS}),
    "operator": obj({"defaultRuntime": {"enum": ["docker", "containerd", "crio"]}}),
    "cdi": obj({"enabled": BOOL, "default": BOOL}),
    "devicePlugin": obj({"enabled": BOOL, "version": STR}),
    "dcgmExporter": obj({"enabled": BOOL}),
    "nfd": obj({"enabled": BOOL}),
})
