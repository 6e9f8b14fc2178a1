"""containerd's CRI settings for Kubernetes as a drop-in, without taking over config.toml.

config.toml belongs to the package (Docker's containerd.io ships `disabled_plugins = ["cri"]`, Debian's sets the CNI
folders). We write our settings to conf.d and touch config.toml only where containerd would otherwise ignore them:
"cri" disabled, no `imports` of conf.d, no `version` line. containerd 1.x merges an imported file by replacing each
plugin's whole table (containerd/containerd#5837), so on 1.x the drop-in carries config.toml's CRI table with our keys
on top; 2.x merges keys properly and the drop-in holds only ours.
Plain Python (tomllib, 3.11+): unit-tested on the controller, run on the node by the containerd_cri module."""
from __future__ import annotations

import re

try:
    import tomllib
except ImportError:  # pragma: no cover - Python < 3.11 on a node
    tomllib = None

CRI_V1 = "io.containerd.grpc.v1.cri"
CRI_NAMES = ("cri", CRI_V1)
VERSION_RE = re.compile(r"\bv?(\d+)\.(\d+)\.(\d+)")


class ConfigError(Exception):
    """config.toml is in a shape we refuse to edit by line (named in the message)."""


def parse_version(text: str) -> tuple[int, int, int] | None:
    """`containerd --version` -> (major, minor, patch). Debian prints '1.6.20~ds1', Docker's 'v1.7.27'."""
    for line in text.splitlines():
        if "containerd" in line:
            m = VERSION_RE.search(line.split("containerd", 1)[1].replace("github.com/containerd/containerd", ""))
            if m:
                return tuple(int(x) for x in m.groups())
    return None


def loads(text: str) -> dict:
    if tomllib is None:
        raise ConfigError("Python's tomllib (3.11 or later) is needed on the node to read containerd's config")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"config.toml is not valid TOML: {e}") from e


def merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def our_tables(major: int, minor: int, settings: dict) -> dict:
    """Our keys in containerd's own layout for its config version (2 on containerd 1.x, 3 on 2.x)."""
    cgroup = bool(settings["systemd_cgroup"])
    runtimes = {"runc": {"runtime_type": "io.containerd.runc.v2", "options": {"SystemdCgroup": cgroup}}}
    # GPU nodes with NVIDIA's toolkit preinstalled (DGX OS): the runtime nvidia-ctk would add, so the GPU Operator
    # can leave its toolkit off; default only where asked (device plugins without a RuntimeClass).
    ctr = {"runtimes": runtimes}
    if settings.get("nvidia_runtime"):
        runtimes["nvidia"] = {"runtime_type": "io.containerd.runc.v2",
                              "options": {"BinaryName": settings["nvidia_runtime"], "SystemdCgroup": cgroup}}
        if settings.get("nvidia_default"):
            ctr["default_runtime_name"] = "nvidia"
    if major < 2:
        return {CRI_V1: {"sandbox_image": settings["sandbox_image"],
                         "cni": {"bin_dir": settings["cni_bin_dir"], "conf_dir": settings["cni_conf_dir"]},
                         "containerd": ctr}}
    # 2.1 replaced cni.bin_dir with a list (bin_dirs).
    cni = ({"bin_dirs": [settings["cni_bin_dir"]]} if minor >= 1 else {"bin_dir": settings["cni_bin_dir"]})
    cni["conf_dir"] = settings["cni_conf_dir"]
    return {"io.containerd.cri.v1.images": {"pinned_images": {"sandbox": settings["sandbox_image"]}},
            "io.containerd.cri.v1.runtime": {"cni": cni, "containerd": ctr}}


