"""The training experiments of the chapter "Attention learns", each a small seeded function.

* :func:`learn_previous_token`: one head learns to look one token back.
* :func:`scaling_runs`: the same task at ``d_k = 64``, with and without the
  ``1/sqrt(d_k)`` factor, over several seeds.
* :func:`head_count_runs` and :func:`specialisation_table`: a task with two
  relations, one head against two heads, over many seeds.

Sizes are kept tiny so that every experiment runs in seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._validate import as_positive_int
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
    "PREVIOUS_TOKEN",
    "TWO_RELATIONS",
    "previous_token_probe",
    "learn_previous_token",
    "scaling_runs",
    "two_relation_probe",
    "head_count_runs",
    "HeadOutcome",
    "head_outcome",
    "specialisation_table",
    "pair_rotation_fit",
    "FEATURE_GROUPS",
    "feature_shares",
]

#: Sizes of the previous-token task (tokens per sequence, symbols, position columns, sequences per batch).
PREVIOUS_TOKEN = {"length": 6, "n_symbols": 4, "d_pos": 4, "batch": 8}
#: Sizes of the two-relation task.
TWO_RELATIONS = {"length": 5, "n_symbols": 4, "d_pos": 4, "batch": 6}
PROBE_SEED = 1000


def previous_token_probe(n_sequences: int = 16) -> Task:
    """The fixed held-out batch on which the previous-token runs are measured."""
    c = PREVIOUS_TOKEN
    return previous_token_task(n_sequences, c["length"], c["n_symbols"], c["d_pos"], seed=PROBE_SEED)


def _previous_batches(rng: np.random.Generator) -> Task:
    c = PREVIOUS_TOKEN
    return previous_token_task(c["batch"], c["length"], c["n_symbols"], c["d_pos"], seed=rng)


def learn_previous_token(
    seed: int = 0, d_k: int = 4, n_steps: int = 300, record_steps: Sequence[int] = (0, 50, 100, 300), lr: float = 0.05
) -> TrainingRun:
    """One head, ``W_Q, W_K`` of width ``d_k`` and ``W_V`` onto the symbols, trained with Adam.

    Examples
    --------
    >>> run = learn_previous_token(seed=0, n_steps=40, record_steps=(0, 40))
    >>> bool(run.snapshots[-1].loss < run.snapshots[0].loss)
    True
    """
    probe = previous_token_probe()
    d_model = probe.X.shape[1]
    shapes = {"W_Q": (d_model, d_k), "W_K": (d_model, d_k), "W_V": (d_model, PREVIOUS_TOKEN["n_symbols"])}
    params = init_params(shapes, 0.5, seed=seed)
    return train(AttentionModel(), params, Adam(lr=lr), _previous_batches, n_steps, probe, record_steps, seed=seed)


def scaling_runs(
    seeds: Sequence[int], scale: bool, d_k: int = 64, n_steps: int = 200, lr: float = 0.5
) -> list[TrainingRun]:
    """Previous-token runs at width ``d_k`` with plain gradient descent, scaled or not.

    The start is ``N(0, 1/|x|^2)`` for every entry of ``W_Q`` and ``W_K``,
    where ``|x|^2`` is the squared length of every token row, so that each
    query and key component has variance 1 at the start, the assumption of
    the variance argument of chapter 5. Plain gradient descent is used
    because Adam divides every step by the gradient's own size, which would
    hide exactly the effect under test.

    Examples
    --------
    >>> [round(float(r.saturations[0]), 4) for r in scaling_runs([0], scale=False, n_steps=1)]
    [0.8345]
    """
    d_k = as_positive_int("d_k", d_k)
    probe = previous_token_probe()
    d_model = probe.X.shape[1]
    std = 1.0 / float(np.sqrt(np.mean(np.sum(probe.X**2, axis=1))))
    shapes = {"W_Q": (d_model, d_k), "W_K": (d_model, d_k), "W_V": (d_model, PREVIOUS_TOKEN["n_symbols"])}
    runs = []
    for seed in seeds:
        params = init_params(shapes, std, seed=seed)
        runs.append(train(AttentionModel(scale=scale), params, GradientDescent(lr=lr), _previous_batches, n_steps, probe, (), seed=seed))
    return runs


def two_relation_probe(n_sequences: int = 16) -> Task:
    """The fixed held-out batch on which the two-relation runs are measured."""
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

    Examples
    --------
    >>> len(head_count_runs([0, 1], n_heads=2, n_steps=2))
    2
    """
    probe = two_relation_probe()
    d_model = probe.X.shape[1]
    shapes = {name: (d_model, d_model) for name in ("W_Q", "W_K", "W_V", "W_O")}
    model = AttentionModel(n_heads=as_positive_int("n_heads", n_heads))
    return [
        train(model, init_params(shapes, std, seed=s), Adam(lr=lr), _two_relation_batches, n_steps, probe, record_steps, seed=s)
        for s in seeds
    ]


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

    Examples
    --------
    >>> run = head_count_runs([0], n_heads=2, n_steps=3, record_steps=(1,))[0]
    >>> [len(head_outcome(x, 2).roles) for x in (run, run.snapshots[0])]
    [2, 2]
    """
    probe = two_relation_probe() if probe is None else probe
    params, loss = (run.params, run.loss) if isinstance(run, Snapshot) else (run.final_params, run.final_loss)
    _, weights = AttentionModel(n_heads=n_heads).forward(params, probe)
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

    Examples
    --------
    >>> o = HeadOutcome(("matching", None), (0.1, 0.3), (0.8, 0.2), 0.02, False)
    >>> specialisation_table([o, o])
    {'matching + none': 2}
    """
    table: dict[str, int] = {}
    for o in outcomes:
        key = " + ".join(sorted(r or "none" for r in o.roles))
        table[key] = table.get(key, 0) + 1
    return dict(sorted(table.items(), key=lambda kv: -kv[1]))


