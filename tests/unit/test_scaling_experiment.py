"""Chapter 14's experiments as the text now states them (issue 22, points 2-4).

* The scaling comparison: an unscaled run is a scaled run whose W_Q and W_K start d_k^(1/4) times
  larger and take steps sqrt(d_k) times larger (W_V unchanged), step for step; learning-rate sweeps
  stop diverging runs instead of overflowing.
* The two-relation count: a seed's split margin decides the count at every threshold, and at 0.5
  it is the chapter's rule (HeadOutcome.specialised).
* The two-relation task: a request never names the previous token, and it can name the token itself.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from attnlib import experiments, training
from attnlib.experiments import HeadOutcome


@pytest.mark.parametrize("d_k", [1, 4, 16, 64])
def test_scaling_equivalence_factors(d_k):
    eq = experiments.scaling_equivalence(d_k)
    assert eq.qk_init_factor == pytest.approx(d_k**0.25)
    assert eq.qk_lr_factor == pytest.approx(math.sqrt(d_k))
    assert eq.qk_init_factor**2 == pytest.approx(eq.qk_lr_factor)


@pytest.mark.parametrize("d_k, lr", [(64, 0.5), (16, 1.0)])
def test_unscaled_runs_are_scaled_runs_with_a_larger_start_and_larger_steps(d_k, lr):
    eq = experiments.scaling_equivalence(d_k)
    plain = experiments.scaling_runs([0, 3], scale=False, d_k=d_k, n_steps=40, lr=lr)
    twins = experiments.scaling_runs(
        [0, 3], scale=True, d_k=d_k, n_steps=40, lr=lr, qk_init_factor=eq.qk_init_factor, qk_lr_factor=eq.qk_lr_factor
    )
    for a, b in zip(plain, twins):
        np.testing.assert_allclose(b.losses, a.losses, rtol=0, atol=1e-12)
        assert b.final_loss == pytest.approx(a.final_loss, abs=1e-12)
        # the twin's W_Q is c times the plain run's, W_V is the same matrix
        np.testing.assert_allclose(b.final_params["W_Q"], eq.qk_init_factor * a.final_params["W_Q"], atol=1e-10)
        np.testing.assert_allclose(b.final_params["W_V"], a.final_params["W_V"], atol=1e-10)


def test_the_equivalence_needs_both_factors():
    eq = experiments.scaling_equivalence(64)
    plain = experiments.scaling_runs([0], scale=False, n_steps=20)[0]
    only_start = experiments.scaling_runs([0], scale=True, n_steps=20, qk_init_factor=eq.qk_init_factor)[0]
    assert only_start.losses[0] == pytest.approx(plain.losses[0])  # same start
    assert abs(only_start.final_loss - plain.final_loss) > 1e-6  # different steps


def test_gradient_descent_factors_and_their_checks():
    opt = training.GradientDescent(lr=0.5, lr_factors={"W_Q": 8})
    new = opt.step({"W_Q": np.ones((2, 2)), "W_V": np.ones((2, 2))}, {"dW_Q": np.ones((2, 2)), "dW_V": np.ones((2, 2))})
    assert new["W_Q"][0, 0] == pytest.approx(-3.0) and new["W_V"][0, 0] == pytest.approx(0.5)
    for bad in (0, -1, float("nan"), float("inf"), "0.5", True):
        with pytest.raises(ValueError, match="lr"):
            training.GradientDescent(lr=bad)
    for bad in ({"W_Q": 0}, {"W_Q": -2}, {"W_Q": float("nan")}, {"W_Q": "8"}, [("W_Q", 8)]):
        with pytest.raises(ValueError, match="lr_factors"):
            training.GradientDescent(lr=0.5, lr_factors=bad)


def test_a_diverging_run_stops_with_a_verdict_and_no_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        runs = experiments.scaling_runs([0, 1], scale=True, lr=4.0, stop_above=10)
    assert all(r.diverged and r.final_loss == math.inf and len(r.losses) < 200 for r in runs)
    assert all(len(r.saturations) == len(r.losses) == len(r.grad_norms["W_Q"]) for r in runs)
    fine = experiments.scaling_runs([0], scale=True, n_steps=10, stop_above=10)[0]
    assert not fine.diverged and len(fine.losses) == 10
    with pytest.raises(ValueError, match="stop_above"):
        experiments.scaling_runs([0], scale=True, n_steps=2, stop_above=-1)


def test_sweep_and_best_rate():
    sweep = experiments.learning_rate_sweep([0, 1], scale=True, lrs=[0.5, 2.0, 4.0], n_steps=30)
    assert list(sweep) == [0.5, 2.0, 4.0]
    assert all(r.diverged for r in sweep[4.0]) and not any(r.diverged for r in sweep[2.0])
    assert experiments.best_learning_rate(sweep) == 2.0
    for bad in ([], [0.5, 0.5], [0.0], "0.5", [float("inf")]):
        with pytest.raises(ValueError, match="lrs"):
            experiments.learning_rate_sweep([0], scale=True, lrs=bad, n_steps=2)
    with pytest.raises(ValueError, match="sweep"):
        experiments.best_learning_rate({})
    with pytest.raises(ValueError, match="qk_init_factor"):
        experiments.scaling_runs([0], scale=True, n_steps=2, qk_init_factor=0)


def _outcome(prev, match):
    return HeadOutcome((None, None), tuple(prev), tuple(match), 0.01, False)


def test_split_margin_is_the_chapter_rule_at_one_half():
    runs = experiments.head_count_runs(range(6), n_heads=2, n_steps=60)
    for run in runs:
        o = experiments.head_outcome(run, 2)
        assert (experiments.split_margin(o) > 0.5) == o.specialised


def test_split_margin_and_counts_on_hand_made_outcomes():
    # seeds 4 and 7 of the chapter: 0.56 and 0.45 on the previous token, the other head on the match
    s4, s7 = _outcome((0.56, 0.06), (0.19, 0.80)), _outcome((0.45, 0.05), (0.15, 0.83))
    assert experiments.split_margin(s4) == 0.56 and experiments.split_margin(s7) == 0.45
    # one head on both relations does not split them: the two relations need different heads
    assert experiments.split_margin(_outcome((0.9, 0.0), (0.9, 0.0))) == 0.0
    counts = experiments.split_counts([s4, s7], [0.3, 0.5, 0.6])
    assert counts == {0.3: 2, 0.5: 1, 0.6: 0}
    assert list(counts.values()) == sorted(counts.values(), reverse=True)
    for bad in ([0.0], [1.0], [], "0.5", [float("nan")]):
        with pytest.raises(ValueError, match="thresholds"):
            experiments.split_counts([s4], bad)
    with pytest.raises(ValueError, match="outcome"):
        experiments.split_margin(_outcome((0.9,), (0.1,)))
    with pytest.raises(ValueError, match="outcome"):
        experiments.split_margin((0.5, 0.5))


def test_two_relation_requests_skip_only_the_previous_token():
    task = training.two_relation_task(200, length=5, n_symbols=4, d_pos=4, seed=3)
    rows = np.arange(len(task.X))
    match, prev = task.relations["matching"], task.relations["previous"]
    assert np.all(match != prev), "a request never names the previous token"
    assert np.any(match == rows), "a token can request itself"
    assert np.all(match // task.length == rows // task.length), "requests stay inside their sequence"
    probe = experiments.two_relation_probe()
    assert int(np.sum(probe.relations["matching"] == np.arange(len(probe.X)))) == 18


def test_score_step_directions_follow_the_seed_rule_and_check_their_arguments():
    a, b, c = (experiments.score_step_directions(20, seed=s) for s in (3, 3.0, np.int64(3)))
    assert a.against.tolist() == b.against.tolist() == c.against.tolist()
    assert a.cosine.tolist() == b.cosine.tolist() == c.cosine.tolist()
    assert experiments.score_step_directions(20, seed=4).against.tolist() != a.against.tolist()
    for kwargs, name in (
        ({"n_cases": 0}, "n_cases"),
        ({"n_cases": 10**6}, "n_cases"),
        ({"seed": -1}, "seed"),
        ({"seed": "3"}, "seed"),
        ({"n_tokens": 1}, "n_tokens"),
        ({"d": 0}, "d"),
        ({"d": 65}, "d"),
        ({"n_cases": True}, "n_cases"),
    ):
        with pytest.raises(ValueError, match=name):
            experiments.score_step_directions(**kwargs)


def test_single_scores_move_against_the_push_but_the_matrix_never_does():
    """Chapter 14's claim: over many cases a large share of single scores moves the other way; the whole matrix never does."""
    r = experiments.score_step_directions(200, seed=0)
    assert 0.3 < r.fraction_against < 0.45
    assert (r.cosine > 0).all() and r.against.max() > 0
