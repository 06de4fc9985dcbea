"""Operation counts and the blocked working set (the cost helpers of chapter 15)."""

import numpy as np
import pytest

from attnlib.blocked import chunked_attention
from attnlib.cost import attention_flops, blocked_working_set_bytes, format_bytes, score_matrix_bytes
from attnlib.measure import peak_memory_bytes


@pytest.mark.parametrize(
    "n, dtype, heads, text",
    [
        (4096, "float32", 1, "64.0 MiB"),
        (4096, "bfloat16", 1, "32.0 MiB"),
        (8192, "float32", 1, "256.0 MiB"),
        (32768, "float32", 1, "4.0 GiB"),
        (131072, "bfloat16", 1, "32.0 GiB"),
        (4096, "float32", 32, "2.0 GiB"),
        (131072, "float32", 32, "2.0 TiB"),
        (131072, "float64", 1, "128.0 GiB"),
        (4096, "float16", 1, "32.0 MiB"),
    ],
)
def test_known_score_matrix_sizes(n, dtype, heads, text):
    assert format_bytes(score_matrix_bytes(n, dtype=dtype, heads=heads)) == text
    assert score_matrix_bytes(4096) == 64 * 2**20


def test_flops_count_every_multiply_and_add():
    # Q K^T: n*n dot products of length d_k; A V: n*d_v of length n; 2 operations per term
    n, d_k, d_v = 5, 3, 2
    assert attention_flops(n, d_k, d_v=d_v) == 2 * (n * n * d_k + n * d_v * n) == 250
    assert attention_flops(4096, 64) == 4 * 4096**2 * 64
    assert attention_flops(8192, 64, heads=32) == 4 * attention_flops(4096, 64, heads=32)
    assert attention_flops(10, 4, n_keys=20) == 2 * 10 * 20 * 8


def test_blocked_working_set_is_linear_in_n_and_matches_chunked_attention():
    for n in (1024, 4096, 16384):
        assert blocked_working_set_bytes(2 * n, 64, 128) == 2 * blocked_working_set_bytes(n, 64, 128)
    assert blocked_working_set_bytes(4096, 64, 128, dtype="float32") == 4 * (2 * 4096 * 128 + 2 * 4096 * 64 + 2 * 4096)
    assert blocked_working_set_bytes(4096, 64, 128, heads=32, dtype="bfloat16") == 16 * blocked_working_set_bytes(
        4096, 64, 128, dtype="float32"
    )
    # a block wider than the keys is just all keys
    assert blocked_working_set_bytes(100, 8, 1000) == blocked_working_set_bytes(100, 8, 100)
    # the model predicts what tracemalloc measures for chunked_attention (float64)
    rng = np.random.default_rng(3)
    n, d, b = 2000, 32, 100
    Q, K, V = (rng.standard_normal((n, d)) for _ in range(3))
    measured = peak_memory_bytes(chunked_attention, Q, K, V, block_size=b)
    predicted = blocked_working_set_bytes(n, d, b, dtype="float64", input_copies=True)
    assert predicted == 8 * (2 * n * b + 2 * n * d + 2 * n + 3 * n * d)
    assert abs(measured / predicted - 1) < 0.1, (measured, predicted)


@pytest.mark.parametrize(
    "call, words",
    [
        (lambda: attention_flops(0, 64), ["n must be a positive integer"]),
        (lambda: attention_flops(8, 0), ["d_k must be a positive integer"]),
        (lambda: attention_flops(8, 8, heads=-2), ["heads must be a positive integer"]),
        (lambda: attention_flops(8, 8, d_v=1.5), ["d_v must be a positive integer"]),
        (lambda: blocked_working_set_bytes(8, 8, 0), ["block_size must be a positive integer"]),
        (lambda: blocked_working_set_bytes(8, 8, 4, dtype="int8"), ["dtype must be one of"]),
        (lambda: blocked_working_set_bytes(8, 8, 4, n_keys=0), ["n_keys must be a positive integer"]),
        (lambda: blocked_working_set_bytes(8, 8, 4, input_copies="yes"), ["input_copies must be True or False"]),
    ],
)
def test_bad_input_raises(call, words):
    with pytest.raises(ValueError) as info:
        call()
    for w in words:
        assert w in str(info.value)


# --- the memory-traffic model (issue 25) -------------------------------------------------------


def test_traffic_model_counts_passes_over_what_does_not_fit():
    from attnlib.cost import BLOCK_PASSES, DENSE_PASSES, attention_traffic

    mib, n, d = 2**20, 8192, 64
    square = n * n * 8
    inputs = 4 * n * d * 8
    assert attention_traffic("dense", n, d, mib).total == sum(DENSE_PASSES) * square + inputs
    assert attention_traffic("dense", 256, d, mib).total == 4 * 256 * d * 8  # 512 KiB of scores fit in 1 MiB
    blocked = attention_traffic("key_blocked", n, d, mib, block_size=128)
    assert blocked.total == sum(BLOCK_PASSES) * square + inputs + 7 * (n // 128) * n * d * 8
    # tiles that fit: each query tile reads K and V once, so the n^2 term is (n / q) * 2 n d w
    tiled = attention_traffic("tiled", n, d, mib, query_tile=128, key_tile=256)
    assert tiled.written == n * d * 8
    assert tiled.read == 3 * n * d * 8 + (n // 128 - 1) * 2 * n * d * 8
    assert blocked.total / tiled.total > 15
    # doubling n quadruples the quadratic part
    big = attention_traffic("tiled", 2 * n, d, mib, query_tile=128, key_tile=256)
    assert 3.9 < big.total / tiled.total < 4.1


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"method": "fast"}, ["method must be one of"]),
        ({"cache_bytes": 0}, ["cache_bytes must be a positive integer"]),
        ({"query_tile": 2.5}, ["query_tile must be a positive integer"]),
        ({"dtype": "int8"}, ["dtype must be one of"]),
    ],
)
def test_traffic_model_names_bad_arguments(kwargs, words):
    from attnlib.cost import attention_traffic

    args = {"method": "tiled", "n": 64, "d": 8, "cache_bytes": 2**20, **kwargs}
    with pytest.raises(ValueError) as info:
        attention_traffic(**args)
    for w in words:
        assert w in str(info.value)


def test_cache_sizes_read_what_the_system_reports(tmp_path):
    """Chapter 15 prints the caches of the machine that runs it, read at run time (issue 44)."""
    from attnlib.measure import CacheLevel, cache_sizes

    def cache(index, level, kind, size, shared):
        d = tmp_path / f"index{index}"
        d.mkdir()
        for name, text in (("level", f"{level}\n"), ("type", f"{kind}\n"), ("size", f"{size}\n"), ("shared_cpu_list", f"{shared}\n")):
            (d / name).write_text(text)

    cache(0, 1, "Data", "48K", "0")
    cache(1, 1, "Instruction", "32K", "0")
    cache(2, 2, "Unified", "2048K", "0-1")
    cache(3, 3, "Unified", "36M", "0-7,16-23")
    (tmp_path / "index4").mkdir()  # described only in part: left out
    (tmp_path / "index4" / "level").write_text("4\n")
    assert cache_sizes(tmp_path) == [
        CacheLevel(1, "Data", 48 * 2**10, 1),
        CacheLevel(1, "Instruction", 32 * 2**10, 1),
        CacheLevel(2, "Unified", 2 * 2**20, 2),
        CacheLevel(3, "Unified", 36 * 2**20, 16),
    ]
    assert cache_sizes(tmp_path / "missing") == []