def pair_rotation_fit(block: np.ndarray) -> tuple[float, float, float]:
    """Fit a 2x2 block as ``c * pair_rotation(angle)``: returns ``(c, angle, relative residual)``.

    ``c R(angle) = [[a, b], [-b, a]]`` with ``a = c cos(angle)``,
    ``b = c sin(angle)``; the fit takes the nearest matrix of that form.

    Examples
    --------
    >>> from attnlib.positional import pair_rotation
    >>> [round(x, 6) for x in pair_rotation_fit(3 * pair_rotation(1.0))]
    [3.0, 1.0, 0.0]
    """
    B = np.asarray(block, dtype=np.float64)
    if B.shape != (2, 2) or not np.isfinite(B).all():
        raise ValueError(f"block must be a finite 2x2 matrix; got shape {B.shape}")
    a = (B[0, 0] + B[1, 1]) / 2
    b = (B[0, 1] - B[1, 0]) / 2
    fit = np.array([[a, b], [-b, a]])
    norm = float(np.linalg.norm(B))
    residual = float(np.linalg.norm(B - fit)) / norm if norm > 0 else 0.0
    return float(np.hypot(a, b)), float(np.arctan2(b, a)), residual


#: Feature groups of the two-relation task, by the prefix of each column name of ``X``.
FEATURE_GROUPS = {"name": ("n",), "request": ("r",), "payload": ("p",), "position": ("sin", "cos")}


def feature_shares(W: np.ndarray, features: Sequence[str], groups: dict[str, tuple[str, ...]] | None = None) -> dict[str, float]:
    """Share of a projection's squared size that reads each group of input features.

    Row ``i`` of ``W`` is what input feature ``i`` contributes, so the share of
    a group is the sum of its rows' squared entries over the total. For one head
    of a packed layout pass that head's columns.

    Examples
    --------
    >>> feature_shares(np.array([[3.0], [4.0]]), ["n0", "p0"])
    {'name': 0.36, 'request': 0.0, 'payload': 0.64, 'position': 0.0}
    """
    M = np.asarray(W, dtype=np.float64)
    groups = FEATURE_GROUPS if groups is None else groups
    if M.ndim != 2 or M.shape[0] != len(features):
        raise ValueError(f"W must have one row per feature ({len(features)}); got shape {M.shape}")
    row_sq = np.sum(M**2, axis=1)
    total = float(row_sq.sum())
    if total == 0:
        raise ValueError("W is all zeros: no feature is read")
    return {
        g: round(float(sum(row_sq[i] for i, f in enumerate(features) if f.startswith(prefixes))) / total, 12)
        for g, prefixes in groups.items()
    }
