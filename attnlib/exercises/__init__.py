"""The exercises with variants, one module per chapter, and their registry.

``attnlib/exercises/chNN.py`` holds chapter NN's exercises: for each, its
``draw`` function (inputs from a seed), its ``well_posed`` check, its model
``answer`` (by-hand) or its ``calls``/``reference``/``own`` functions
(implement), and the chapter's self-checks ``check_*``; each exercise is one
:func:`~attnlib.exercises.registry.register` call at the bottom of its module.
A new chapter adds its module and one line to :data:`CHAPTERS`. The public
names stay where the chapters import them: :mod:`attnlib.variants` (draw
functions, seeds, answers) and :mod:`attnlib.checks` (the self-checks).

Examples
--------
>>> EXERCISES["9.2"].kind, EXERCISES["9.2"].function, EXERCISES["9.2"].test_id
('implement', 'my_causal_mask', 'ch09-ex2-test')
>>> "check_causal_mask" in CHECKS
True
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from types import ModuleType
from typing import Any

from . import registry
from .registry import EXERCISES, Exercise, Variant, register

#: The chapters with exercises, one module each (a new chapter adds one line here).
CHAPTERS: tuple[str, ...] = (
    "ch01",
    "ch02",
    "ch03",
    "ch04",
    "ch05",
    "ch06",
    "ch07",
    "ch08",
    "ch09",
    "ch10",
    "ch11",
    "ch12",
    "ch13",
    "ch14",
    "ch15",
    "ch16",  # issue 26: the Transformer block
    "ch17",
)

#: Chapter name -> its module.
MODULES: dict[str, ModuleType] = {name: importlib.import_module(f"{__name__}.{name}") for name in CHAPTERS}

#: Every chapter's self-checks by name (re-exported by attnlib.checks).
CHECKS: dict[str, Callable[..., Any]] = {n: getattr(m, n) for m in MODULES.values() for n in m.__all__ if n.startswith("check_")}

#: Every chapter's public draw functions by name (re-exported by attnlib.variants).
DRAWS: dict[str, Callable[..., Any]] = {n: getattr(m, n) for m in MODULES.values() for n in m.__all__ if not n.startswith("check_")}

from . import grading  # noqa: E402 (after the chapters: it reads their registry entries)

__all__ = ["CHAPTERS", "CHECKS", "DRAWS", "EXERCISES", "MODULES", "Exercise", "Variant", "grading", "register", "registry"]
