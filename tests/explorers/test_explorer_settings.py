"""Edge suite of the explorers: every synced trait of every kind, given odd values by assignment and by the page.

For each explorer kind and each of its synced traits (found by introspection, so a new trait is
tested without an entry here), every value of ``ODD`` is tried twice: as ``ex.<trait> = value``
(Python) and as ``ex.set_state({trait: value})`` (what the page sends). The promises of the README
("How attnlib treats odd input"):

* a refused change raises ``ValueError`` (``InvalidSetting``) whose message starts with the
  setting's name (from the page: no exception, ``error`` says it), and leaves the state, the views,
  ``.result`` and the snapshot exactly as they were;
* an accepted change is stored in canonical form: the same value set again changes nothing, and the
  display (JSON state, snapshot, text summary) works and shows no NaN or inf.

Every state trait (one the page may write) needs a good value in ``GOOD`` so that the observer check
(an observer reads the new ``ex.result``) runs for it; a state trait without one fails the suite.
"""

from __future__ import annotations

import json
import re
import warnings
from collections import Counter

import numpy as np
import pytest
from support.odd_values import EVERY

from attnlib import explorers, induction
from attnlib.explorers import registry

#: The attributes in which an explorer keeps what it computed from its state.
_VIEW_ATTRS = ("_views", "_view", "_results", "_similarity", "_result")


def _same(old, new) -> bool:
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        return isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.dtype == new.dtype and np.array_equal(old, new)
    try:
        return type(old) is type(new) and bool(old == new)
    except Exception:  # noqa: BLE001
        return False


#: How many traits and attempts the suite covered (read by test_write_the_counts).
COUNTS: Counter[str] = Counter()

#: Every registered kind, built with its class's defaults (a new kind is covered by registering).
KINDS = {kind: registry.explorer_class(kind) for kind in registry.kinds()}

#: Odd values every trait is given: every value of the one table (support/odd_values.py): None, bools, numbers as
#: text, non-integral and non-finite numbers, complex, containers, and matrices of text, booleans, complex numbers,
#: numpy.ma, NaN and 1e308.
ODD = EVERY

#: A good new value for every state trait of every kind (different from the explorer's start).
GOOD = {
    "attention": {
        "W_Q": [[2, 0], [0, 1]],
        "W_K": [[1, 0], [1, 1]],
        "W_V": [[1, 0], [1, 1]],
        "dk": 0,
        "mask_mode": "causal",
        "mask_cells": [[True, False, False], [True, True, False], [True, True, True]],
    },
    "scaling": {"dk": 64},
    "scale_comparison": {"length": 3.0},
    "head_count": {"n_heads": 4},
    "positional": {"position": 5, "d_model": 8},
    "training": {"step": 100},
    "blocks": {"n": 1024, "block_size": 256, "dtype": "bfloat16", "causal": True, "step": 2},
    "induction": {"text": "a b c a b", "mode": "letters"},
    "live_training": {"lr": 0.03, "n_layers": 1, "n_heads": 2, "d_model": 16, "seed": 5},
}
# what the page sends back at a pause (the default setting's starting weights, as lists of rows)
GOOD["live_training"]["trained"] = {
    "step": 1,
    "params": {k: v.tolist() for k, v in induction.InductionModel(32, 48, 32, 1, 2).init(induction.PortableRandom(0)).items()},
}

#: Changes made before a good value is tried (the cells of the mask are used only by a custom mask).
SETUP = {("attention", "mask_cells"): {"mask_mode": "custom"}}

#: The name a refusal of a trait starts with (the setting the reader knows).
SETTING = {"dk": "d_k", "mask_mode": "mask", "mask_cells": "mask"}


def _model(ex) -> dict:
    """What a refused change must leave as it was: every synced value and the computed views (the same objects)."""
    return {
        "values": {k: ex._trait_values.get(k) for k in ex._own_names() if k != "error"},
        "views": {k: ex.__dict__[k] for k in _VIEW_ATTRS if k in ex.__dict__},
    }


def _unchanged(before: dict, ex) -> bool:
    now = _model(ex)
    same_values = all(_same(v, now["values"][k]) for k, v in before["values"].items())
    same_views = before["views"].keys() == now["views"].keys() and all(now["views"][k] is v for k, v in before["views"].items())
    return same_values and same_views


