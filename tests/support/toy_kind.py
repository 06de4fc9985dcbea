"""A toy explorer kind, written into a temporary folder as one Python module and one JS module.

It is what a new kind is (attnlib.explorers' how-to): a class ``ToyScaleExplorer(Explorer,
kind="toy_scale", module=<its .js>)`` with one setting ``factor`` (1, 2 or 3) that scales a
fixed row of numbers, a constructor registered with ``@factory``, a snapshot table and golden
cases; the JS module draws a slider and the scaled row, with the math in ``toyScale``.
:func:`toy_kind` imports it (so it registers itself) and forgets it again afterwards.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

from attnlib.explorers import registry

KIND = "toy_scale"

PYTHON = """
from typing import Any

import numpy as np
from traitlets import Int, List, Float

from attnlib.explorers.base import Explorer, checked_trait
from attnlib.explorers.registry import factory
from attnlib.explorers.settings import check_choice
from attnlib.explorers.snapshot import table_html

FACTORS = (1, 2, 3)


def toy_scale(values, factor):
    return (np.asarray(values, dtype=float) * factor).tolist()


class ToyScaleExplorer(Explorer, kind="toy_scale", module=__file__.replace(".py", ".js")):
    STATE = ("factor",)
    SETTABLE = ("title", "factor")

    values = List(Float()).tag(sync=True)
    factors = List(Int()).tag(sync=True)
    factor = checked_trait(1)

    def __init__(self) -> None:
        super().__init__(title="Toy: scale a row", values=[0.5, -1.25, 2.0], factors=list(FACTORS), factor=1)

    def _check_factor(self, value, now):
        return check_choice("factor", value, FACTORS)

    @property
    def result(self):
        return self._view

    def _update(self) -> str:
        self._view = toy_scale(self.values, self.factor)
        return ""

    def _snapshot(self):
        cols = [f"v{j + 1}" for j in range(len(self.values))]
        html = table_html(np.array([self._view]), ["scaled"], cols, name="scaled", title=f"values times {self.factor}")
        return html, f"values times {self.factor}: {self._view}"

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        values = [0.5, -1.25, 2.0]
        return [{"fn": "toyScale", "args": [values, f], "expected": toy_scale(values, f)} for f in FACTORS]


@factory
def toy_scale_explorer() -> ToyScaleExplorer:
    return ToyScaleExplorer()
"""

JS = """
import { MatrixView, read, choiceSetting, focusedLayout, listen } from "./dom.js";
import { checkChoice } from "./link.js";

export function toyScale(values, factor) {
  return values.map((v) => v * factor);
}

function render({ model, el: host }) {
  const L = focusedLayout(host, model, read(model, "title", "Toy"), "toy_scale", ["factor"]);
  const choices = read(model, "factors", [1]);
  const control = choiceSetting(L, { key: "factor", label: "factor", choices, fallback: 1, cls: "attnlib-toy" });
  L.controls.prepend(control.el);
  const view = new MatrixView("scaled", L.style);
  L.show(view.table);
  function draw() {
    const values = read(model, "values", []), factor = read(model, "factor", 1);
    control.set(factor);
    const cols = values.map((_, j) => `v${j + 1}`);
    view.update([toyScale(values, factor)], { rows: ["scaled"], cols, caption: `values times ${factor}` });
    L.facts.textContent = `values times ${factor}`;
  }
  draw();
  return listen(model, ["factor", "error"], draw, () => L.status.dispose());
}

export function acceptLink(model, obj) {
  const p = checkChoice("factor", obj.factor, read(model, "factors", []));
  return p ? [{}, [p]] : [{ factor: obj.factor }, []];
}

export default { render };
"""


@contextmanager
def toy_kind(folder: Path) -> Iterator[ModuleType]:
    """Write the toy kind's two modules into ``folder``, import the Python one (it registers), yield it; then forget it."""
    py, js = folder / "toy_scale_kind.py", folder / "toy_scale_kind.js"
    py.write_text(PYTHON, encoding="utf-8")
    js.write_text(JS, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("toy_scale_kind", py)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)
        if KIND in registry.kinds():
            registry.unregister(KIND)
