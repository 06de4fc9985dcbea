"""The training explorer (chapter 14): a slider over the recorded steps of the previous-token training run.

:func:`attnlib.experiments.learn_previous_token` trains and records the model every
10 steps; :func:`recorded_steps` shapes that run into what the page shows (plain
lists), once per seed. Front end: ``static/training.js``.

Examples
--------
>>> ex = training_explorer()
>>> ex.step = 300
>>> round(ex.result["previous"], 3), ex.result["weights"].shape
(0.969, (6, 6))
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from traitlets import Float, Int, List, Unicode

from ..._validate import as_int, as_seed
from ...experiments import learn_previous_token, previous_token_probe
from ...training import Task, TrainingRun, relation_mass
from ..base import Explorer, checked_trait
from ..registry import factory
from ..settings import check_choice, check_seed
from ..snapshot import facts, flex, fmt, matrix_text, table_html

__all__ = [
    "RECORD_STEPS",
    "TABLE_DECIMALS",
    "TrainingExplorer",
    "check_step",
    "recorded_steps",
    "training_data",
    "training_explorer",
    "training_view",
]

#: Decimal places of the two tables, as in the chapter's figures of the same maps, so that an 8 x 8 table fits a phone's width.
TABLE_DECIMALS = 2
#: The steps recorded for the explorer (from the chapter's previous-token run).
RECORD_STEPS = tuple(range(0, 301, 10))


def recorded_steps(run: TrainingRun, probe: Task, sequence: int = 0, head: int = 0) -> dict[str, Any]:
    """The recorded steps of a run as plain lists: what the training explorer shows.

    Returns ``steps``, ``losses`` (probe loss at each step), ``previous`` (mean
    weight on the previous token over the whole probe batch, see
    :func:`attnlib.training.relation_mass`), ``weights`` (the attention map of
    one probe sequence at each step), ``bilinear`` (``W_Q W_K^T`` at each step),
    ``tokens`` (labels of that sequence's rows) and ``features`` (labels of the
    rows and columns of ``W_Q W_K^T``).

    Raises
    ------
    ValueError
        ``run`` or ``probe`` is not the object it names (made by attnlib); ``sequence`` or ``head`` is not an integer in
        its range. The message names the argument.

    Examples
    --------
    >>> from attnlib.training import Adam, AttentionModel, init_params, previous_token_task, train
    >>> probe = previous_token_task(1, length=3, n_symbols=2, d_pos=2)
    >>> p = init_params({"W_Q": (4, 2), "W_K": (4, 2), "W_V": (4, 2)}, 0.5, seed=0)
    >>> run = train(AttentionModel(), p, Adam(0.05), lambda r: previous_token_task(2, 3, 2, 2, r), 4, probe, (0, 4))
    >>> d = recorded_steps(run, probe)
    >>> d["steps"], len(d["weights"][0]), len(d["bilinear"][0])
    ([0, 4], 3, 4)
    """
    if not isinstance(run, TrainingRun):
        raise ValueError(f"run must be a TrainingRun (what train returns); got {type(run).__name__}")
    if not isinstance(probe, Task):
        raise ValueError(f"probe must be a Task; got {type(probe).__name__}")
    if not run.snapshots:
        raise ValueError("run has no recorded steps; pass record_steps to train()")
    sequence = as_int("sequence", sequence, minimum=0, what="a sequence index of the probe batch")
    head = as_int("head", head, minimum=0, what="a head index")
    n_heads = 1 if run.snapshots[0].weights.ndim == 2 else run.snapshots[0].weights.shape[0]
    if head >= n_heads:
        raise ValueError(f"head must be below {n_heads} (the run's heads); got {head}")
    if sequence >= probe.n_sequences:
        raise ValueError(f"sequence must be below {probe.n_sequences} (the probe's sequences); got {sequence}")
    rows = slice(sequence * probe.length, (sequence + 1) * probe.length)
    out: dict[str, Any] = {"steps": [], "losses": [], "previous": [], "weights": [], "bilinear": []}
    for snap in run.snapshots:
        w = snap.weights if snap.weights.ndim == 2 else snap.weights[head]
        out["steps"].append(snap.step)
        out["losses"].append(float(snap.loss))
        if "previous" in probe.relations:
            out["previous"].append(float(relation_mass(snap.weights, probe, "previous")[head if snap.weights.ndim == 3 else 0]))
        out["weights"].append(w[rows, rows].tolist())
        out["bilinear"].append((snap.params["W_Q"] @ snap.params["W_K"].T).tolist())
    out["tokens"] = [f"t{t}" for t in range(probe.length)]
    out["features"] = list(probe.features)
    return out


def training_data(seed: int = 0) -> dict[str, Any]:
    """The recorded steps of the chapter's previous-token run (trained with ``seed``) as plain lists.

    Recording does not change training, so the trajectory is the chapter's.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The message
        names the argument.

    Examples
    --------
    >>> d = training_data()
    >>> d["steps"][:3], len(d["weights"][0]), len(d["bilinear"][0])
    ([0, 10, 20], 6, 8)
    """
    return copy.deepcopy(_training_data(as_seed("seed", seed)))  # checked first: the cache is keyed by equality


@functools.cache
def _training_data(seed: int) -> dict[str, Any]:
    # one training run (well under a second); callers get a copy
    run = learn_previous_token(seed=seed, record_steps=RECORD_STEPS)
    return recorded_steps(run, previous_token_probe())


def check_step(value: Any, steps: Sequence[int]) -> int:
    """A recorded training step.

    Raises
    ------
    ValueError
        ``value`` is not one of the recorded ``steps``; the message (of a ``SettingError``, a ``ValueError``) starts
        with the setting's name.

    Examples
    --------
    >>> check_step(20, [0, 10, 20])
    20
    """
    return check_choice("step", value, steps)


def training_view(data: Mapping[str, Any], step: int) -> dict[str, Any]:
    """What the explorer shows at ``step``: its loss, weight on the previous token, attention map and ``W_Q W_K^T``.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    k = list(data["steps"]).index(check_step(step, data["steps"]))
    return {
        "step": int(step),
        "loss": float(data["losses"][k]),
        "previous": float(data["previous"][k]),
        "weights": np.array(data["weights"][k], dtype=float),
        "bilinear": np.array(data["bilinear"][k], dtype=float),
    }


