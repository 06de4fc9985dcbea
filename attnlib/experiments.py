"""The training experiments of the chapter "Attention learns", each a small seeded function.

* :func:`learn_previous_token`: one head learns to look one token back.
* :func:`scaling_runs`: the same task at ``d_k = 64``, with and without the
  ``1/sqrt(d_k)`` factor, over several seeds; :func:`scaling_equivalence`
  gives the start and step sizes under which a scaled run repeats an
  unscaled one exactly, and :func:`learning_rate_sweep` with
  :func:`best_learning_rate` tunes each variant's learning rate.
* :func:`score_step_directions`: random cases in which one step of gradient
  descent on ``W_Q`` and ``W_K`` moves each score, against the direction the
  loss pushes that score (the sign of ``g_bar - g_k``).
* :func:`head_count_runs` and :func:`specialisation_table`: a task with two
  relations, one head against two heads, over many seeds;
  :func:`split_margin` and :func:`split_counts` show how the count of seeds
  that split the relations depends on the threshold.

Sizes are kept tiny so that every experiment runs in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._memory import check_size
from ._validate import (
    as_instance,
    as_int,
    as_int_sequence,
    as_matrix,
    as_positive_int,
    as_positive_real,
    as_real,
    as_seed,
    finite_result,
    quiet,
)
from .backward import score_change, self_attention_backward, softmax_backward
from .core import self_attention
from .training import (
    Adam,
    AttentionModel,
    GradientDescent,
    Snapshot,
    Task,
    TrainingRun,
    head_roles,
    init_params,
    previous_token_task,
    relation_mass,
    train,
    two_relation_task,
)

__all__ = [
    "FEATURE_GROUPS",
    "PREVIOUS_TOKEN",
    "TWO_RELATIONS",
    "HeadOutcome",
    "ScalingEquivalence",
    "ScoreStepDirections",
    "best_learning_rate",
    "feature_shares",
    "head_count_runs",
    "head_outcome",
    "learn_previous_token",
    "learning_rate_sweep",
    "pair_rotation_fit",
    "previous_token_probe",
    "scaling_equivalence",
    "scaling_runs",
    "score_step_directions",
    "specialisation_table",
    "split_counts",
    "split_margin",
    "two_relation_probe",
]

#: Sizes of the previous-token task (tokens per sequence, symbols, position columns, sequences per batch).
PREVIOUS_TOKEN = {"length": 6, "n_symbols": 4, "d_pos": 4, "batch": 8}
#: Sizes of the two-relation task.
TWO_RELATIONS = {"length": 5, "n_symbols": 4, "d_pos": 4, "batch": 6}
PROBE_SEED = 1000


def previous_token_probe(n_sequences: int = 16) -> Task:
    """The fixed held-out batch on which the previous-token runs are measured.

    Raises
    ------
    ValueError
        ``n_sequences`` is not a positive integer. The message names the argument.
    """
    c = PREVIOUS_TOKEN
    return previous_token_task(n_sequences, c["length"], c["n_symbols"], c["d_pos"], seed=PROBE_SEED)


def _previous_batches(rng: np.random.Generator) -> Task:
    c = PREVIOUS_TOKEN
    return previous_token_task(c["batch"], c["length"], c["n_symbols"], c["d_pos"], seed=rng)


def learn_previous_token(
    seed: int = 0, d_k: int = 4, n_steps: int = 300, record_steps: Sequence[int] = (0, 50, 100, 300), lr: float = 0.05
) -> TrainingRun:
    """One head, ``W_Q, W_K`` of width ``d_k`` and ``W_V`` onto the symbols, trained with Adam.

    Raises
    ------
    ValueError
        ``seed`` is not a seed by the seed rule (a non-negative integer or a ``numpy.random.Generator``); ``d_k`` or
        ``n_steps`` is not a positive integer; ``record_steps`` is not a list of integers in their range; ``lr`` is not
        a finite real number in its range; or a result would overflow float64 (the error names the inputs it came from).
        The message names the argument.

    Examples
    --------
    >>> run = learn_previous_token(seed=0, n_steps=40, record_steps=(0, 40))
    >>> bool(run.snapshots[-1].loss < run.snapshots[0].loss)
    True
    """
    probe = previous_token_probe()
    d_model = probe.X.shape[1]
    d_k = _width("d_k", d_k, d_model)
    n_steps = as_positive_int("n_steps", n_steps)
    record_steps = as_int_sequence("record_steps", record_steps, minimum=0, allow_empty=True)
    optimizer = Adam(lr=lr)
    shapes = {"W_Q": (d_model, d_k), "W_K": (d_model, d_k), "W_V": (d_model, PREVIOUS_TOKEN["n_symbols"])}
    params = init_params(shapes, 0.5, seed=seed)
    try:
        return train(AttentionModel(), params, optimizer, _previous_batches, n_steps, probe, record_steps, seed=seed)
    except ValueError as exc:  # train names its own arguments (params, task): say which settings of the caller led there
        raise ValueError(f"training with the given seed, d_k, lr and n_steps failed: {exc}") from None


def _positive(name: str, value: float) -> float:
    return as_positive_real(name, value)


def _width(name: str, value: Any, d_model: int) -> int:
    """A width of queries and keys: a positive integer whose ``W_Q`` and ``W_K`` (``d_model x width``) fit in memory."""
    width = as_positive_int(name, value)
    check_size(f"{name}={width}: W_Q and W_K of {d_model} x {name} numbers", 2 * d_model * width)
    return width


def _seeded_runs(
    seeds: Sequence[int],
    model: AttentionModel,
    shapes: dict[str, tuple[int, int]],
    std: float,
    optimizer: Any,
    batches: Any,
    n_steps: int,
    probe: Task,
    record_steps: Sequence[int] = (),
    start_factors: dict[str, float] | None = None,
    stop_above: float | None = None,
) -> list[TrainingRun]:
    """One training run per seed, the sweep every experiment here makes: seeded start ``N(0, std^2)`` (each matrix
    of ``start_factors`` multiplied by its factor), a fresh ``optimizer()``, batches and training seeded alike.

    Every argument is checked before the first run (``train`` checks them again, per run)."""
    seeds = as_int_sequence("seeds", seeds, minimum=0)
    std = as_positive_real("std", std)
    as_positive_int("n_steps", n_steps)
    as_int_sequence("record_steps", record_steps, minimum=0, allow_empty=True)
    optimizer()  # the optimiser's own checks (lr)
    runs = []
    for i, seed in enumerate(seeds):
        params = init_params(shapes, std, seed=seed)
        for name, factor in (start_factors or {}).items():
            params[name] = factor * params[name]
        try:
            runs.append(train(model, params, optimizer(), batches, n_steps, probe, record_steps, seed=seed, stop_above=stop_above))
        except ValueError as exc:  # train names its own arguments (params, task): say which settings of the caller led there
            raise ValueError(f"the run of seeds[{i}] = {seed} with the given std, lr and n_steps failed: {exc}") from None
    return runs


def scaling_runs(
    seeds: Sequence[int],
    scale: Any,
    d_k: int = 64,
    n_steps: int = 200,
    lr: float = 0.5,
    qk_init_factor: float = 1.0,
    qk_lr_factor: float = 1.0,
    stop_above: float | None = None,
) -> list[TrainingRun]:
    """Previous-token runs at width ``d_k`` with plain gradient descent, scaled or not.

    The start is ``N(0, 1/|x|^2)`` for every entry of ``W_Q``, ``W_K`` and
    ``W_V``, where ``|x|^2`` is the mean squared length of a token row, so
    that each query and key component has variance 1 at the start, the
    assumption of the variance argument of chapter 5. Plain gradient descent
    is used because Adam divides every step by the gradient's own size,
    which would hide exactly the effect under test.

    Parameters
    ----------
    seeds:
        One run per seed (start and batches).
    scale:
        :data:`attnlib.SQRT_D_K <attnlib.core.SQRT_D_K>` (divide the scores by ``sqrt(d_k)``) or
        :data:`attnlib.NO_SCALING <attnlib.core.NO_SCALING>` (or a positive number to divide by);
        ``True`` and ``False`` are the old spellings, kept as aliases for one release.
    d_k, n_steps, lr:
        Width of queries and keys, number of steps, learning rate.
    qk_init_factor, qk_lr_factor:
        Multiply the start of ``W_Q`` and ``W_K`` by ``qk_init_factor`` and
        their learning rate by ``qk_lr_factor`` (``W_V`` keeps ``lr``); see
        :func:`scaling_equivalence`.
    stop_above:
        Passed to :func:`attnlib.training.train`: a run whose training loss
        passes it stops and counts as diverged.

    Raises
    ------
    ValueError
        ``seeds`` is not a list of integers in their range; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; ``d_k`` or ``n_steps`` is not a positive integer; ``lr``,
        ``qk_init_factor`` or ``qk_lr_factor`` is not a finite real number in its range; ``stop_above`` is neither
        ``None`` nor a finite real number in its range; or a result would overflow float64 (the error names the inputs
        it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib import NO_SCALING
    >>> [round(float(r.saturations[0]), 4) for r in scaling_runs([0], scale=NO_SCALING, n_steps=1)]
    [0.8345]
    """
    seeds = as_int_sequence("seeds", seeds, minimum=0)
    model = AttentionModel(scale=scale)
    qk_init_factor = _positive("qk_init_factor", qk_init_factor)
    qk_lr_factor = _positive("qk_lr_factor", qk_lr_factor)
    probe = previous_token_probe()
    d_model = probe.X.shape[1]
    d_k = _width("d_k", d_k, d_model)
    std = 1.0 / float(np.sqrt(np.mean(np.sum(probe.X**2, axis=1))))
    shapes = {"W_Q": (d_model, d_k), "W_K": (d_model, d_k), "W_V": (d_model, PREVIOUS_TOKEN["n_symbols"])}
    factors = {"W_Q": qk_lr_factor, "W_K": qk_lr_factor} if qk_lr_factor != 1.0 else {}
    start = {"W_Q": qk_init_factor, "W_K": qk_init_factor}
    return _seeded_runs(
        seeds, model, shapes, std, lambda: GradientDescent(lr=lr, lr_factors=factors), _previous_batches,
        n_steps, probe, start_factors=start, stop_above=stop_above,
    )  # fmt: skip


@dataclass(frozen=True)
class ScalingEquivalence:
    """How a scaled run repeats an unscaled one: see :func:`scaling_equivalence`.

    Attributes
    ----------
    qk_init_factor:
        ``c = d_k**(1/4)``: the scaled model's ``W_Q`` and ``W_K`` start ``c``
        times larger.
    qk_lr_factor:
        ``c**2 = sqrt(d_k)``: they also take steps at ``c**2`` times the
        learning rate; ``W_V`` keeps it.
    """

    qk_init_factor: float
    qk_lr_factor: float


def scaling_equivalence(d_k: int) -> ScalingEquivalence:
    """Start and step factors under which the scaled model repeats the unscaled one step for step.

    With ``W_Q' = c W_Q`` and ``W_K' = c W_K`` the scaled scores are
    ``c**2 Q K^T / sqrt(d_k)``, the unscaled ones when ``c**2 = sqrt(d_k)``.
    The loss is then the same function of ``(W_Q, W_K, W_V)``, so its
    gradient with respect to ``W_Q'`` is ``dW_Q / c``, and a descent step of
    size ``lr'`` on ``W_Q'`` is a step of size ``lr' / c**2`` on ``W_Q``: the
    runs agree when ``lr' = c**2 lr`` for ``W_Q`` and ``W_K`` (``W_V`` is the
    same matrix in both models and keeps ``lr``).

    Raises
    ------
    ValueError
        ``d_k`` is not a positive integer. The message names the argument.

    Examples
    --------
    >>> scaling_equivalence(64)
    ScalingEquivalence(qk_init_factor=2.8284271247461903, qk_lr_factor=8.0)
    """
    d = as_real("d_k", as_positive_int("d_k", d_k))  # an int beyond float64 is refused by name
    return ScalingEquivalence(d**0.25, d**0.5)


def learning_rate_sweep(
    seeds: Sequence[int], scale: Any, lrs: Sequence[float], d_k: int = 64, n_steps: int = 200, stop_above: float = 10.0
) -> dict[float, list[TrainingRun]]:
    """:func:`scaling_runs` for every learning rate of ``lrs``; runs whose loss passes ``stop_above`` stop as diverged.

    Raises
    ------
    ValueError
        ``seeds`` is not a list of integers in their range; ``scale`` is not ``attnlib.SQRT_D_K``,
        ``attnlib.NO_SCALING`` or a positive number; ``lrs`` is not a non-empty list of real numbers in their range;
        ``d_k`` or ``n_steps`` is not a positive integer; ``stop_above`` is neither ``None`` nor a finite real number in
        its range; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> from attnlib import SQRT_D_K
    >>> sweep = learning_rate_sweep([0], scale=SQRT_D_K, lrs=[0.5, 100.0], n_steps=5)
    >>> [(lr, runs[0].diverged) for lr, runs in sweep.items()]
    [(0.5, False), (100.0, True)]
    """
    if isinstance(lrs, (str, bytes)) or not isinstance(lrs, Sequence) or len(lrs) == 0:
        raise ValueError(f"lrs must be a non-empty sequence of positive numbers; got {lrs!r}"[:200])
    rates = [_positive(f"lrs[{i}]", lr) for i, lr in enumerate(lrs)]
    if len(set(rates)) != len(rates):
        raise ValueError(f"lrs must not repeat a learning rate; got {list(lrs)}")
    return {lr: scaling_runs(seeds, scale, d_k=d_k, n_steps=n_steps, lr=lr, stop_above=stop_above) for lr in rates}


def best_learning_rate(sweep: dict[float, list[TrainingRun]]) -> float:
    """The learning rate whose runs have the lowest median final loss (a diverged run counts as ``inf``).

    Raises
    ------
    ValueError
        ``sweep`` is not a dict. The message names the argument.

    Examples
    --------
    >>> from attnlib import SQRT_D_K
    >>> best_learning_rate(learning_rate_sweep([0], scale=SQRT_D_K, lrs=[0.5, 2.0, 100.0], n_steps=20))
    2.0
    """
    if (
        not isinstance(sweep, dict)
        or not sweep
        or not all(isinstance(v, list) and v and all(isinstance(r, TrainingRun) for r in v) for v in sweep.values())
    ):
        raise ValueError("sweep must be what learning_rate_sweep returned: learning rates mapped to non-empty lists of runs")
    return min(sweep, key=lambda lr: float(np.median([r.final_loss for r in sweep[lr]])))


@dataclass(frozen=True)
class ScoreStepDirections:
    """Which way one gradient-descent step on ``W_Q`` and ``W_K`` moves the scores: see :func:`score_step_directions`.

    Attributes
    ----------
    n_tokens, d:
        The size of every case: ``n_tokens`` tokens of width ``d`` (so ``n_tokens**2`` scores).
    against:
        For each case, how many of its scores the step moves (to first order) against the sign of
        ``g_bar - g_k``, the way a step on the score itself would move it.
    cosine:
        For each case, the cosine of the angle between the change of the whole score matrix and
        ``-dZ``; it is positive in every case, since their product is ``|dW_Q|^2 + |dW_K|^2``.
    """

    n_tokens: int
    d: int
    against: np.ndarray
    cosine: np.ndarray

    @property
    def fraction_against(self) -> float:
        """The share of all scores of all cases that moved against the sign of ``g_bar - g_k``."""
        return float(self.against.sum() / (self.against.size * self.n_tokens**2))


def score_step_directions(n_cases: int = 200, seed: int = 0, n_tokens: int = 5, d: int = 3) -> ScoreStepDirections:
    """Random cases of one self-attention layer: does a step on ``W_Q``, ``W_K`` move each score the way the loss pushes it?

    Each case draws, from ``numpy.random.default_rng(seed)`` and in this order, the tokens ``X``
    (``n_tokens x d``), ``W_Q``, ``W_K``, ``W_V`` (``d x d``) and an upstream gradient ``G`` (``n_tokens x d``),
    all standard normal, and takes the loss ``L = sum(G * O)`` of the output ``O`` of
    :func:`attnlib.core.self_attention` (scaled by ``sqrt(d)``). The loss pushes score ``z_k`` of a row
    up exactly when ``dZ_k = a_k (g_k - g_bar)`` is negative (:func:`attnlib.backward.softmax_backward`).
    A step of gradient descent on ``W_Q`` and ``W_K`` moves the scores by
    :func:`attnlib.backward.score_change` with the moves ``-dW_Q`` and ``-dW_K``
    (per unit of learning rate, to first order); a score counts as moved *against* when that
    change and ``-dZ_k`` have opposite signs.

    Raises
    ------
    ValueError
        ``n_cases`` is not an integer from 1 to 100,000; ``seed`` is not a seed (a non-negative integer); ``n_tokens``
        is not an integer from 2 to 64 or ``d`` one from 1 to 64. The message names the argument.

    Examples
    --------
    >>> r = score_step_directions(n_cases=50, seed=0)
    >>> r.against.shape, bool(0 < r.fraction_against < 0.5), bool((r.cosine > 0).all())
    ((50,), True, True)
    """
    n_cases = as_int("n_cases", n_cases, minimum=1, what="a number of cases from 1 to 100,000")
    if n_cases > 100_000:
        raise ValueError(f"n_cases must be a number of cases from 1 to 100,000; got {n_cases}")
    seed = as_seed("seed", seed)
    n_tokens = as_int("n_tokens", n_tokens, minimum=2, what="a number of tokens from 2 to 64 (one token has nothing to compare)")
    d = as_int("d", d, minimum=1, what="a width from 1 to 64")
    if n_tokens > 64 or d > 64:
        raise ValueError(f"n_tokens and d must be at most 64 (a case is a small example); got n_tokens={n_tokens}, d={d}")
    rng = np.random.default_rng(seed)
    against, cosine = np.zeros(n_cases, dtype=int), np.zeros(n_cases)
    for case in range(n_cases):
        X = rng.normal(size=(n_tokens, d))
        W_Q, W_K, W_V = (rng.normal(size=(d, d)) for _ in range(3))
        G = rng.normal(size=(n_tokens, d))
        forward = self_attention(X, W_Q, W_K, W_V)
        dZ = softmax_backward(forward.weights, G @ forward.V.T)
        grads = self_attention_backward(X, W_Q, W_K, W_V, G)
        moved = score_change(X, X, W_Q, W_K, -grads.dW_Q, -grads.dW_K)
        against[case] = int(np.sum(moved * -dZ < 0))
        with quiet():
            norms = finite_result(np.linalg.norm(moved) * np.linalg.norm(dZ), "the norms of the score changes", "seed")
        cosine[case] = float(np.sum(moved * -dZ) / norms) if norms > 0 else 0.0
    return ScoreStepDirections(n_tokens, d, against, cosine)


def two_relation_probe(n_sequences: int = 16) -> Task:
    """The fixed held-out batch on which the two-relation runs are measured.

    Raises
    ------
    ValueError
        ``n_sequences`` is not a positive integer. The message names the argument.
    """
    c = TWO_RELATIONS
    return two_relation_task(n_sequences, c["length"], c["n_symbols"], c["d_pos"], seed=PROBE_SEED)


def _two_relation_batches(rng: np.random.Generator) -> Task:
    c = TWO_RELATIONS
    return two_relation_task(c["batch"], c["length"], c["n_symbols"], c["d_pos"], seed=rng)


def head_count_runs(
    seeds: Sequence[int],
    n_heads: int,
    std: float = 0.3,
    n_steps: int = 150,
    lr: float = 0.03,
    record_steps: Sequence[int] = (),
) -> list[TrainingRun]:
    """Two-relation runs of a multi-head layer with ``n_heads`` heads (same parameter count for any ``n_heads``).

    Raises
    ------
    ValueError
        ``seeds`` or ``record_steps`` is not a list of integers in their range; ``n_heads`` or ``n_steps`` is not a
        positive integer; ``std`` or ``lr`` is not a finite real number in its range; or a result would overflow float64
        (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> len(head_count_runs([0, 1], n_heads=2, n_steps=2))
    2
    """
    model = AttentionModel(n_heads=as_positive_int("n_heads", n_heads))
    probe = two_relation_probe()
    d_model = probe.X.shape[1]
    shapes = {name: (d_model, d_model) for name in ("W_Q", "W_K", "W_V", "W_O")}
    return _seeded_runs(seeds, model, shapes, std, lambda: Adam(lr=lr), _two_relation_batches, n_steps, probe, record_steps)


@dataclass(frozen=True)
class HeadOutcome:
    """What the heads of one trained two-relation run do on the probe batch.

    Attributes
    ----------
    roles:
        Per head, the relation it takes (more than half its weight on that
        relation's key on average) or None.
    previous, matching:
        Per head, the mean weight on the previous token and on the matching token.
    loss:
        The probe loss after training.
    specialised:
        True when every relation is taken by some head.
    """

    roles: tuple[str | None, ...]
    previous: tuple[float, ...]
    matching: tuple[float, ...]
    loss: float
    specialised: bool


def head_outcome(run: TrainingRun | Snapshot, n_heads: int, probe: Task | None = None) -> HeadOutcome:
    """Classify the heads of a finished run, or of a run at one recorded step (see :class:`HeadOutcome`).

    Raises
    ------
    ValueError
        ``run`` is not the object it names (made by attnlib); ``n_heads`` is not a positive integer (or does not divide
        the width); ``probe`` is neither ``None`` nor the object it names. The message names the argument.

    Examples
    --------
    >>> run = head_count_runs([0], n_heads=2, n_steps=3, record_steps=(1,))[0]
    >>> [len(head_outcome(x, 2).roles) for x in (run, run.snapshots[0])]
    [2, 2]
    """
    as_instance("run", run, (TrainingRun, Snapshot), "a TrainingRun or one of its Snapshots")
    model = AttentionModel(n_heads=as_positive_int("n_heads", n_heads))
    probe = two_relation_probe() if probe is None else as_instance("probe", probe, Task, "None or a Task")
    params, loss = (run.params, run.loss) if isinstance(run, Snapshot) else (run.final_params, run.final_loss)
    _, weights = model.forward(params, probe)
    roles = tuple(head_roles(weights, probe))
    return HeadOutcome(
        roles,
        tuple(float(x) for x in relation_mass(weights, probe, "previous")),
        tuple(float(x) for x in relation_mass(weights, probe, "matching")),
        float(loss),
        set(probe.relations) <= set(roles),
    )


def specialisation_table(outcomes: Sequence[HeadOutcome]) -> dict[str, int]:
    """How many runs ended in each pattern of roles (heads sorted, None written as 'none').

    Raises
    ------
    ValueError
        ``outcomes`` is not a list of the records it names. The message names the argument.

    Examples
    --------
    >>> o = HeadOutcome(("matching", None), (0.1, 0.3), (0.8, 0.2), 0.02, False)
    >>> specialisation_table([o, o])
    {'matching + none': 2}
    """
    if isinstance(outcomes, (str, bytes, dict)) or not isinstance(outcomes, Sequence):
        raise ValueError(f"outcomes must be a list of HeadOutcome (see head_outcome); got {type(outcomes).__name__}")
    table: dict[str, int] = {}
    for i, o in enumerate(outcomes):
        as_instance(f"outcomes[{i}]", o, HeadOutcome, "a HeadOutcome (see head_outcome)")
        key = " + ".join(sorted(r or "none" for r in o.roles))
        table[key] = table.get(key, 0) + 1
    return dict(sorted(table.items(), key=lambda kv: -kv[1]))


def split_margin(outcome: HeadOutcome) -> float:
    """How clearly a two-head run split the relations, as one number between 0 and 1.

    It is the best, over the ways of giving the two relations to different
    heads, of the smaller of the two heads' weights on their relation's key.

    A seed counts as split at threshold ``t`` when the previous token and the
    matching token can be given to two different heads that each put more
    than ``t`` of their weight on their relation's key, that is when
    ``split_margin > t``; at ``t = 0.5`` this is ``HeadOutcome.specialised``.

    Raises
    ------
    ValueError
        ``outcome`` is not the object it names (made by attnlib). The message names the argument.

    Examples
    --------
    >>> o = HeadOutcome(("previous", "matching"), (0.56, 0.06), (0.19, 0.8), 0.0167, True)
    >>> split_margin(o)
    0.56
    """
    if not isinstance(outcome, HeadOutcome):
        raise ValueError(f"outcome must be a HeadOutcome (see head_outcome); got {type(outcome).__name__}")
    prev, match = outcome.previous, outcome.matching
    if len(prev) < 2:
        raise ValueError(f"outcome must come from at least two heads; got {len(prev)}")
    return max(min(prev[a], match[b]) for a in range(len(prev)) for b in range(len(match)) if a != b)


def split_counts(outcomes: Sequence[HeadOutcome], thresholds: Sequence[float]) -> dict[float, int]:
    """For each threshold ``t``, how many runs split the two relations at ``t`` (:func:`split_margin` above ``t``).

    Raises
    ------
    ValueError
        ``outcomes`` is not a list of the records it names; ``thresholds`` is not a non-empty list of real numbers in
        their range; or a result would overflow float64 (the error names the inputs it came from). The message names the
        argument.

    Examples
    --------
    >>> o = HeadOutcome(("previous", "matching"), (0.56, 0.06), (0.19, 0.8), 0.0167, True)
    >>> split_counts([o, o], [0.5, 0.6])
    {0.5: 2, 0.6: 0}
    """
    if isinstance(outcomes, (str, bytes, dict)) or not isinstance(outcomes, Sequence):
        raise ValueError(f"outcomes must be a list of HeadOutcome (see head_outcome); got {type(outcomes).__name__}")
    for i, o in enumerate(outcomes):
        as_instance(f"outcomes[{i}]", o, HeadOutcome, "a HeadOutcome (see head_outcome)")
    margins = [split_margin(o) for o in outcomes]
    if isinstance(thresholds, (str, bytes)) or not isinstance(thresholds, Sequence) or len(thresholds) == 0:
        raise ValueError(f"thresholds must be a non-empty sequence of numbers between 0 and 1; got {thresholds!r}")
    result = {}
    for i, t in enumerate(thresholds):
        t = as_real(f"thresholds[{i}]", t)
        if not 0 < t < 1:
            raise ValueError(f"thresholds must lie strictly between 0 and 1; got {t}")
        result[t] = sum(m > t for m in margins)
    return result


def pair_rotation_fit(block: np.ndarray) -> tuple[float, float, float]:
    """Fit a 2x2 block as ``c * pair_rotation(angle)``: returns ``(c, angle, relative residual)``.

    ``c R(angle) = [[a, b], [-b, a]]`` with ``a = c cos(angle)``,
    ``b = c sin(angle)``; the fit takes the nearest matrix of that form.

    Raises
    ------
    ValueError
        ``block`` is not finite real numbers of the expected shape; or a result would overflow float64 (the error names
        the inputs it came from). The message names the argument.

    Examples
    --------
    >>> from attnlib.positional import pair_rotation
    >>> [round(x, 6) for x in pair_rotation_fit(3 * pair_rotation(1.0))]
    [3.0, 1.0, 0.0]
    """
    B = as_matrix("block", block)
    if B.shape != (2, 2):
        raise ValueError(f"block must be a 2x2 matrix; got shape {B.shape}")
    with quiet():
        # halves first: (a + d) / 2 of two entries near 1.8e308 would overflow where the mean does not
        a = B[0, 0] / 2 + B[1, 1] / 2
        b = B[0, 1] / 2 - B[1, 0] / 2
        fit = np.array([[a, b], [-b, a]])
        c = finite_result(np.hypot(a, b), "the factor c = hypot(a, b) of the fit", "block")
        # the residual is a ratio of norms: taken of B and the fit divided by the largest entry, whose squares stay finite
        top = float(np.abs(B).max())
        residual = float(np.linalg.norm((B - fit) / top if np.isfinite(B - fit).all() else B / top - fit / top)) / float(
            np.linalg.norm(B / top)
        ) if top > 0 else 0.0
    return float(c), float(np.arctan2(b, a)), residual


#: Feature groups of the two-relation task, by the prefix of each column name of ``X``.
FEATURE_GROUPS = {"name": ("n",), "request": ("r",), "payload": ("p",), "position": ("sin", "cos")}


def _largest(M: np.ndarray) -> float:
    top = float(np.abs(M).max()) if M.size else 0.0
    return top if top > 0 else 1.0


def feature_shares(W: np.ndarray, features: Sequence[str], groups: dict[str, tuple[str, ...]] | None = None) -> dict[str, float]:
    """Share of a projection's squared size that reads each group of input features.

    Row ``i`` of ``W`` is what input feature ``i`` contributes, so the share of
    a group is the sum of its rows' squared entries over the total. For one head
    of a packed layout pass that head's columns.

    Raises
    ------
    ValueError
        ``W`` is not finite real numbers of the expected shape; ``features`` is not a list of one label per row;
        ``groups`` is neither ``None`` nor a dict of group names to tuples of prefixes; or a result would overflow
        float64 (the error names the inputs it came from). The message names the argument.

    Examples
    --------
    >>> feature_shares(np.array([[3.0], [4.0]]), ["n0", "p0"])
    {'name': 0.36, 'request': 0.0, 'payload': 0.64, 'position': 0.0}
    """
    M = as_matrix("W", W)
    if isinstance(features, (str, bytes)) or not isinstance(features, Sequence) or not all(isinstance(f, str) for f in features):
        raise ValueError(f"features must be a list of column names (strings), one per row of W; got {features!r}"[:200])
    groups = FEATURE_GROUPS if groups is None else groups
    if not isinstance(groups, dict) or not all(
        isinstance(g, str) and isinstance(p, tuple) and p and all(isinstance(x, str) for x in p) for g, p in groups.items()
    ):
        raise ValueError(f"groups must be None or a dict of group name: tuple of name prefixes; got {groups!r}"[:200])
    if M.shape[0] != len(features):
        raise ValueError(f"W must have one row per feature ({len(features)}); got shape {M.shape}")
    with quiet():
        scaled = M / _largest(M)  # shares do not change with the scale, and 1e300 squared would overflow
        row_sq = np.sum(scaled**2, axis=1)
    total = float(row_sq.sum())
    if total == 0:
        raise ValueError("W is all zeros: no feature is read")
    return {
        g: round(float(sum(row_sq[i] for i, f in enumerate(features) if f.startswith(prefixes))) / total, 12)
        for g, prefixes in groups.items()
    }
