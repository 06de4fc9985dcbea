"""The golden harness: every explorer kind's JavaScript against attnlib, on the kind's own golden cases.

A kind lists calls of its front-end module and what attnlib says they return
(``cls.golden_cases()``, see :class:`attnlib.explorers.base.Explorer`). The harness
composes the kind's module exactly as anywidget loads it
(``attnlib.explorers.frontend.module_source``), runs every call in ``node`` and
compares: numbers to 1e-12 (relative to the size of the number when it is above 1),
infinities as such, texts, flags and ``null`` exactly, and every key of an expected
object must be in the result.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path
from typing import Any

from attnlib.explorers import frontend, registry

TOL = 1e-12

RUNNER = r"""
import { readFileSync } from "node:fs";
const [modulePath, casesPath] = process.argv.slice(2);
const m = await import(modulePath);
const cases = JSON.parse(readFileSync(casesPath, "utf8"));
const enc = (x) => JSON.stringify(x, (k, v) => (typeof v === "number" && !Number.isFinite(v) ? String(v) : v));
const out = cases.map((c) => {
  if (typeof m[c.fn] !== "function") throw new Error(`the module exports no function ${c.fn}`);
  const got = m[c.fn](...c.args);
  return got === undefined ? null : got;
});
process.stdout.write(enc(out));
"""

_SPECIAL = {"-Infinity": -math.inf, "Infinity": math.inf, "NaN": math.nan}


def _json_safe(value: Any) -> Any:
    """Expected values and arguments as JSON: infinities as the strings the runner writes."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def differences(got: Any, expected: Any, where: str = "result") -> list[str]:
    """Where ``got`` (what node returned) differs from ``expected`` (attnlib), as readable lines."""
    if expected is None or isinstance(expected, (bool, str)):
        if isinstance(expected, str) and expected in _SPECIAL and isinstance(got, str):
            return [] if got == expected else [f"{where}: {got!r} != {expected!r}"]
        return [] if got == expected and type(got) is type(expected) else [f"{where}: {got!r} != {expected!r}"]
    if isinstance(expected, (int, float)):
        g = _SPECIAL.get(got, got) if isinstance(got, str) else got
        if isinstance(g, bool) or not isinstance(g, (int, float)):
            return [f"{where}: {got!r} is not a number (attnlib: {expected!r})"]
        if math.isinf(expected) or math.isinf(g):
            return [] if g == expected else [f"{where}: {g!r} != {expected!r}"]
        return [] if abs(g - expected) <= TOL * max(1.0, abs(expected)) else [f"{where}: {g!r} != {expected!r}"]
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return [f"{where}: {type(got).__name__} where attnlib has an object"]
        out = []
        for key, value in expected.items():
            out += [f"{where}.{key}: missing"] if key not in got else differences(got[key], value, f"{where}.{key}")
        return out
    if isinstance(expected, (list, tuple)):
        if not isinstance(got, list) or len(got) != len(expected):
            return [f"{where}: {got!r:.80} has not the {len(expected)} entries of attnlib's"]
        return [d for i, (a, b) in enumerate(zip(got, expected)) for d in differences(a, b, f"{where}[{i}]")]
    raise TypeError(f"{where}: cannot compare an expected {type(expected).__name__}")


def run_golden(kind: str, folder: Path) -> tuple[int, list[str]]:
    """Run every golden case of ``kind`` in node; return the number of cases and the differences found."""
    cases = registry.explorer_class(kind).golden_cases()
    node = shutil.which("node")
    assert node, "node is missing: the golden harness evaluates the explorers' JavaScript in node (apt-get install nodejs)"
    module = folder / f"{kind}-golden.mjs"
    module.write_text(frontend.module_source(kind), encoding="utf-8")
    runner = folder / "golden-runner.mjs"
    runner.write_text(RUNNER, encoding="utf-8")
    data = folder / f"{kind}-golden.json"
    data.write_text(json.dumps([{"fn": c["fn"], "args": _json_safe(c["args"])} for c in cases]), encoding="utf-8")
    proc = subprocess.run([node, str(runner), module.as_uri(), str(data)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    found = []
    for i, (case, got) in enumerate(zip(cases, results, strict=True)):
        found += differences(got, _json_safe(case["expected"]), f"{kind} case {i} {case['fn']}")
    return len(cases), found