def training_snapshot(view: Mapping[str, Any], last_step: int, tokens: Sequence[str], features: Sequence[str]) -> tuple[str, str]:
    """The two tables (attention map, ``W_Q W_K^T``) and the text summary."""
    toks, feats = list(tokens), list(features)
    text = (
        f"Step {view['step']} of {last_step}: loss {fmt(view['loss'])} on the held-out batch; "
        f"mean weight on the previous token {fmt(view['previous'])}."
    )
    tables = flex(
        table_html(
            view["weights"],
            toks,
            toks,
            name="weights",
            title=f"attention weights of one held-out sequence at step {view['step']}",
            vmin=0.0,
            vmax=1.0,
            row_sums=True,
        ),  # fmt: skip
        table_html(view["bilinear"], feats, feats, name="bilinear", title="W_Q W_K\u1d40 (rows: query features, columns: key features)"),
    )
    summary = "\n".join(
        [
            text,
            "attention weights:",
            matrix_text(view["weights"], toks, decimals=TABLE_DECIMALS),
            "W_Q W_K\u1d40:",
            matrix_text(view["bilinear"], feats, decimals=TABLE_DECIMALS),
        ]
    )
    return facts(text) + tables, summary


_DATA = ("steps", "losses", "previous", "weights", "bilinear")


class TrainingExplorer(Explorer, kind="training", module="training.js"):
    """Chapter 14: a slider over the recorded steps of a training run.

    Each step shows the attention map of one held-out sequence, the learned
    ``W_Q W_K^T`` and the loss; the states are computed once by attnlib
    (:func:`training_data`) and handed to the page as data.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``). The error is
        an ``InvalidSetting`` (a ``ValueError``) whose message starts with the argument's name.
    """

    STATE = ("step",)
    SETTABLE = ("title", "step")

    steps = List(Int()).tag(sync=True)
    losses = List(Float()).tag(sync=True)
    previous = List(Float()).tag(sync=True)
    weights = List().tag(sync=True)
    bilinear = List().tag(sync=True)
    tokens = List(Unicode()).tag(sync=True)
    features = List(Unicode()).tag(sync=True)
    decimals = Int(TABLE_DECIMALS).tag(sync=True)
    step = checked_trait(0)

    def __init__(self, seed: int = 0) -> None:
        # checked before the cache of training_data is read (a list is unhashable; 0j would equal a cached 0.0)
        data = training_data(self._checked(check_seed, "seed", seed))
        super().__init__(title="Training: attention learns to look one token back", step=0, **data)

    def _check_step(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_step(value, self.steps)

    @property
    def result(self) -> dict[str, Any]:
        """The shown step: ``step``, ``loss``, ``previous``, ``weights`` and ``bilinear`` (arrays)."""
        return self._view

    def _update(self) -> str:
        self._view = training_view({k: getattr(self, k) for k in _DATA}, self.step)
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return training_snapshot(self._view, self.steps[-1], self.tokens, self.features)

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``trainingView`` at some recorded steps, the last one, and a step that was not recorded (``null``)."""
        data = training_data()
        cases = [{"fn": "trainingView", "args": [data, 5], "expected": None}]
        for s in sorted({*data["steps"][::6], data["steps"][-1]}):
            ref = training_view(data, s)
            expected = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in ref.items()}
            cases.append({"fn": "trainingView", "args": [data, s], "expected": expected})
        return cases


@factory
def training_explorer() -> TrainingExplorer:
    """Chapter 14: a slider over the recorded steps of the previous-token training run.

    Examples
    --------
    >>> ex = training_explorer()
    >>> ex.step = 300
    >>> round(ex.result["previous"], 3), ex.result["weights"].shape
    (0.969, (6, 6))
    """
    return TrainingExplorer()
