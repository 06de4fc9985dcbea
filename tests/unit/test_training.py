"""Training utilities: tasks with known answers, the loss, GD and Adam written out, a deterministic loop."""

from __future__ import annotations

import numpy as np
import pytest

import attnlib
from attnlib import experiments, training
from attnlib.backward import central_difference, relative_error


def test_previous_token_task_targets_and_mask():
    t = training.previous_token_task(3, length=5, n_symbols=4, d_pos=4, seed=2)
    assert t.X.shape == (15, 8) and t.n_sequences == 3
    symbols = t.X[:, :4].argmax(axis=1)
    prev = t.relations["previous"]
    for row in range(15):
        if row % 5 == 0:
            assert prev[row] == -1 and not t.loss_weight[row].any() and not t.target[row].any()
        else:
            assert prev[row] == row - 1 and t.target[row].argmax() == symbols[row - 1]
    assert np.array_equal(t.X[:5, 4:], attnlib.sinusoidal_encoding(5, 4))
    # block-diagonal: a token sees exactly its own sequence
    assert t.mask.sum() == 3 * 25 and t.mask[4, 4] and not t.mask[4, 5]


def test_two_relation_task_relations_are_right_and_distinct():
    t = training.two_relation_task(4, length=5, n_symbols=3, d_pos=4, seed=7)
    L = 5
    names = t.X[:, :L].argmax(axis=1)
    requests = t.X[:, L : 2 * L].argmax(axis=1)
    payload = t.X[:, 2 * L : 2 * L + 3].argmax(axis=1)
    match, prev = t.relations["matching"], t.relations["previous"]
    for row in range(20):
        start = row - row % L
        assert start <= match[row] < start + L and match[row] != prev[row]
        assert names[match[row]] == requests[row]
        assert t.target[row, 3:6].argmax() == payload[match[row]]
        if prev[row] >= 0:
            assert t.target[row, :3].argmax() == payload[prev[row]]
    for s in range(4):
        assert sorted(names[s * L : (s + 1) * L]) == list(range(L))  # names distinct within a sequence


def test_tasks_are_deterministic_for_a_seed_and_differ_between_seeds():
    a, b, c = (training.two_relation_task(2, seed=s) for s in (5, 5, 6))
    assert np.array_equal(a.X, b.X) and np.array_equal(a.target, b.target)
    assert not np.array_equal(a.X, c.X)


def test_mse_loss_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    O, T = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    W = (rng.random((4, 3)) < 0.7).astype(float)
    loss, grad = training.mse_loss(O, T, W)
    assert loss == pytest.approx(float(np.sum(W * (O - T) ** 2) / W.sum()))
    assert relative_error(grad, central_difference(lambda o: training.mse_loss(o, T, W)[0], O)) < 1e-8


@pytest.mark.parametrize("n_heads", [None, 1, 2])
def test_model_gradients_match_finite_differences(n_heads):
    task = training.two_relation_task(2, length=4, n_symbols=2, d_pos=2, seed=3)
    d = task.X.shape[1]
    if n_heads is None:
        task = training.previous_token_task(2, length=4, n_symbols=3, d_pos=2, seed=3)
        d = task.X.shape[1]
        shapes = {"W_Q": (d, 3), "W_K": (d, 3), "W_V": (d, 3)}
    else:
        shapes = {n: (d, d) for n in ("W_Q", "W_K", "W_V", "W_O")}
    model = training.AttentionModel(n_heads=n_heads)
    params = training.init_params(shapes, 0.4, seed=1)
    _, grads, _ = model.loss_and_gradients(params, task)
    for name in params:
        def loss(w, name=name):
            return model.loss_and_gradients({**params, name: w}, task)[0]

        assert relative_error(grads["d" + name], central_difference(loss, params[name])) < 1e-6, name


def test_gradient_descent_and_adam_follow_their_formulas():
    w, g = np.array([[1.0, -2.0]]), np.array([[0.5, 4.0]])
    assert np.allclose(training.GradientDescent(lr=0.1).step({"W": w}, {"dW": g})["W"], w - 0.1 * g)
    opt = training.Adam(lr=0.01, beta1=0.9, beta2=0.999, eps=1e-8)
    p = {"W": w}
    m = v = np.zeros_like(w)
    for t in range(1, 4):
        grad = g * t
        p = opt.step(p, {"dW": grad})
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        w = w - 0.01 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-8)
        assert np.allclose(p["W"], w, rtol=1e-12, atol=1e-15)


def small_run(seed=0, steps=30):
    probe = training.previous_token_task(2, seed=99)
    params = training.init_params({"W_Q": (8, 4), "W_K": (8, 4), "W_V": (8, 4)}, 0.5, seed=seed)
    return training.train(
        training.AttentionModel(),
        params,
        training.Adam(lr=0.05),
        lambda r: training.previous_token_task(4, seed=r),
        steps,
        probe,
        record_steps=(0, 10, steps),
        seed=seed,
    )


def test_train_is_deterministic_and_records_what_it_says():
    a, b, c = small_run(0), small_run(0), small_run(1)
    assert np.array_equal(a.losses, b.losses) and a.final_loss == b.final_loss
    assert not np.array_equal(a.losses, c.losses)
    assert [s.step for s in a.snapshots] == [0, 10, 30]
    assert a.losses.shape == (30,) and set(a.grad_norms) == {"W_Q", "W_K", "W_V"}
    assert a.snapshots[-1].loss == a.final_loss and a.final_loss < a.snapshots[0].loss
    # snapshots hold copies: step 0 is the start, unchanged by training
    assert np.array_equal(a.snapshots[0].params["W_Q"], training.init_params({"W_Q": (8, 4)}, 0.5, seed=0)["W_Q"])
    assert 1 / 6 <= a.saturations.min() and a.saturations.max() <= 1


