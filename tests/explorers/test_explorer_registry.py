"""The registry of explorer kinds: a new kind (one Python module, one JS module) is registered everywhere.

A toy kind is defined in a temporary module (``support.toy_kind``); importing it must be enough for
the package's constructors and ``__all__``, ``frontend.KINDS``, the files the web book serves and
the list of kinds in the served ``host.js``, a snapshot of its own, and the golden harness. The page
test (mounting it on a static page in chromium) is ``tests/web/test_web_explorers_fit.py``.
"""

from __future__ import annotations

import re

import pytest
from support.golden import run_golden
from support.toy_kind import KIND, toy_kind

import attnlib.explorers as explorers
from attnlib.explorers import Explorer, frontend, registry


def test_every_list_of_kinds_is_the_registry():
    kinds = registry.kinds()
    assert frontend.KINDS == kinds and len(kinds) == 9  # seven of issue 21, issue 27's induction, issue 50's live training
    for kind in kinds:
        cls = registry.explorer_class(kind)
        assert cls.KIND == kind and cls.__name__ in explorers.__all__ and getattr(explorers, cls.__name__) is cls
        assert cls._esm == frontend.module_source(kind) and f"{kind}.js" in frontend.module_files()
    assert set(registry.factories()) <= set(explorers.__all__)
    assert explorers.__all__ == sorted(explorers.__all__)
    host = frontend.host_source()
    assert re.search(r"^const KINDS = \[(.*)\];", host, re.M).group(1) == ", ".join(f'"{k}"' for k in kinds)


def test_a_toy_kind_in_a_temporary_module_is_registered_everywhere(tmp_path):
    with toy_kind(tmp_path) as module:
        assert KIND in registry.kinds() and KIND in frontend.KINDS
        assert "ToyScaleExplorer" in explorers.__all__ and "toy_scale_explorer" in explorers.__all__
        ex = explorers.toy_scale_explorer()
        assert isinstance(ex, module.ToyScaleExplorer) and ex.kind == KIND
        # the shared machinery: the checked path, a refusal naming the setting, the display bundle
        ex.factor = 3
        assert ex.result == [1.5, -3.75, 6.0]
        with pytest.raises(ValueError, match=r"^factor must be one of \[1, 2, 3\]; got 4"):
            ex.factor = 4
        assert ex.factor == 3 and ex.result == [1.5, -3.75, 6.0]
        data, _ = ex._repr_mimebundle_()
        assert f'data-attnlib-kind="{KIND}"' in data["text/html"] and "6.0000" in data["text/html"]
        assert data["text/plain"] == "values times 3: [1.5, -3.75, 6.0]"
        # the front end: its module composed with the shared ones, served under its kind's name, listed in host.js
        assert "export function toyScale" in ex._esm and 'from "./' not in ex._esm
        assert f"{KIND}.js" in frontend.module_files()
        written = {p.name for p in frontend.write_modules(tmp_path / "site")}
        assert f"{KIND}.js" in written and f'"{KIND}"' in (tmp_path / "site" / "host.js").read_text()
        # the golden harness covers it: its cases pass, and a wrong expectation is caught
        count, found = run_golden(KIND, tmp_path)
        assert count == 3 and not found
        original = module.ToyScaleExplorer.golden_cases
        module.ToyScaleExplorer.golden_cases = classmethod(lambda cls: [{"fn": "toyScale", "args": [[1.0], 2], "expected": [2.5]}])
        try:
            assert run_golden(KIND, tmp_path)[1]
        finally:
            module.ToyScaleExplorer.golden_cases = original
    assert KIND not in registry.kinds() and "toy_scale_explorer" not in explorers.__all__


def test_a_kind_must_bring_its_parts():
    with pytest.raises(TypeError, match="must define _snapshot"):

        class NoSnapshot(Explorer, kind="no_snapshot", module="scaling.js"):
            def _update(self) -> str:
                return ""

            @classmethod
            def golden_cases(cls):
                return []

    with pytest.raises(TypeError, match="both kind= and module="):

        class NoModule(Explorer, kind="no_module"):
            pass

    with pytest.raises(ValueError, match="already registered"):

        class Twice(type(explorers.scaling_explorer())):  # a subclass may not take a kind's name
            pass

        registry.register(Twice, "scaling", "scaling.js")
    assert registry.explorer_class("scaling").__name__ == "ScalingExplorer"
    with pytest.raises(ValueError, match="kind must be one of"):
        frontend.module_source("no_such_kind")
