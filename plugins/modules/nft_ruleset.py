#!/usr/bin/python
# One task for the whole firewall: check, compare file and live state, load atomically, snapshot.
from __future__ import annotations

DOCUMENTATION = r"""
module: nft_ruleset
short_description: Load an nftables table atomically and detect drift of the live ruleset
description:
  - Checks I(content) with C(nft -c) before anything changes, writes it to I(path) and loads it with C(nft -f).
    The content should replace its table atomically (an empty C(table X) declaration, C(delete table X), then the table).
  - Detects drift both in the file and in the kernel. After each load the module keeps a stateless
    numeric listing (C(nft -s -n list table), independent of /etc/protocols) beside the file; a live table that no longer matches it (a rule deleted
    by hand, the table flushed) is reloaded and reported as changed.
  - Other tables (Docker's, Kubernetes') are never touched.
  - Supports check mode and diff mode.
version_added: "0.1.0"
author: sparkfleet developers
options:
  content:
    description: The ruleset text.
    type: str
    required: true
  path:
    description: Where the ruleset is kept (loaded at boot by a unit).
    type: path
    required: true
  table:
    description: The table the content manages, as C(FAMILY NAME).
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Cluster firewall
  sparkfleet.cluster.nft_ruleset:
    content: "{{ lookup('template', 'firewall.nft.j2') }}"
    path: /etc/sparkfleet/firewall.nft
    table: inet sparkfleet
"""

RETURN = r"""
file_changed:
  description: The file on disk differed from I(content).
  returned: always
  type: bool
live_drift:
  description: The live table differed from what was last loaded (or was missing).
  returned: always
  type: bool
"""

import os
import tempfile

from ansible.module_utils.basic import AnsibleModule


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def main():
    module = AnsibleModule(
        argument_spec=dict(content=dict(type="str", required=True), path=dict(type="path", required=True),
                           table=dict(type="str", required=True)),
        supports_check_mode=True,
    )
    p = module.params
    nft = module.get_bin_path("nft", required=True)
    table = p["table"].split()
    if len(table) != 2:
        module.fail_json(msg="table must be 'FAMILY NAME', got %r" % p["table"])
    content = p["content"] if p["content"].endswith("\n") else p["content"] + "\n"

    folder = os.path.dirname(p["path"]) or "/"
    if not os.path.isdir(folder) and not module.check_mode:
        os.makedirs(folder, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".sparkfleet-nft-", dir=folder if os.path.isdir(folder) else None)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(content)
        rc, out, err = module.run_command([nft, "-c", "-f", tmp])
        if rc != 0:
            module.fail_json(msg="nft -c rejected the ruleset (nothing loaded): %s" % (err or out).strip())
        snap_path = p["path"] + ".applied"
        old_file = read(p["path"])
        rc, live, _ = module.run_command([nft, "-s", "-n", "list", "table"] + table)
        live = live if rc == 0 else ""
        snapshot = read(snap_path)
        file_changed = old_file != content
        live_drift = (not live) or snapshot is None or live != snapshot
        changed = file_changed or live_drift
        diff = []
        if file_changed:
            diff.append({"before_header": p["path"], "after_header": p["path"], "before": old_file or "", "after": content})
        if live_drift and not file_changed:
            diff.append({"before_header": "live table %s" % p["table"], "after_header": "as last loaded",
                         "before": live, "after": snapshot or ""})
        if changed and not module.check_mode:
            module.atomic_move(tmp, p["path"])
            tmp = None
            os.chmod(p["path"], 0o600)
            rc, out, err = module.run_command([nft, "-f", p["path"]])
            if rc != 0:
                module.fail_json(msg="nft -f failed: %s" % (err or out).strip())
            rc, live, err = module.run_command([nft, "-s", "-n", "list", "table"] + table, check_rc=True)
            with open(snap_path, "w") as f:
                f.write(live)
            os.chmod(snap_path, 0o600)
        module.exit_json(changed=changed, file_changed=file_changed, live_drift=live_drift,
                         diff=diff if module._diff else None)
    finally:
        if tmp and os.path.exists(tmp):
            os.unlink(tmp)


if __name__ == "__main__":
    main()
