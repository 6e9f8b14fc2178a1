# Controller half of the role gate: the digest of everything a role reads on the controller (its variables, the
# cluster's shape, its code and the collection's plugins, named controller files), then the module reads the node.
# Values never leave the controller: only their digest is sent (some are secrets).
from __future__ import annotations

import hashlib
import os
import re

from ansible.plugins.action import ActionBase

from ansible_collections.sparkfleet.cluster.plugins.module_utils import footprint as fp
from ansible_collections.sparkfleet.cluster.plugins.module_utils.cluster_model import PASSED_GROUP

OFF = {"off", "0", "false", "no"}


def tree_digest(root: str) -> str:
    """Paths and contents of every file below root (code, templates, defaults): an edit reruns the role."""
    h = hashlib.sha256()
    for base, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            p = os.path.join(base, name)
            h.update(os.path.relpath(p, root).encode() + b"\0")
            with open(p, "rb") as f:
                h.update(f.read())
    return h.hexdigest()


def file_digest(path: str) -> str:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except FileNotFoundError:
        return "absent"


class ActionModule(ActionBase):
    _VALID_ARGS = frozenset(("role", "paths", "services", "packages", "commands", "stamp", "stamp_dir", "inputs_digest",
                             "input_vars", "controller_paths", "stamp_from", "scan"))

    def inputs_digest(self, role: str, task_vars: dict, spec: dict) -> tuple[str, list[str]]:
        args = self._task.args
        templar = self._templar.copy_with_new_env(available_variables=task_vars)
        # Every variable of the role and of the cluster, plus the other roles' variables it names (input_vars).
        pattern = re.compile(rf"^(?:{re.escape(role)}|sparkfleet)_")
        names = sorted({n for n in task_vars if pattern.match(n)} | set(args.get("input_vars") or []))
        values, unresolved = {}, []
        for n in names:
            if n == "sparkfleet_only":  # which nodes this run touches, not what they should hold
                continue
            try:
                values[n] = templar.resolve_variable_expression(n)
            except Exception as e:  # noqa: BLE001 - a value that cannot be computed here still counts, by its text
                values[n] = f"unresolved: {type(e).__name__}"
                unresolved.append(n)
        groups = {g: sorted(hs) for g, hs in task_vars.get("groups", {}).items() if g != PASSED_GROUP}
        addresses = {}
        for h in groups.get("all", []):
            try:
                addresses[h] = templar.resolve_variable_expression(f"hostvars['{h}'].ansible_host") \
                    if re.fullmatch(r"[\w.-]+", h) else h
            except Exception:  # noqa: BLE001 - no ansible_host: the name is the address
                addresses[h] = h
        role_path = getattr(getattr(self._task, "_role", None), "_role_path", None)
        code = {"role": tree_digest(role_path) if role_path else "",
                "plugins": tree_digest(os.path.join(os.path.dirname(__file__), ".."))}
        return fp.digest({"role": role, "spec": spec, "vars": values, "groups": groups, "addresses": addresses,
                          "code": code}), unresolved

    @staticmethod
    def with_controller_files(base: str, paths: list) -> str:
        """The inputs digest: the variables' part and the named controller files as they are now (read again at
        the stamp: a role may make them, as ssh_trust makes the cluster key on its first run)."""
        return fp.digest({"base": base, "controller_files": {p: file_digest(p) for p in paths}})

    def gate_off(self, task_vars: dict) -> bool:
        if os.environ.get("SPARKFLEET_GATE", "on").lower() in OFF:
            return True
        templar = self._templar.copy_with_new_env(available_variables=task_vars)
        try:
            return str(templar.resolve_variable_expression("sparkfleet_gate")).lower() in OFF
        except Exception:  # noqa: BLE001 - not set: the gate is on
            return False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        task_vars = task_vars or {}
        args = dict(self._task.args)
        if args.get("scan"):
            result.update(self._execute_module(module_name="sparkfleet.cluster.role_gate", task_vars=task_vars,
                                               module_args={k: v for k, v in args.items() if k in ("scan", "stamp_dir")}))
            return result
        if args.get("stamp_from"):
            # The stamp after a converge: the footprint of the gate that let the role run, and its inputs digest with
            # the controller files read again.
            prev = args.pop("stamp_from")
            if not isinstance(prev, dict) or "footprint" not in prev:
                result.update(failed=True, msg="role_gate: stamp_from must be the registered result of a role_gate task")
                return result
            args.update(prev["footprint"], stamp=True,
                        inputs_digest=self.with_controller_files(prev["inputs_base"], prev.get("controller_paths") or []))
        role = args.get("role") or self._task._role.get_name().split(".")[-1]
        module_args = {k: v for k, v in args.items() if k not in ("input_vars", "controller_paths")}
        module_args["role"] = role
        spec = {k: module_args.get(k) or [] for k in ("paths", "services", "packages", "commands")}
        unresolved: list[str] = []
        if not module_args.get("inputs_digest"):
            base, unresolved = self.inputs_digest(role, task_vars, spec)
            controller_paths = list(args.get("controller_paths") or [])
            module_args["inputs_digest"] = self.with_controller_files(base, controller_paths)
            result.update(inputs_base=base, controller_paths=controller_paths)
        result["inputs_digest"] = module_args["inputs_digest"]
        result["footprint"] = {k: module_args[k] for k in ("role", "paths", "services", "packages", "commands",
                                                           "stamp_dir") if module_args.get(k) is not None}
        if unresolved:
            result["unresolved_inputs"] = unresolved
        scanned = task_vars.get("_preflight_gate_scan")
        if not module_args.get("stamp"):
            off = self.gate_off(task_vars)
            have_scan = isinstance(scanned, dict) and isinstance(scanned.get("roles"), dict)
            if off or have_scan:
                # Gate off, or preflight read every stamp's footprint at the start of this run: decide here, no
                # round trip.
                entry = scanned["roles"].get(role) if have_scan else None
                run, reason = fp.verdict(entry, module_args["inputs_digest"], bool(entry and entry.get("same")), off)
                result.update(changed=False, run=run, reason=reason if off else reason + " (preflight's scan)")
                return result
        result.update(self._execute_module(module_name="sparkfleet.cluster.role_gate", module_args=module_args,
                                           task_vars=task_vars))
        return result
