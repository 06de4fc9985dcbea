"""The completeness guard of the edge suites, derived from the package: no public module or callable escapes.

attnlib's public modules and callables are found by walking the package (``support/public_api.py``:
every module without a ``_`` in its dotted name, every function and class its ``__all__`` lists and
that it defines, every public method of those classes). Each must have an *entry*:

* a call with odd values in an edge suite: ``SPECS`` of ``tests/unit/test_edges.py`` (hypothesis) or
  of ``tests/unit/test_edges_modules.py`` (every argument by kind), the self-checks' suite
  (``ALL_CHECKS`` of ``tests/exercises/test_checks_misbehaving.py``), or the explorer settings suite
  (``tests/explorers/test_explorer_settings.py``: every trait of every kind, through ``set_state``
  and ``set_trait``, the one path of every change);
* or a named place below that says why no call is due: a record that attnlib fills, an exception
  class, or a piece of the explorers' plumbing that only ever receives checked settings (each
  listed by name, with the suite that holds it to attnlib).

A new module or public callable without an entry fails ``test_every_public_callable_has_an_entry``;
an entry that names nothing public any more fails ``test_no_entry_is_stale``.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

from support.public_api import label_of, modules_without_all, public_callables, public_modules, resolve

TESTS = Path(__file__).resolve().parents[1]


def _suite(relative: str) -> Any:
    """A test module by path, imported once (under pytest's own name for it, so a collected module is reused)."""
    path = TESTS / relative
    name = path.stem
    module = sys.modules.get(name)
    if module is not None and Path(getattr(module, "__file__", "")).resolve() == path:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def resolve_label(label: str) -> Any:
    """The object an entry's label names: a path below attnlib (``core.softmax``), or one that starts with a
    module's last name (``registry.register``, ``grading.judge (implement)``)."""
    path = label.split(" (")[0]
    found = resolve(path)
    if found is not None:
        return found
    head, *rest = path.split(".")
    for module in public_modules():
        if module.__name__.rsplit(".", 1)[-1] != head:
            continue
        obj: Any = module
        for attr in rest:
            obj = getattr(obj, attr, None)
            if obj is None:
                break
        if obj is not None:
            return obj
    return None


def canonical(obj: Any) -> str | None:
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    return label_of(module, qualname) if module and qualname else None


#: Tried for every trait of every registered kind, from Python and from the page (tests/explorers/test_explorer_settings.py).
EXPLORER_SETTINGS_SUITE = {"explorers.base.Explorer.set_state", "explorers.base.Explorer.set_trait"}

#: Exception classes: raised by attnlib, never called with a reader's values.
EXCEPTIONS = {"checks.CheckFailed", "explorers.base.InvalidSetting", "explorers.settings.SettingError"}

#: The explorers' plumbing, by module: it receives settings its kind has already checked (or no input at all), and
#: the suite named with it holds it to attnlib. Listed name by name, so that a new function is classified, not missed.
EXPLORER_PLUMBING = {
    # the base class every kind extends (each kind has its entries) and the trait factories of a kind's class statement
    "explorers.base": ("tests/explorers/test_explorer_registry.py", "Explorer checked_trait matrix_trait"),
    # the front end's JavaScript: files of the package, no reader input
    "explorers.frontend": ("tests/explorers/test_frontend_shape.py", "compose css_source module_files module_source write_modules"),
    # registration of kinds (a kind author's API, not a reader's)
    "explorers.registry": (
        "tests/explorers/test_explorer_registry.py",
        "explorer_class factories factory kinds load_builtin_kinds module_path register unregister",
    ),
    # the checks every setting goes through: each is tried with every odd value through the traits that use it
    "explorers.settings": (
        "tests/explorers/test_explorer_settings.py",
        "check_X check_choice check_flag check_flag_matrix check_int_range check_names check_real_range check_seed check_text "
        "check_tokens float_matrix frozen same_shape shown",
    ),
    # the static HTML of numbers attnlib computed (matrix_html, which a chapter calls, has its own entry)
    "explorers.snapshot": (
        "tests/explorers/test_explorers.py",
        "embed_html esc facts flex fmt matrix_text state_json style_data table_html",
    ),
    # each kind's checks (tried through its traits) and its views of checked settings (held to the JavaScript by the golden tests)
    "explorers.kinds.attention": (
        "tests/explorers/test_explorer_golden.py",
        "AttentionViews attention_views check_dk check_mask_cells check_mask_mode check_weight dk_choices_for effective_mask "
        "no_key_message overflow_message parse_mask presets random_draws",
    ),
    "explorers.kinds.blocks": ("tests/explorers/test_explorer_golden.py", "block_memory_table check_block_step check_dtype"),
    "explorers.kinds.head_count": ("tests/explorers/test_explorer_golden.py", "head_count_data head_count_result"),
    "explorers.kinds.induction": ("tests/explorers/test_explorer_golden.py", "induction_data induction_view"),
    "explorers.kinds.live_training": ("tests/explorers/test_explorer_golden.py", "check_trained live_probe live_views"),
    "explorers.kinds.positional": ("tests/explorers/test_explorer_golden.py", "check_position positional_data positional_similarity"),
    "explorers.kinds.scale_comparison": ("tests/explorers/test_explorer_golden.py", "check_length stretched_attention"),
    "explorers.kinds.scaling": ("tests/explorers/test_explorer_golden.py", "query_keys scaling_samples scaling_view"),
    "explorers.kinds.training": ("tests/explorers/test_explorer_golden.py", "check_step training_data training_view"),
}

#: The homework engine's building blocks, by module: the chapters' checks build their cases with them (the student's
#: function and result reach them only through ``call_student`` and ``judge_value``, which never raise on those); the
#: suite named with them tries each with odd values.
HOMEWORK_ENGINE = {
    "exercises.cases": (
        "tests/exercises/test_engine.py",
        "cases_of check_rng column_softmax judge_call judge_value merge_messages own_case run_cases same_values "
        "with_self_check_raises",
    ),
    "exercises.sandbox": ("tests/exercises/test_engine.py", "exception_text safe_text where_student_code_failed"),
}

#: Modules of the package that define no public callable of their own.
WITHOUT_CALLABLES = {
    "attnlib": "re-exports the most used functions of attnlib.core",
    "attnlib.checks.runner": "the old name of the homework engine's sandbox and results (re-exports them)",
    "attnlib.exercises": "the homework registry's tables (CHAPTERS, CHECKS, DRAWS, EXERCISES), built from its chapter modules",
    "attnlib.explorers": "re-exports the explorers' classes and constructors from their kind modules",
    "attnlib.explorers.kinds": "the package of the kind modules",
    "attnlib.widgets": "the deprecated old name of attnlib.explorers (forwards every name with a DeprecationWarning)",
    "attnlib.variants": "re-exports the homework registry's functions",
}
#: Modules without ``__all__``: their public names are then found by what they define.
WITHOUT_ALL = {"attnlib.explorers.kinds", "attnlib.widgets"}


def _is_record(obj: Any) -> bool:
    """A dataclass or named tuple that attnlib fills with its results (the functions that take one check it by type)."""
    return inspect.isclass(obj) and (dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields")))


def _entries() -> dict[str, str]:
    """The canonical label of every callable that has an entry, and where the entry is."""
    found: dict[str, str] = {}
    suites = {
        "tests/unit/test_edges.py": [spec[0] for spec in _suite("unit/test_edges.py").SPECS],
        "tests/unit/test_edges_modules.py": list(_suite("unit/test_edges_modules.py").SPECS),
    }
    for where, labels in suites.items():
        for label in labels:
            obj = resolve_label(label)
            assert obj is not None, f"{where}: the entry {label!r} names nothing in attnlib"
            if not canonical(obj).startswith("_"):  # (an entry of a re-exported helper of _validate: variants.as_seed)
                found[canonical(obj)] = where
    for check, _good in _suite("exercises/test_checks_misbehaving.py").ALL_CHECKS:
        found[canonical(check)] = "tests/exercises/test_checks_misbehaving.py"
    for label in EXPLORER_SETTINGS_SUITE:
        found[label] = "tests/explorers/test_explorer_settings.py"
    for label in EXCEPTIONS:
        found[label] = "an exception class"
    for module, (where, names) in EXPLORER_PLUMBING.items():
        for name in names.split():
            found[f"{module}.{name}"] = f"explorer plumbing ({where})"
    for module, (where, names) in HOMEWORK_ENGINE.items():
        for name in names.split():
            found[f"{module}.{name}"] = f"the homework engine ({where})"
    return found


def test_every_public_callable_has_an_entry():
    entries = _entries()
    missing = []
    for label, obj in public_callables():
        if label in entries:
            continue
        if _is_record(obj):
            continue  # a record: see _is_record (its own methods are listed like any function)
        missing.append(label)
    assert not missing, (
        "a public callable of attnlib has no entry in an edge suite: give it one in tests/unit/test_edges_modules.py's SPECS "
        f"(or tests/unit/test_edges.py's): {missing}"
    )


def test_no_entry_is_stale():
    public = {label for label, _ in public_callables()}
    stale = [label for label in _entries() if label not in public]
    assert not stale, f"these entries name no public callable of attnlib any more: {stale}"
    gone = [where for where, _ in EXPLORER_PLUMBING.values() if not (TESTS.parent / where).exists()]
    assert not gone, f"EXPLORER_PLUMBING names suites that do not exist: {gone}"


def test_every_public_module_is_walked_and_has_callables_or_a_reason():
    modules = {m.__name__ for m in public_modules()}
    assert {"attnlib.experiments", "attnlib.exercises.grading", "attnlib.explorers.kinds.attention"} <= modules  # the walk reaches them
    with_callables = {label_of(obj.__module__, "x").rsplit(".", 1)[0] for _, obj in public_callables()}
    empty = sorted(m for m in modules if label_of(m, "x").rsplit(".", 1)[0] not in with_callables and m not in WITHOUT_CALLABLES)
    assert not empty, f"these public modules define no public callable: name them in WITHOUT_CALLABLES with the reason: {empty}"
    assert set(modules_without_all()) == WITHOUT_ALL, f"every public module lists its public names in __all__: {modules_without_all()}"
    assert set(WITHOUT_CALLABLES) <= modules