def _display_is_clean(ex) -> None:
    data, _ = ex._repr_mimebundle_()
    json.dumps(ex.state_dict(), allow_nan=False)  # raises for NaN or inf anywhere in the state
    text = data["text/plain"] + " " + ex.snapshot_html()
    assert not re.search(r"(?<![\w-])(nan|inf)(?![\w])", text), f"{ex.KIND}: the display shows a non-finite number"


def _refusal_names(text: str, trait: str) -> bool:
    return text.startswith(SETTING.get(trait, trait)) or text.startswith(trait)


def _try(ex, trait: str, value, via: str) -> tuple[bool, str]:
    """Make one change; return (refused, message)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if via == "python":
            try:
                setattr(ex, trait, value)
            except ValueError as exc:
                assert isinstance(exc, explorers.InvalidSetting), f"{ex.KIND}.{trait}: {type(exc).__name__}"
                return True, str(exc)
            return False, ""
        ex._trait_values["error"] = ""  # start from no report (quietly), so that the page's refusal is the one read
        ex.set_state({trait: value})  # never raises into the comm handler
        refused = "must be" in ex.error or "cannot be changed from the page" in ex.error
        return refused, ex.error


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_trait_refuses_odd_values_or_keeps_them_canonical(kind):
    ex = KINDS[kind]()
    for trait in ex._own_names():
        COUNTS["traits"] += 1
        checked_snapshot = False
        for via in ("python", "page"):
            for value in ODD:
                COUNTS["attempts"] += 1
                before = _model(ex)
                snap = None if checked_snapshot else (ex.snapshot_html(), ex.summary_text())
                refused, text = _try(ex, trait, value, via)
                if refused:
                    where = f"{kind}.{trait} = {value!r} ({via})"
                    if via == "python" or trait in ex.STATE:
                        assert _refusal_names(text, trait), f"{where}: the refusal does not start with the setting's name: {text}"
                    else:
                        assert f"{trait} cannot be changed from the page" in text, f"{where}: {text}"
                    assert _unchanged(before, ex), f"{where}: a refused change changed the model or its views"
                    if snap is not None:
                        assert (ex.snapshot_html(), ex.summary_text()) == snap, f"{where}: a refused change changed the snapshot"
                        checked_snapshot = True
                    continue
                # accepted: canonical, idempotent, displayable
                stored = ex._trait_values[trait]
                after = _model(ex)
                setattr(ex, trait, stored)
                assert _unchanged(after, ex), f"{kind}.{trait} = {value!r}: the stored value {stored!r} is not canonical"
                _display_is_clean(ex)
                ex = KINDS[kind]()  # back to the start for the next value
        _display_is_clean(ex)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_observers_see_the_new_result_from_python_and_from_the_page(kind):
    ex = KINDS[kind]()
    missing = [t for t in ex.STATE if t not in GOOD[kind]]
    assert not missing, f"add a good value for these state traits of {kind} to GOOD: {missing}"
    for trait, value in GOOD[kind].items():
        for via in ("python", "page"):
            ex = KINDS[kind]()
            ex.set_state(SETUP.get((kind, trait), {}))
            seen = []
            ex.observe(lambda change, ex=ex, seen=seen: seen.append(repr(ex.result)), names=[trait])
            if via == "python":
                setattr(ex, trait, value)
            else:
                ex.set_state({trait: value})
            assert ex.error == "", f"{kind}.{trait}: {ex.error}"
            assert seen == [repr(ex.result)], f"{kind}.{trait} ({via}): an observer read a stale result"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_batch_from_the_page_is_all_or_nothing(kind):
    ex = KINDS[kind]()
    good = GOOD[kind]
    first = next(iter(good))
    before = _model(ex)
    ex.set_state({**good, first: None})
    assert ex.error.startswith(SETTING.get(first, first)), ex.error
    assert _unchanged(before, ex)


def test_write_the_counts():
    """Runs last in this file: how many traits and attempts the suite covered."""
    assert COUNTS["traits"] >= sum(len(KINDS[k]()._own_names()) for k in KINDS)
    print(f"explorer settings: {COUNTS['traits']} traits, {COUNTS['attempts']} attempts")
