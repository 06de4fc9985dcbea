"""The live training explorer (chapter 17): the reader trains the attention-only model of :mod:`attnlib.induction` in the page.

The page trains (``static/live_training.js``, in a Web Worker): it draws the starting weights and
the batches from :class:`attnlib.induction.PortableRandom`, as :func:`attnlib.induction.train_induction`
does when given one, so every step equals attnlib's training (the golden tests hold the JavaScript
to it). Python checks the settings and shows what it can compute at once: the untrained model's
views (:func:`live_views` after 0 steps), and the views after a few steps for the golden cases.
As in the chapter, the learning rate falls linearly from the reader's rate to the book's
``final_lr`` over the book's 1200 steps (and stays there if the reader trains on).

Examples
--------
>>> ex = live_training_explorer()
>>> ex.n_layers = 1
>>> sorted(ex.result)[:3], ex.result["step"]
(['copying', 'drop', 'first'], 0)
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from traitlets import Dict, Float, Int, List

from ...induction import (
    BOOK,
    InductionModel,
    PortableRandom,
    TokenBatch,
    copying_score,
    drop_step,
    half_losses,
    prefix_matching_score,
    previous_token_score,
    repeated_tokens,
    token_letters,
    token_ov_circuit,
    train_induction,
)
from ...training import Adam
from ..base import Explorer, checked_trait
from ..registry import factory
from ..settings import SettingError, check_choice, check_int_range, check_real_range, float_matrix, shown
from ..snapshot import facts, flex, fmt, table_html

__all__ = [
    "GOAL",
    "HEAD_CHOICES",
    "HEAD_SCORE",
    "LAYER_CHOICES",
    "LR_CHOICES",
    "MAX_SEED",
    "PROBE",
    "SCHEDULE_RUNS",
    "WIDTH_CHOICES",
    "LiveTrainingExplorer",
    "check_trained",
    "head_formed",
    "live_probe",
    "live_training_explorer",
    "live_views",
]

#: The learning rates the reader can choose.
LR_CHOICES = (0.002, 0.005, 0.01, 0.015, 0.02, 0.03)
LAYER_CHOICES = (1, 2)
HEAD_CHOICES = (1, 2, 4)
WIDTH_CHOICES = (8, 16, 32)
MAX_SEED = 99
#: The induction head has formed when the held-out repeated half's loss is below GOAL ln 32 (the chapter's goal) and
#: layer 1's previous-token and the last layer's prefix-matching scores are above HEAD_SCORE (most of a row's weight).
GOAL = 0.1
HEAD_SCORE = 0.5
#: The page's whole schedule from its default start, seed 0, width 32 and 1 head per layer, at every rate with
#: 2 layers and at 0.015 with 1 layer. Each row is ``live_views(settings, 1200, schedule=1200)`` to four decimals.
#: A run takes about 5 s of CPU, too long for the chapter to make seven of them, so it prints these and the
#: tests (tests/explorers/test_live_training_schedule.py) make every run again and compare.
#: ``drop`` is the step of the drop (-1: none within the schedule), ``second`` the held-out repeated half's
#: loss at the end, ``previous`` and ``prefix`` the best head's previous-token and prefix-matching scores.
SCHEDULE_RUNS = (
    {"lr": 0.002, "n_layers": 2, "drop": -1, "second": 3.1309, "previous": 0.2179, "prefix": 0.2018},
    {"lr": 0.005, "n_layers": 2, "drop": 844, "second": 0.6486, "previous": 0.7372, "prefix": 0.9035},
    {"lr": 0.01, "n_layers": 2, "drop": 470, "second": 0.2613, "previous": 0.9153, "prefix": 0.9252},
    {"lr": 0.015, "n_layers": 2, "drop": 433, "second": 0.2635, "previous": 0.9288, "prefix": 0.9178},
    {"lr": 0.02, "n_layers": 2, "drop": 585, "second": 0.4146, "previous": 0.9799, "prefix": 0.9835},
    {"lr": 0.03, "n_layers": 2, "drop": 810, "second": 0.4931, "previous": 0.9721, "prefix": 0.9823},
    {"lr": 0.015, "n_layers": 1, "drop": -1, "second": 2.6815, "previous": 0.1872, "prefix": 0.2954},
)
#: The held-out batch the page scores the model on; its sequences start at position 0 (drawn from PortableRandom(seed)).
PROBE = {"n_sequences": 16, "seed": BOOK["probe_seed"], "map_half": 6}


@functools.cache
def live_probe() -> tuple[TokenBatch, TokenBatch]:
    """The held-out batch of the scores (16 sequences, the book's half lengths) and the one sequence of the maps (half length 6).

    Both are drawn from :class:`attnlib.induction.PortableRandom` (seeded with the book's probe seed), so
    that the page draws the same ones.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    rng = PortableRandom(PROBE["seed"])
    scores = repeated_tokens(PROBE["n_sequences"], BOOK["vocab_size"], BOOK["half_lengths"], seed=rng)
    one = repeated_tokens(1, BOOK["vocab_size"], PROBE["map_half"], seed=rng)
    return scores, one


def _page_data(n_steps: int = BOOK["n_steps"]) -> dict[str, Any]:
    """What the page trains on and scores with: the book's data settings and schedule, the held-out batch and the map's sequence."""
    probe, one = live_probe()
    return {
        "n_steps": n_steps,
        "final_lr": BOOK["final_lr"],
        "vocab": BOOK["vocab_size"],
        "n_positions": BOOK["n_positions"],
        "half_lengths": list(BOOK["half_lengths"]),
        "n_sequences": BOOK["n_sequences"],
        "probe": {
            "tokens": [probe.tokens[s : s + n].tolist() for s, n in zip(probe.starts, probe.lengths)],
            "halves": probe.halves.tolist(),
        },
        "map": {"tokens": one.tokens.tolist(), "halves": one.halves.tolist()},
        "goal": GOAL,
        "head_score": HEAD_SCORE,
    }


def _model(settings: Mapping[str, Any]) -> InductionModel:
    return InductionModel(BOOK["vocab_size"], BOOK["n_positions"], settings["d_model"], settings["n_heads"], settings["n_layers"])


@functools.cache
def _start(d_model: int, n_heads: int, n_layers: int, seed: int) -> dict[str, np.ndarray]:
    model = InductionModel(BOOK["vocab_size"], BOOK["n_positions"], d_model, n_heads, n_layers)
    return model.init(PortableRandom(seed))


def head_formed(second: float, previous: float, prefix: float) -> bool:
    """The explorer's rule for *the induction head has formed* (``formed`` in ``static/live_training.js``).

    The held-out repeated half's loss ``second`` is below ``GOAL`` times ln 32 (the book's vocabulary), and the
    best previous-token score ``previous`` and the best prefix-matching score ``prefix`` are both above
    ``HEAD_SCORE``.

    Raises
    ------
    ValueError
        ``second``, ``previous`` or ``prefix`` is not a finite real number; the message names it.

    Examples
    --------
    >>> head_formed(0.2635, 0.9288, 0.9178)  # seed 0 at 0.015 after the whole schedule
    True
    >>> head_formed(0.4146, 0.9799, 0.9835)  # at 0.02: both heads there, the loss above the goal
    False
    """
    named = (("second", second), ("previous", previous), ("prefix", prefix))
    second, previous, prefix = (check_real_range(name, value, -math.inf, math.inf) for name, value in named)
    return second < GOAL * math.log(BOOK["vocab_size"]) and min(previous, prefix) > HEAD_SCORE


def live_views(settings: Mapping[str, Any], steps: int = 0, schedule: int | None = None) -> dict[str, Any]:
    """What the page shows after ``steps`` steps of training from ``settings`` (its state: lr, layers, heads, width, seed).

    The learning rate falls linearly from ``settings["lr"]`` to the book's ``final_lr`` over ``schedule``
    steps (:func:`attnlib.induction.train_induction`); ``schedule=None`` makes the schedule as long as the
    run (``steps``), the golden cases' run. The page's own schedule is the book's 1200 steps
    (``schedule=BOOK["n_steps"]``): its first ``steps`` steps are what a reader sees after pressing
    *one step* ``steps`` times.

    Returns ``step``, ``first`` and ``second`` (the held-out losses of the two halves), ``previous``
    (layer 1's previous-token score of every head), ``prefix`` (the last layer's prefix-matching score
    of every head), ``copying`` (the fraction of tokens whose own logit the last layer's head 0 raises
    most, the ``diagonal`` of :class:`attnlib.induction.CopyingScore`), ``maps`` (every layer's attention weights,
    ``layers x heads x 12 x 12``, on one held-out sequence), ``tokens`` (its letters), ``losses``,
    ``first_curve`` and ``second_curve`` (the training losses of every step) and ``drop`` (the step of the
    drop, :func:`attnlib.induction.drop_step` against ``ln 32``, or -1).

    Raises
    ------
    ValueError
        ``schedule`` is given and is not an integer from 2 to 10**6, or ``steps`` is longer than it (after its
        schedule the page's rate is no longer this line). Otherwise never for the settings its explorer has checked:
        this is the explorer's plumbing, which checks nothing else (call it with other input and numpy's own
        errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> page = {"lr": 0.03, "n_layers": 2, "n_heads": 1, "d_model": 8, "seed": 0}
    >>> live_views(page, 3, schedule=BOOK["n_steps"])["step"]
    3
    >>> live_views(page, 3, schedule=2)
    Traceback (most recent call last):
    ...
    ValueError: steps=3 is longer than schedule=2, the steps over which the learning rate falls
    """
    if schedule is not None:
        schedule = check_int_range("schedule", schedule, 2, 10**6)
        if steps > schedule:
            raise ValueError(f"steps={steps} is longer than schedule={schedule}, the steps over which the learning rate falls")
    if not steps:  # the untrained views do not depend on the learning rate: made once per start
        return copy.deepcopy(_untrained(settings["d_model"], settings["n_heads"], settings["n_layers"], settings["seed"]))
    return _views(settings, steps, schedule)


@functools.cache
def _untrained(d_model: int, n_heads: int, n_layers: int, seed: int) -> dict[str, Any]:
    return _views({"lr": LR_CHOICES[0], "d_model": d_model, "n_heads": n_heads, "n_layers": n_layers, "seed": seed}, 0)


def _views(settings: Mapping[str, Any], steps: int, schedule: int | None = None) -> dict[str, Any]:
    model = _model(settings)
    final_lr = BOOK["final_lr"]
    if schedule is not None and steps > 1:  # the first steps of a longer line: the rate it reaches at the run's last step
        final_lr = settings["lr"] + (BOOK["final_lr"] - settings["lr"]) * (steps - 1) / (schedule - 1)
    params = _start(model.d_model, model.n_heads, model.n_layers, settings["seed"])
    probe, one = live_probe()
    curves: dict[str, list[float]] = {"losses": [], "first_curve": [], "second_curve": []}
    if steps:
        run = train_induction(
            model,
            params,
            Adam(lr=settings["lr"]),
            steps,
            BOOK["n_sequences"],
            BOOK["half_lengths"],
            probe,
            seed=PortableRandom(settings["seed"]),
            final_lr=final_lr,
        )
        params = run.final_params
        curves = {"losses": run.losses.tolist(), "first_curve": run.first_half.tolist(), "second_curve": run.second_half.tolist()}
    first, second, _ = half_losses(model, params, probe)
    w = model.forward(params, probe).weights
    window = 20
    drop = drop_step(curves["second_curve"], math.log(BOOK["vocab_size"]), window=window) if steps >= window else -1
    return {
        "step": steps,
        "first": first,
        "second": second,
        "previous": previous_token_score(w[0], probe).tolist(),
        "prefix": prefix_matching_score(w[-1], probe).tolist(),
        "copying": copying_score(token_ov_circuit(model, params, layer=model.n_layers, head=0)).diagonal,
        "maps": model.forward(params, one).weights.tolist(),
        "tokens": token_letters(one.tokens),
        "drop": drop,
        **curves,
    }


def live_snapshot(view: Mapping[str, Any], settings: Mapping[str, Any]) -> tuple[str, str]:
    """The untrained model's attention maps and scores (what a page without JavaScript shows), and the text summary.

    Parameters
    ----------
    view : Mapping
        :func:`live_views` of the setting (``step``, ``first``, ``second``, ``previous``, ``prefix``, ``copying``
        (the share of the 32 rows whose largest entry is on the diagonal, said as "diagonal largest in k of 32
        rows", as the live page says it), ``maps``, ``tokens``).
    settings : Mapping
        The explorer's settings (``n_layers`` is read).

    Returns
    -------
    tuple of str
        The HTML (facts line and one table per layer) and the facts line's text.

    Raises
    ------
    KeyError
        If ``view`` or ``settings`` lacks one of the keys above.
    """
    labels = [f"{i}:{t}" for i, t in enumerate(view["tokens"])]
    text = (
        f"Step {view['step']} (press train on the live page). Held-out loss: first halves {fmt(view['first'])}, "
        f"repeated halves {fmt(view['second'])} (ln 32 = {fmt(math.log(BOOK['vocab_size']))}). "
        f"Layer 1's previous-token score {fmt(max(view['previous']))}; layer {settings['n_layers']}'s prefix-matching score "
        f"{fmt(max(view['prefix']))}; copying (layer {settings['n_layers']}, head 1): diagonal largest in "
        f"{round(view['copying'] * BOOK['vocab_size'])} of {BOOK['vocab_size']} rows."
    )
    tables = flex(
        *[
            table_html(np.array(view["maps"][layer][0]), labels, labels, name=f"map{layer + 1}",
                       title=f"layer {layer + 1}, head 1: weights", vmin=0.0, vmax=1.0, decimals=2)  # fmt: skip
            for layer in range(settings["n_layers"])
        ]
    )
    return facts(text) + tables, text


SETTINGS = ("lr", "n_layers", "n_heads", "d_model", "seed")


def _equal(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def check_trained(value: Any, model: InductionModel) -> dict[str, Any]:
    """What the page sent back: ``{}``, or ``{"step": k, "params": {name: rows}}`` with every matrix of ``model``.

    Raises
    ------
    ValueError
        (a ``SettingError``) ``value`` is not ``{}`` nor a dict of a step (an integer >= 0) and the model's matrices
        (finite real numbers of the model's shapes, no other entry); the message starts with ``trained``.
    """
    expected = f"{{}} or {{'step': k, 'params': the {len(model.shapes())} matrices of the model}}"
    if isinstance(value, dict) and not value:
        return {}
    if not isinstance(value, dict) or set(value) != {"step", "params"} or not isinstance(value["params"], dict):
        raise SettingError("trained", expected, shown(value))
    step = check_int_range("trained", value["step"], 0, 10**9, f"a step from 0 to 10**9 in {expected}")
    shapes = model.shapes()
    if set(value["params"]) != set(shapes):
        raise SettingError("trained", expected, f"the matrices {sorted(map(str, value['params']))}")
    params = {}
    for name, shape in shapes.items():
        matrix = float_matrix("trained", value["params"][name], f"{name} as a finite real {shape[0]} x {shape[1]} matrix")
        if matrix.shape != shape:
            raise SettingError("trained", f"{name} of shape {shape}", f"shape {matrix.shape}")
        params[name] = matrix.tolist()
    return {"step": step, "params": params}


class LiveTrainingExplorer(Explorer, kind="live_training", module="live_training.js"):
    """Chapter 17: train the attention-only model in the page and watch the induction head form.

    Raises
    ------
    ValueError
        A setting is refused by its check (learning rate, layers, heads, width, seed); the error is an
        ``InvalidSetting`` (a ``ValueError``) whose message starts with the setting's name.
    """

    STATE = ("lr", "n_layers", "n_heads", "d_model", "seed", "trained")
    SETTABLE = ("title", "lr", "n_layers", "n_heads", "d_model", "seed", "trained")

    lr_choices = List(Float()).tag(sync=True)
    layer_choices = List(Int()).tag(sync=True)
    head_choices = List(Int()).tag(sync=True)
    width_choices = List(Int()).tag(sync=True)
    max_seed = Int(MAX_SEED).tag(sync=True)
    data = Dict().tag(sync=True)
    lr = checked_trait(BOOK["lr"])
    n_layers = checked_trait(2)
    n_heads = checked_trait(1)
    d_model = checked_trait(32)
    seed = checked_trait(0)
    #: What the page sent back at its last pause or single step in a notebook (empty, or the step and every matrix; see check_trained).
    trained = checked_trait({})

    def __init__(self) -> None:
        super().__init__(
            title="Train it yourself: an induction head forms",
            lr_choices=list(LR_CHOICES),
            layer_choices=list(LAYER_CHOICES),
            head_choices=list(HEAD_CHOICES),
            width_choices=list(WIDTH_CHOICES),
            data=_page_data(),
            lr=BOOK["lr"],
            n_layers=2,
            n_heads=1,
            d_model=32,
            seed=0,
        )

    def _check_lr(self, value: Any, now: Callable[[str], Any]) -> float:
        expected = f"one of the learning rates {', '.join(map(str, LR_CHOICES))}"
        rate = check_real_range("lr", value, LR_CHOICES[0], LR_CHOICES[-1])
        if rate not in LR_CHOICES:
            raise SettingError("lr", expected, shown(value))
        return rate

    def _check_n_layers(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("n_layers", value, LAYER_CHOICES)

    def _check_n_heads(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("n_heads", value, HEAD_CHOICES)

    def _check_d_model(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("d_model", value, WIDTH_CHOICES)

    def _check_seed(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_int_range("seed", value, 0, MAX_SEED)

    def _check_trained(self, value: Any, now: Callable[[str], Any]) -> dict[str, Any]:
        model = _model({k: now(k) for k in ("d_model", "n_heads", "n_layers")})
        return check_trained(value, model)

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        # weights trained with other settings are not this setting's: a new setting starts with none
        changed = any(k in values and not _equal(values[k], self._trait_values.get(k)) for k in SETTINGS)
        return {"trained": {}} if changed and "trained" not in values else {}

    def settings(self) -> dict[str, Any]:
        """The current setting: ``lr``, ``n_layers``, ``n_heads``, ``d_model`` and ``seed``."""
        return {k: getattr(self, k) for k in SETTINGS}

    def trained_model(self) -> tuple[InductionModel, dict[str, np.ndarray]]:
        """The model the page trained, as :mod:`attnlib.induction` reads it: ``(model, params)``, at the step it paused.

        In JupyterLab the page sends its weights back at every pause and single step; on the static web page there
        is no kernel to send them to.

        Raises
        ------
        ValueError
            Nothing has been trained yet with the current setting (press *train*, then *pause*, or *one step*).
        """
        if not self.trained:
            raise ValueError("trained: the page has sent no weights for this setting yet; press train, then pause (or one step)")
        model = _model(self.settings())
        return model, {name: np.array(rows, dtype=float) for name, rows in self.trained["params"].items()}

    @property
    def result(self) -> dict[str, Any]:
        """The untrained model's views for the current setting (:func:`live_views` after 0 steps)."""
        return self._view

    def _update(self) -> str:
        self._view = live_views(self.settings())
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return live_snapshot(self._view, self.settings())

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``liveViews`` against :func:`live_views`: after 0 and 25 steps (a 25-step schedule) for several settings,
        and after the first 10 steps of the page's own 1200-step schedule."""
        cases = []
        for settings, steps in (
            ({"lr": 0.015, "n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0}, 0),
            ({"lr": 0.015, "n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0}, 25),
            ({"lr": 0.03, "n_layers": 1, "n_heads": 2, "d_model": 16, "seed": 7}, 25),
            ({"lr": 0.01, "n_layers": 2, "n_heads": 4, "d_model": 8, "seed": 99}, 25),
        ):
            # the page's schedule made as long as the run (the page's own is the book's 1200 steps)
            data = _page_data(max(steps, 1))
            cases.append({"fn": "liveViewsAfter", "args": [data, settings, steps], "expected": live_views(settings, steps)})
        # the page's own 1200-step schedule, its first 10 steps: what exercise 17.4 asks the reader to read off
        settings = {"lr": 0.03, "n_layers": 2, "n_heads": 1, "d_model": 32, "seed": 0}
        expected = live_views(settings, 10, schedule=BOOK["n_steps"])
        cases.append({"fn": "liveViewsAfter", "args": [_page_data(), settings, 10], "expected": expected})
        return cases


@factory
def live_training_explorer() -> LiveTrainingExplorer:
    """Chapter 17: train the two-layer attention-only model in the page (a Web Worker), or its one-layer contrast.

    Examples
    --------
    >>> ex = live_training_explorer()
    >>> ex.result["maps"].__len__(), round(ex.result["second"], 2) > 3
    (2, True)
    """
    return LiveTrainingExplorer()