def test_relation_mass_head_roles_and_saturation():
    t = training.previous_token_task(1, length=3, n_symbols=2, d_pos=2)
    right = np.array([[1, 0, 0], [1, 0, 0], [0, 1, 0]], dtype=float)
    uniform = np.full((3, 3), 1 / 3)
    assert training.relation_mass(np.stack([right, uniform]), t, "previous") == pytest.approx([1.0, 1 / 3])
    assert training.head_roles(np.stack([right, uniform]), t) == ["previous", None]
    assert training.saturation(uniform) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="relation must be one of"):
        training.relation_mass(right, t, "matching")
    with pytest.raises(ValueError, match="threshold"):
        training.head_roles(right, t, threshold=0.2)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: training.previous_token_task(0), "n_sequences"),
        (lambda: training.previous_token_task(2, length=1), "length"),
        (lambda: training.previous_token_task(2, d_pos=3), "d_pos must be an even"),
        (lambda: training.two_relation_task(2, length=2), "length must be at least 3"),
        (lambda: training.mse_loss([[1.0]], [[1.0, 2.0]]), "target has shape"),
        (lambda: training.mse_loss([[1.0]], [[1.0]], [[0.0]]), "positive sum"),
        (lambda: training.mse_loss([[1.0]], [[1.0]], [[1.0, 1.0]]), "weight has shape"),
        (lambda: training.mse_loss([[np.nan]], [[1.0]]), "output .* NaN"),
        (lambda: training.init_params({"W": (2, 2)}, -1.0, seed=0), "std"),
        (lambda: small_run(steps=0), "n_steps"),
    ],
)
def test_bad_input_raises_named_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_record_steps_outside_the_run_are_refused():
    probe = training.previous_token_task(1, seed=0)
    params = training.init_params({"W_Q": (8, 2), "W_K": (8, 2), "W_V": (8, 4)}, 0.5, seed=0)
    with pytest.raises(ValueError, match="record_steps"):
        training.train(training.AttentionModel(), params, training.Adam(), lambda r: probe, 3, probe, record_steps=(5,))


def test_the_training_explorers_steps_are_plain_lists():
    from attnlib.explorers.kinds.training import recorded_steps

    run = small_run()
    probe = training.previous_token_task(2, seed=99)
    d = recorded_steps(run, probe, sequence=1)
    assert d["steps"] == [0, 10, 30] and d["tokens"] == [f"t{i}" for i in range(6)]
    assert all(isinstance(x, float) for x in d["losses"])
    assert np.asarray(d["weights"]).shape == (3, 6, 6) and np.asarray(d["bilinear"]).shape == (3, 8, 8)
    assert np.allclose(np.asarray(d["weights"]).sum(axis=2), 1.0)
    assert d["losses"][-1] == run.final_loss
    assert d["previous"] == [float(training.relation_mass(s.weights, probe, "previous")[0]) for s in run.snapshots]
    with pytest.raises(ValueError, match="sequence must be below"):
        recorded_steps(run, probe, sequence=2)
    unrecorded = training.train(
        training.AttentionModel(), run.final_params, training.Adam(), lambda r: probe, 1, probe
    )
    with pytest.raises(ValueError, match="no recorded steps"):
        recorded_steps(unrecorded, probe)


def test_the_chapters_previous_token_run_learns_the_rotation():
    run = experiments.learn_previous_token(seed=0)
    probe = experiments.previous_token_probe()
    last = run.snapshots[-1]
    assert training.relation_mass(last.weights, probe, "previous")[0] > 0.9
    B = run.final_params["W_Q"] @ run.final_params["W_K"].T
    c, theta, residual = experiments.pair_rotation_fit(B[4:6, 4:6])
    assert abs(theta - 1.0) < 0.1 and residual < 0.1


def test_pair_rotation_fit_rejects_bad_blocks():
    with pytest.raises(ValueError, match="2x2"):
        experiments.pair_rotation_fit(np.eye(3))


def test_head_outcomes_and_the_table():
    runs = experiments.head_count_runs([1], n_heads=2, n_steps=150, record_steps=(0,))
    end, start = experiments.head_outcome(runs[0], 2), experiments.head_outcome(runs[0].snapshots[0], 2)
    assert end.specialised and not start.specialised and end.loss < start.loss
    assert sorted(end.roles) == ["matching", "previous"]
    assert experiments.specialisation_table([end, start]) == {"matching + previous": 1, "none + none": 1}
    # keys and values read different features: the matching head compares requests (queries) with names (keys)
    params, features = runs[0].final_params, experiments.two_relation_probe().features
    h = end.roles.index("matching")
    cols = slice(h * 9, (h + 1) * 9)
    q, k = (experiments.feature_shares(params[n][:, cols], features) for n in ("W_Q", "W_K"))
    assert q["request"] > 0.8 and k["name"] > 0.8


def test_feature_shares_checks_its_input():
    with pytest.raises(ValueError, match="one row per feature"):
        experiments.feature_shares(np.ones((3, 2)), ["n0", "p0"])
    with pytest.raises(ValueError, match="all zeros"):
        experiments.feature_shares(np.zeros((2, 2)), ["n0", "p0"])
