"""Metric names in PromQL expressions: what dashboards and alert rules read, to check against what is exported.

Plain Python, no parser: strings, label matchers, ranges and grouping clauses are removed first; what is left that
looks like a name and is not a function, keyword or number is a metric. promtool checks the syntax itself.
"""
from __future__ import annotations

import re

KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset",
    "sum", "min", "max", "avg", "count", "stddev", "stdvar", "topk", "bottomk", "quantile", "count_values", "group",
    "inf", "nan", "atan2",
}
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_GROUPING = re.compile(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
_NAME = re.compile(r"(?<![\w:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![\w:])\s*(\()?")


def metric_names(expr: str) -> set[str]:
    """{'up', 'node_network_up'} from 'sum by (host) (up) * on (host) node_network_up{device="x"}'."""
    s = _STRING.sub('""', expr)
    s = re.sub(r"\{[^}]*\}", " ", s)
    s = re.sub(r"\[[^\]]*\]", " ", s)
    s = _GROUPING.sub(" ", s)
    names = set()
    for m in _NAME.finditer(s):
        name, call = m.group(1), m.group(2)
        if call or name.lower() in KEYWORDS or re.fullmatch(r"\d+[smhdwy]", name):
            continue
        names.add(name)
    return names
