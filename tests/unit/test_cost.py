"""Memory of the attention score matrix: quadratic in the sequence length."""

import pytest

from attnlib.cost import DTYPE_BYTES, bytes_per_entry, format_bytes, score_matrix_bytes, score_matrix_entries


@pytest.mark.parametrize(
    "n, expected_bytes, text",
    [(4096, 67_108_864, "64.0 MiB"), (8192, 268_435_456, "256.0 MiB"), (131072, 68_719_476_736, "64.0 GiB")],
)
def test_the_closing_chapters_numbers(n, expected_bytes, text):
    assert score_matrix_bytes(n) == expected_bytes == n * n * 4
    assert format_bytes(score_matrix_bytes(n)) == text


def test_doubling_n_quadruples_memory():
    for n in (1, 3, 1000, 4096):
        assert score_matrix_bytes(2 * n) == 4 * score_matrix_bytes(n)


def test_heads_batch_dtype_and_cross_attention_multiply():
    assert score_matrix_entries(10, heads=8, batch=2) == 1600
    assert score_matrix_entries(10, n_keys=20) == 200
    assert score_matrix_bytes(10, dtype="float64", heads=2, batch=3) == 10 * 10 * 8 * 6
    assert score_matrix_bytes(10, dtype="bfloat16") == 200
    assert DTYPE_BYTES["float16"] == bytes_per_entry("float16") == 2


@pytest.mark.parametrize(
    "num, text",
    [
        (0, "0.0 B"), (1023, "1023.0 B"), (1024, "1.0 KiB"), (1024**2 * 1.5, "1.5 MiB"), (1024**4, "1.0 TiB"),
        (1024**7, "1.0 ZiB"), (1024**9, "1024.0 YiB"),
    ],
)
def test_format_bytes(num, text):
    assert format_bytes(num) == text


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: score_matrix_bytes(0), ["n must be a positive integer"]),
        (lambda: score_matrix_bytes(4.5), ["n must be a positive integer"]),
        (lambda: score_matrix_bytes(4, heads=0), ["heads must be a positive integer"]),
        (lambda: score_matrix_bytes(4, batch=-1), ["batch must be a positive integer"]),
        (lambda: score_matrix_bytes(4, n_keys=0), ["n_keys must be a positive integer"]),
        (lambda: score_matrix_bytes(4, dtype="int8"), ["dtype must be one of", "'int8'"]),
        (lambda: bytes_per_entry(4), ["dtype must be one of"]),
        (lambda: format_bytes(-1), ["num_bytes", "non-negative"]),
        (lambda: format_bytes(float("nan")), ["num_bytes"]),
        (lambda: format_bytes(float("inf")), ["num_bytes"]),
        (lambda: format_bytes("10"), ["num_bytes"]),
        (lambda: format_bytes(True), ["num_bytes"]),
        (lambda: format_bytes(10, decimals=-1), ["decimals"]),
    ],
)
def test_bad_input_raises(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)