def _value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, str):
        return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(v, list):
        return "[" + ", ".join(_value(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} to TOML")


def _key(k: str) -> str:
    return k if re.fullmatch(r"[A-Za-z0-9_-]+", k) else _value(k)


def dumps(tables: dict, prefix: str = "") -> str:
    """A small TOML writer: nested tables of scalars and lists, keys in a stable order."""
    scalars = {k: v for k, v in tables.items() if not isinstance(v, dict)}
    subs = {k: v for k, v in tables.items() if isinstance(v, dict)}
    out = []
    if prefix and (scalars or not subs):
        out.append(f"[{prefix}]")
    out += [f"{_key(k)} = {_value(v)}" for k, v in sorted(scalars.items())]
    for k in sorted(subs):
        text = dumps(subs[k], f"{prefix}.{_key(k)}" if prefix else _key(k))
        out.append(("\n" if out else "") + text)
    return "\n".join(out)


def dropin(major: int, minor: int, settings: dict, main: dict) -> str:
    """The conf.d file: `version`, then the plugins tables (on 1.x carrying config.toml's CRI table)."""
    ours = our_tables(major, minor, settings)
    if major < 2:
        plugins = main.get("plugins", {}) if int(main.get("version", 1)) >= 2 else {}
        ours = {CRI_V1: merge(plugins.get(CRI_V1, {}), ours[CRI_V1])}
    header = ("# sparkfleet (kubernetes_node): Kubernetes' CRI settings for containerd. Managed: edits are put back.\n"
              f"version = {2 if major < 2 else 3}\n\n")
    return header + dumps({"plugins": ours}) + "\n"


def plan_main(text: str | None, glob: str, major: int) -> tuple[str, list[str]]:
    """config.toml with the fewest line edits that make containerd load the drop-in and run its CRI plugin.
    Returns (new text, what changed and why); the text is unchanged when nothing is needed."""
    if text is None:
        return (f"# Written by sparkfleet (kubernetes_node): no package provided a config; settings live in conf.d.\n"
                f"version = {2 if major < 2 else 3}\nimports = [{_value(glob)}]\n", ["created with imports of conf.d"])
    doc = loads(text)
    lines = text.splitlines()
    notes = []
    disabled = doc.get("disabled_plugins", [])
    if any(n in CRI_NAMES for n in disabled):
        idx = [i for i, ln in enumerate(lines) if re.match(r"\s*disabled_plugins\s*=", ln)]
        if len(idx) != 1 or not lines[idx[0]].rstrip().endswith("]"):
            raise ConfigError("disabled_plugins names the CRI plugin across several lines: edit it to drop \"cri\"")
        keep = [n for n in disabled if n not in CRI_NAMES]
        lines[idx[0]] = f"disabled_plugins = {_value(keep)}"
        notes.append("the CRI plugin was disabled (Docker's default): enabled, other disabled plugins kept")
    imports = doc.get("imports")
    if imports is None:
        lines.insert(0, f"imports = [{_value(glob)}]")
        notes.append(f"imports of {glob} added")
    elif glob not in imports:
        idx = [i for i, ln in enumerate(lines) if re.match(r"\s*imports\s*=", ln)]
        if len(idx) != 1 or not lines[idx[0]].rstrip().endswith("]"):
            raise ConfigError(f"imports spans several lines: add {glob} to it")
        lines[idx[0]] = f"imports = {_value(list(imports) + [glob])}"
        notes.append(f"{glob} added to imports")
    if "version" not in doc:
        # Version 1 names plugins differently; a file without any plugin table means the same in version 2.
        if "plugins" in doc:
            raise ConfigError("config.toml has plugin tables but no version line (version 1): migrate it "
                              "(containerd config migrate) or set version = 2")
        lines.insert(0, "version = 2")
        notes.append("version = 2 added (the file had no plugin tables)")
    if not notes:
        return text, []
    return "\n".join(lines) + "\n", notes


def effective_problems(dump_text: str, major: int, minor: int, settings: dict) -> list[str]:
    """What `containerd config dump` (the merged configuration) says differs from our settings."""
    doc = loads(dump_text)
    want = our_tables(major, minor, settings)
    plugins = doc.get("plugins", {})
    problems = []

    def walk(w, have, path):
        for k, v in w.items():
            if isinstance(v, dict):
                walk(v, have.get(k, {}) if isinstance(have, dict) else {}, path + [k])
            elif not isinstance(have, dict) or have.get(k) != v:
                got = have.get(k, "unset") if isinstance(have, dict) else "unset"
                problems.append(f"{'.'.join(path + [k])} is {got!r}, want {v!r}")

    walk(want, plugins, ["plugins"])
    if any(n in CRI_NAMES for n in doc.get("disabled_plugins", [])):
        problems.append("the CRI plugin is disabled")
    return problems
