"""The induction-head model of chapter 17: its backward pass, its data and its scores.

Cheap by design: tiny models and hand-made attention patterns; the chapter's trained numbers are
checked through its executed outputs (tests/book/test_prose_numbers.py, tests/support/expected_outputs.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import core, induction
from attnlib.backward import central_difference, relative_error
from attnlib.training import Adam

TINY = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2)


@pytest.mark.parametrize("n_heads", [1, 2])
def test_every_gradient_matches_finite_differences(n_heads):
    model = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=n_heads)
    params = model.init(seed=3)
    batch = induction.repeated_tokens(3, 5, (2, 3), seed=4)
    _, grads, _ = model.loss_and_gradients(params, batch)
    assert list(grads) == [f"d{name}" for name in model.shapes()]
    for name in params:

        def loss(w, name=name):
            return model.loss_and_gradients({**params, name: w}, batch)[0]

        numeric = central_difference(loss, params[name])
        assert relative_error(grads[f"d{name}"], numeric) < 1e-6, name


def test_forward_is_the_residual_stream_of_two_attention_layers():
    params = TINY.init(seed=1)
    batch = induction.token_batch([[1, 2, 3, 1], [4, 0]], 5)
    fwd = TINY.forward(params, batch)
    x = params["E"][batch.tokens] + params["P"][batch.positions]
    for layer in (1, 2):
        w = [params[f"{m}{layer}"] for m in ("W_Q", "W_K", "W_V", "W_O")]
        out, _ = core.multi_head_attention(x, x, *w, n_heads=2, mask=batch.mask)
        x = x + out
    np.testing.assert_allclose(fwd.logits, x @ params["W_U"], atol=1e-13)
    # each sequence sees only itself and its past: the second sequence alone gives the same rows
    alone = TINY.forward(params, induction.token_batch([[4, 0]], 5))
    np.testing.assert_allclose(fwd.logits[4:], alone.logits, atol=1e-13)
    assert np.all(fwd.weights[:, :, 0, 1:] == 0.0)


def test_ablation_removes_exactly_that_heads_output():
    params = TINY.init(seed=2)
    batch = induction.token_batch([[0, 1, 2, 0, 1, 2]], 5)
    full = TINY.forward(params, batch)
    cut = TINY.forward(params, batch, ablate=[(1, 0)])
    head = full.layers[0].heads[0]
    removed = head.output @ params["W_O1"][:2]
    np.testing.assert_allclose(cut.residuals[1], full.residuals[1] - removed, atol=1e-13)
    assert cut.ablated == ((1, 0),)
    # zeroing W_O's rows of that head is the same ablation
    zeroed = {**params, "W_O1": params["W_O1"].copy()}
    zeroed["W_O1"][:2] = 0.0
    np.testing.assert_allclose(TINY.forward(zeroed, batch).logits, cut.logits, atol=1e-12)


def test_cross_entropy_and_its_gradient():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(4, 3))
    targets = np.array([2, 0, -1, 1])
    losses, grad = induction.cross_entropy(logits, targets)
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(losses[[0, 1, 3]], -np.log(p[[0, 1, 3], [2, 0, 1]]), atol=1e-14)
    assert losses[2] == 0.0 and np.all(grad[2] == 0.0)
    numeric = central_difference(lambda z: float(induction.cross_entropy(z, targets)[0].sum()), logits)
    assert relative_error(grad, numeric) < 1e-8
    # huge logits do not overflow
    losses, _ = induction.cross_entropy([[1e300, 0.0]], [1])
    assert losses[0] == 1e300


def test_repeated_tokens_repeat_and_the_halves_are_the_right_rows():
    batch = induction.repeated_tokens(20, 7, (2, 5), seed=0)
    assert set(batch.halves.tolist()) <= {2, 3, 4, 5} and len(set(batch.halves.tolist())) > 1
    for start, half in zip(batch.starts, batch.halves):
        seq = batch.tokens[start : start + 2 * half]
        assert np.array_equal(seq[:half], seq[half:])
        assert batch.first_half[start : start + 2 * half].tolist() == [True] * half + [False] * half
        assert batch.second_half[start : start + 2 * half].tolist() == [False] * half + [True] * (half - 1) + [False]
    # every second-half row's next token is the one that followed the earlier occurrence
    rows = np.flatnonzero(batch.second_half)
    half = np.repeat(batch.halves, batch.lengths)[rows]
    assert np.array_equal(batch.targets[rows], batch.tokens[rows - half + 1])
    assert np.array_equal(induction.repeated_tokens(20, 7, (2, 5), seed=0).tokens, batch.tokens)


def test_previous_token_score_on_hand_made_patterns():
    batch = induction.token_batch([[0, 1, 2, 3], [1, 1]], 4)
    n = batch.rows
    previous = np.zeros((n, n))
    previous[0, 0] = previous[4, 4] = 1.0
    for r in (1, 2, 3, 5):
        previous[r, r - 1] = 1.0
    itself = np.eye(n)
    scores = induction.previous_token_score(np.stack([previous, itself]), batch)
    assert scores.tolist() == [1.0, 0.0]


def test_prefix_matching_score_on_hand_made_patterns():
    # a b c a b c: rows 3, 4, 5 are the repeat; the token after the earlier occurrence is 1, 2, 3
    batch = induction.token_batch([[0, 1, 2, 0, 1, 2]], 3, halves=[3])
    induct = np.zeros((6, 6))
    for r in range(3):
        induct[r, r] = 1.0
    induct[3, 1] = induct[4, 2] = induct[5, 3] = 1.0
    same_token = np.zeros((6, 6))  # attends to the earlier occurrence itself: no prefix matching
    for r in range(3):
        same_token[r, r] = 1.0
        same_token[r + 3, r] = 1.0
    scores = induction.prefix_matching_score(np.stack([induct, same_token]), batch)
    assert scores.tolist() == [1.0, 0.0]
    assert induction.previous_token_score(induct, batch)[0] == 0.0  # the two scores see different heads
    with pytest.raises(ValueError, match="no repeated sequence"):
        induction.prefix_matching_score(induct, induction.token_batch([[0, 1, 2, 0, 1, 2]], 3))


def test_composition_scores_see_a_key_that_reads_what_layer_one_wrote():
    model = induction.InductionModel(vocab_size=4, n_positions=4, d_model=4, n_heads=1)
    p = {name: np.zeros(shape) for name, shape in model.shapes().items()}
    # layer 1 writes into dimensions 2, 3 only; layer 2's keys read dimensions 2, 3, its queries 0, 1
    p["W_V1"][:2, :2] = np.eye(2)
    p["W_O1"][:2, 2:] = np.eye(2)
    p["W_Q2"][:2, :2] = np.eye(2)
    p["W_K2"][2:, :2] = np.eye(2)
    p["W_V2"][:2, :2] = np.eye(2)
    p["W_O2"][:2, :2] = np.eye(2)
    s = induction.composition_scores(model, p)
    assert s["K"][0, 0] == pytest.approx(1 / np.sqrt(2))  # rank 2 against rank 2: the largest score
    assert s["Q"][0, 0] == 0.0 and s["V"][0, 0] == 0.0


def test_drop_step_finds_the_first_smoothed_crossing_of_a_fixed_reference():
    second = np.where(np.arange(100) < 60, 3.0, 0.1)
    assert induction.drop_step(second, 3.0, ratio=0.5, window=1) == 60
    # the running mean of 20 steps crosses 1.5 when 11 of its 20 steps are low
    assert induction.drop_step(second, 3.0, ratio=0.5, window=20) == 70
    assert induction.drop_step(np.full(100, 3.0), 3.0) == -1
    spike = second.copy()
    spike[10] = 0.0  # one lucky batch does not count
    assert induction.drop_step(spike, 3.0, window=20) == 70
    # the reference is fixed: a higher one is reached earlier, whatever the first half did
    slope = np.linspace(3.5, 0.0, 100)
    assert induction.drop_step(slope, np.log(32), window=1) < induction.drop_step(slope, 3.0, window=1)
    with pytest.raises(ValueError, match="reference"):
        induction.drop_step(slope, 0.0)


def _bayes_by_enumeration(vocab_size, low, high):
    """The best first-half loss by brute force: every sequence with its chance, and the predictive law of every context."""
    from itertools import permutations

    weights = {t: 1 / t for t in range(low, high + 1)}
    norm = sum(weights.values())
    sequences = []  # (chance, tokens of the whole sequence, half length)
    for t, w in weights.items():
        firsts = list(permutations(range(vocab_size), t))
        sequences += [(w / norm / len(firsts), first + first, t) for first in firsts]
    predictive = {}  # context -> {next token: chance}
    for chance, seq, _ in sequences:
        for i in range(len(seq) - 1):
            law = predictive.setdefault(seq[: i + 1], {})
            law[seq[i + 1]] = law.get(seq[i + 1], 0.0) + chance
    total = rows = 0.0
    by_position = {t: np.zeros(2 * t - 1) for t in weights}
    for chance, seq, t in sequences:
        for i in range(2 * t - 1):
            law = predictive[seq[: i + 1]]
            loss = -np.log(law[seq[i + 1]] / sum(law.values()))
            by_position[t][i] += loss * chance / (weights[t] / norm)
            if i < t:
                total, rows = total + chance * loss, rows + chance
    return total / rows, by_position


@pytest.mark.parametrize(("vocab_size", "half_lengths"), [(5, (2, 4)), (4, (2, 3)), (5, 3), (6, (3, 5))])
def test_best_losses_equal_the_bayes_predictor_found_by_enumeration(vocab_size, half_lengths):
    mean, by_position = _bayes_by_enumeration(vocab_size, *((half_lengths,) * 2 if isinstance(half_lengths, int) else half_lengths))
    assert induction.best_first_half_loss(vocab_size, half_lengths) == pytest.approx(mean, rel=1e-12)
    for t, losses in by_position.items():
        np.testing.assert_allclose(induction.best_loss_by_position(vocab_size, half_lengths, t), losses, atol=1e-12)


def test_the_best_first_half_loss_is_what_the_data_let_a_predictor_reach():
    """Chapter 17's data, sampled: the Bayes predictor's first-half loss on a large batch is the exact value."""
    vocab, halves = 32, (2, 12)
    best = induction.best_first_half_loss(vocab, halves)
    assert best == pytest.approx(3.125515, abs=1e-6) and best < np.log(vocab)
    batch = induction.repeated_tokens(4000, vocab, halves, seed=5)
    start = induction.repeat_start_chance(halves)
    rows = np.flatnonzero(batch.first_half)
    i = batch.index[rows]
    new = batch.targets[rows] != batch.tokens[batch.starts[np.repeat(np.arange(batch.lengths.size), batch.lengths)][rows]]
    # a new token: one of the vocab - 1 - i not seen, sharing 1 - start[i]; else t_0 with start[i]
    with np.errstate(divide="ignore"):  # each branch is infinite only where the other one is taken
        loss = np.where(new, np.log(vocab - 1 - i) - np.log1p(-start[i]), -np.log(start[i]))
    assert loss.mean() == pytest.approx(best, abs=0.01)
    # the halves come with the chances half_length_chances gives
    lengths, chances = induction.half_length_chances(halves)
    seen = np.bincount(batch.halves, minlength=13)[2:]
    np.testing.assert_allclose(seen / seen.sum(), chances, atol=0.02)


def test_repeat_start_chance_by_hand():
    np.testing.assert_allclose(induction.repeat_start_chance((2, 4)), [0.0, 6 / 13, 4 / 7, 1.0])
    assert induction.repeat_start_chance(3).tolist() == [0.0, 0.0, 1.0]  # one length: the repeat comes at its end
    chances = induction.repeat_start_chance((2, 12))
    assert chances[11] == 1.0 and 0.19 < chances[1:11].min() and chances[1:11].max() < 0.53
    lengths, law = induction.half_length_chances((2, 12))
    assert lengths.tolist() == list(range(2, 13)) and law.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(law * lengths, law[0] * 2)  # proportional to 1 / T


def test_token_circuits_are_the_products_of_the_heads_matrices():
    params = TINY.init(seed=5)
    cols = slice(2, 4)  # head 1 of two, d_head = 2
    ov = params["W_V2"][:, cols] @ params["W_O2"][cols, :]
    np.testing.assert_allclose(induction.token_ov_circuit(TINY, params, layer=2, head=1), params["E"] @ ov @ params["W_U"])
    qk = params["W_Q2"][:, cols] @ params["W_K2"][:, cols].T  # W_QK = W_Q W_K^T, as chapter 14's A_bil
    ov1 = params["W_V1"][:, :2] @ params["W_O1"][:2, :]
    np.testing.assert_allclose(
        induction.token_key_composition(TINY, params, head1=0, head2=1), params["E"] @ qk @ (params["E"] @ ov1).T / np.sqrt(2)
    )
    with pytest.raises(ValueError, match="layer"):
        induction.token_ov_circuit(TINY, params, layer=3)


def test_copying_score_of_known_matrices():
    assert induction.copying_score(np.eye(4)) == induction.CopyingScore(1.0, 1.0)
    assert induction.copying_score(-3 * np.eye(4)).eigenvalue == -1.0
    swap = np.eye(4)[[1, 0, 3, 2]]  # every token raises another one's logit
    assert induction.copying_score(swap) == induction.CopyingScore(0.0, 0.0)
    rng = np.random.default_rng(0)
    m = rng.normal(size=(6, 6)) + 5 * np.eye(6)
    score = induction.copying_score(m)
    lam = np.linalg.eigvals(m)
    assert score.eigenvalue == pytest.approx(np.trace(m) / np.abs(lam).sum())
    assert induction.copying_score(m.T).eigenvalue == pytest.approx(score.eigenvalue)  # Elhage et al.'s columns: the same
    assert score.diagonal == np.mean(m.argmax(axis=1) == np.arange(6))
    with pytest.raises(ValueError, match="no nonzero eigenvalue"):
        induction.copying_score(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="square"):
        induction.copying_score(np.ones((2, 3)))


def test_text_to_tokens():
    assert induction.letters_to_tokens("Zz a!") == ([25, 25, 0], ["z", "z", "a"])
    assert induction.words_to_tokens("One two, one THREE")[0] == [0, 1, 0, 2]
    ids, _ = induction.words_to_tokens(" ".join(f"w{c}" for c in "abc"), vocab_size=2)
    assert ids == [0, 1, 0]


def test_a_few_training_steps_lower_the_loss_and_are_seeded():
    model = induction.InductionModel(vocab_size=6, n_positions=8, d_model=8, n_heads=2)
    probe = induction.repeated_tokens(4, 6, (2, 4), seed=9)
    runs = [induction.train_induction(model, model.init(0), Adam(lr=0.02), 8, 4, (2, 4), probe, seed=1) for _ in range(2)]
    assert runs[0].losses[-1] < runs[0].losses[0]
    assert np.array_equal(runs[0].losses, runs[1].losses)
    with pytest.raises(ValueError, match="positions"):
        induction.train_induction(model, model.init(0), Adam(), 2, 4, (2, 5), probe)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: induction.token_batch([[0, 7]], 5), "vocab_size - 1"),
        (lambda: induction.token_batch([[0, 1, 0, 2]], 5, halves=[2]), "repeats"),
        (lambda: induction.repeated_tokens(2, 5, (4, 3)), "shortest <= longest"),
        (lambda: TINY.forward(TINY.init(0), induction.token_batch([list(range(5)) * 2], 5)), "6 positions"),
        (lambda: TINY.forward(TINY.init(0), induction.token_batch([[0]], 5), ablate=[(3, 0)]), "layer"),
        (lambda: TINY.forward({**TINY.init(0), "E": np.ones((4, 4))}, induction.token_batch([[0]], 5)), "params\\['E'\\]"),
        (lambda: induction.InductionModel(d_model=6, n_heads=4), "n_heads"),
    ],
)
def test_odd_input_is_refused_by_name(call, match):
    with pytest.raises(ValueError, match=match):
        call()


# ---- PortableRandom: the generator the live training explorer's JavaScript reproduces ----------------------


def test_portable_random_draws_are_repeatable_and_differ_between_seeds():
    a, b, c = induction.PortableRandom(5), induction.PortableRandom(5), induction.PortableRandom(6)
    draws = [a.uint32() for _ in range(50)]
    assert draws == [b.uint32() for _ in range(50)]
    assert draws != [c.uint32() for _ in range(50)]
    assert all(0 <= d < 2**32 for d in draws)
    u = [induction.PortableRandom(s).random() for s in range(200)]
    assert all(0.0 <= x < 1.0 for x in u) and 0.35 < np.mean(u) < 0.65
    # a seed beyond one 32-bit word folds every word in: 2**32 + 5 is not 5
    assert induction.PortableRandom(2**32 + 5).uint32() != induction.PortableRandom(5).uint32()


def test_portable_random_feeds_init_batches_and_training_in_their_documented_order():
    m = induction.InductionModel(vocab_size=6, n_positions=8, d_model=4, n_heads=2)
    p1, p2 = m.init(induction.PortableRandom(3)), m.init(induction.PortableRandom(3))
    assert all(np.array_equal(p1[k], p2[k]) for k in p1)
    normals = np.concatenate([v.ravel() for v in p1.values()]) * 2.0  # std 1 / sqrt(4)
    assert abs(normals.mean()) < 0.2 and 0.8 < normals.std() < 1.2
    b = induction.repeated_tokens(5, 6, (2, 3), seed=induction.PortableRandom(1), n_positions=8)
    assert set(b.halves.tolist()) <= {2, 3} and np.all(b.starts_at + 2 * b.halves <= 8)
    for k, start in enumerate(b.starts):
        seq = b.tokens[start : start + b.lengths[k]]
        half = b.halves[k]
        assert np.array_equal(seq[:half], seq[half:]) and len(set(seq[:half].tolist())) == half
    probe = induction.repeated_tokens(2, 6, 3, seed=0)
    runs = [induction.train_induction(m, p1, Adam(lr=0.01), 3, 4, (2, 3), probe, seed=induction.PortableRandom(9)) for _ in range(2)]
    assert np.array_equal(runs[0].losses, runs[1].losses)


def test_portable_random_refuses_a_seed_that_is_not_a_non_negative_integer():
    for bad in (-1, 2.5, "3", None):
        with pytest.raises(ValueError, match="seed"):
            induction.PortableRandom(bad)


# ---- the one-layer model (exercise 17.3's contrast, and the live explorer's "1 layer") ----------------------


def test_one_layer_model_has_layer_one_only_and_its_gradients_match_finite_differences():
    m = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_heads=2, n_layers=1)
    p = m.init(0)
    assert sorted(p) == ["E", "P", "W_K1", "W_O1", "W_Q1", "W_U", "W_V1"]
    batch = induction.repeated_tokens(2, 5, (2, 3), seed=1)
    f = m.forward(p, batch)
    assert f.weights.shape == (1, 2, batch.rows, batch.rows) and len(f.residuals) == 2
    loss, g, _ = m.loss_and_gradients(p, batch)
    for name in ("W_Q1", "W_O1", "E", "W_U"):

        def f_of(w, name=name):
            return m.loss_and_gradients({**p, name: w}, batch)[0]

        numeric = central_difference(f_of, p[name])
        assert relative_error(g[f"d{name}"], numeric) < 1e-6, name
    probe = induction.repeated_tokens(2, 5, 3, seed=0)
    run = induction.train_induction(m, p, Adam(lr=0.01), 3, 4, (2, 3), probe, seed=2)
    assert run.losses.shape == (3,)


def test_one_layer_model_refuses_what_needs_a_second_layer_naming_it():
    m = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4, n_layers=1)
    p = m.init(0)
    batch = induction.repeated_tokens(2, 5, 2, seed=1)
    with pytest.raises(ValueError, match=r"ablate\[0\]\[0\] must be layer 1"):
        m.forward(p, batch, ablate=[(2, 0)])
    with pytest.raises(ValueError, match="layer must be layer 1"):
        induction.token_ov_circuit(m, p, layer=2)
    for fn in (induction.composition_scores, induction.token_key_composition):
        with pytest.raises(ValueError, match="model has one layer"):
            fn(m, p)
    with pytest.raises(ValueError, match="n_layers must be 1 or 2"):
        induction.InductionModel(n_layers=3)
    two = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4)
    with pytest.raises(ValueError, match="params has no 'W_Q2'"):
        two.forward(p, batch)
