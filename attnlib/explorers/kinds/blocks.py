"""The long-sequence explorer (chapter 15): memory of dense against blocked attention, and the strip of scores per step.

The memory figures come from :mod:`attnlib.cost` (:func:`block_memory_table`, one
entry per setting); the page draws the strip of scores that exists at a step it
chooses, which :meth:`BlockMemoryExplorer.block_at` gives in Python
(:func:`attnlib.blocked.key_block`). Front end: ``static/blocks.js``.

Examples
--------
>>> ex = block_memory_explorer()
>>> ex.result["dense"], ex.result["blocked"]
('64.0 MiB', '6.0 MiB')
>>> ex.n = 131072
>>> ex.result["dense"], ex.block_at(2).keys
('64.0 GiB', (128, 256))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from traitlets import Dict, Int, List, Unicode

from ...blocked import KeyBlock, block_count, key_block
from ...cost import blocked_working_set_bytes, format_bytes, score_matrix_bytes
from ..base import Explorer, InvalidSetting, checked_trait
from ..registry import factory
from ..settings import SettingError, check_choice, check_flag, check_int_range, shown
from ..snapshot import ACCENT_COLOUR, esc, facts, flex

__all__ = [
    "BLOCK_SIZE_CHOICES",
    "DTYPES",
    "D_K",
    "N_CHOICES",
    "BlockMemoryExplorer",
    "block_memory_explorer",
    "block_memory_table",
    "check_block_step",
    "check_dtype",
]

#: Sequence lengths, block sizes and number formats the explorer offers.
N_CHOICES = (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)
BLOCK_SIZE_CHOICES = (1, 16, 32, 64, 128, 256, 512, 1024)
DTYPES = ("float32", "bfloat16")
#: Width of queries, keys and values in the memory figures.
D_K = 64


def block_memory_table(d_k: int = D_K) -> dict[str, dict[str, Any]]:
    """Memory of one head for every setting, from :mod:`attnlib.cost`.

    Keys are ``"n/block_size/dtype"``; each entry holds the bytes of the
    ``n x n`` score matrix and of the blocked working set, the same as text
    (``format_bytes``), their ratio as text and the number of steps.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> row = block_memory_table()["4096/128/float32"]
    >>> row["dense"], row["blocked"], row["ratio"], row["steps"]
    ('64.0 MiB', '6.0 MiB', '10.6', 32)
    """
    table = {}
    for n in N_CHOICES:
        for b in BLOCK_SIZE_CHOICES:
            for dtype in DTYPES:
                dense = score_matrix_bytes(n, dtype=dtype)
                blocked = blocked_working_set_bytes(n, d_k, b, dtype=dtype)
                table[f"{n}/{b}/{dtype}"] = {
                    "dense_bytes": dense,
                    "blocked_bytes": blocked,
                    "dense": format_bytes(dense),
                    "blocked": format_bytes(blocked),
                    "ratio": f"{dense / blocked:.1f}",
                    "steps": block_count(n, b),
                }
    return table


def check_dtype(value: Any) -> str:
    """One of ``DTYPES``.

    Raises
    ------
    ValueError
        ``value`` is not one of the data types of the table; the message (of a ``SettingError``, a ``ValueError``)
        starts with the setting's name.

    Examples
    --------
    >>> check_dtype("bfloat16")
    'bfloat16'
    """
    if not isinstance(value, str) or value not in DTYPES:
        raise SettingError("dtype", f"one of {list(DTYPES)}", shown(value))
    return value


def check_block_step(value: Any, n: int, block_size: int) -> int:
    """A step of the blocked loop: an integer from 1 to the number of blocks of ``block_size`` keys in ``n``.

    Raises
    ------
    ValueError
        ``value`` is not a step from 1 to the number of blocks of ``n`` keys in blocks of ``block_size``; the message
        (of a ``SettingError``, a ``ValueError``) starts with the setting's name.

    Examples
    --------
    >>> check_block_step(32, 4096, 128)
    32
    """
    count = block_count(n, block_size)
    return check_int_range("step", value, 1, count, f"a step from 1 to {count} (n = {n} in blocks of {block_size})")


def blocks_snapshot(
    n: int, block_size: int, dtype: str, d_k: int, causal: bool, memory: Mapping[str, Any], step: int, block: KeyBlock
) -> tuple[str, str]:
    """The memory table, a picture of the chosen step's strip of scores, and the text summary."""
    size = 220
    scale = size / n
    (k0, k1), (r0, r1) = block.keys, block.rows
    where = f"step {step} of {memory['steps']}: keys {k0 + 1} to {k1}, queries {r0 + 1} to {r1}"
    diagonal = f'<line x1="0" y1="0" x2="{size}" y2="{size}" stroke="black" stroke-dasharray="4 3"/>' if causal else ""
    picture = (
        f'<svg width="{size + 40}" height="{size + 40}" viewBox="-30 -10 {size + 40} {size + 40}" role="img" '
        f'aria-label="{esc(f"The {n} x {n} score matrix at {where}.")}">'
        f'<rect x="0" y="0" width="{size}" height="{size}" fill="white" stroke="black"/>'
        f'<rect x="{k0 * scale:.3f}" y="{r0 * scale:.3f}" width="{max(1.0, (k1 - k0) * scale):.3f}" '
        f'height="{max(1.0, (r1 - r0) * scale):.3f}" fill="{ACCENT_COLOUR}"/>{diagonal}'
        f'<text x="{size / 2}" y="{size + 22}" text-anchor="middle" font-size="12">keys</text>'
        f'<text x="-12" y="{size / 2}" text-anchor="middle" font-size="12" transform="rotate(-90 -12 {size / 2})">queries</text>'
        "</svg>"
    )
    rows = [
        ("n \u00d7 n score matrix", memory["dense"]),
        (f"blocked working set ({block_size} keys per step)", memory["blocked"]),
        ("ratio", f"{memory['ratio']}\u00d7 less"),
    ]
    table = (
        '<table class="attnlib-view" data-view="memory">'
        f"<caption>{esc(f'memory of one head, {dtype}, d_k = {d_k}')}</caption>"
        "<tbody>" + "".join(f'<tr><th scope="row">{esc(a)}</th><td data-j="0">{esc(b)}</td></tr>' for a, b in rows) + "</tbody></table>"
    )
    text = (
        f"The dense computation holds all {n:,d}\u00b2 scores at once ({memory['dense']}); the blocked one holds one strip of at "
        f"most {min(block_size, n)} key columns ({memory['blocked']} in all). Shown: {where}."
    )
    summary = "\n".join([text] + [f"{a}: {b}" for a, b in rows])
    return facts(text) + flex(picture, table), summary


class BlockMemoryExplorer(Explorer, kind="blocks", module="blocks.js"):
    """Chapter 15: memory of the n x n score matrix against the blocked working set, and the strip of scores per step."""

    STATE = ("n", "block_size", "dtype", "causal", "step")
    SETTABLE = ("title", "n", "block_size", "dtype", "causal", "step")

    n_choices = List(Int()).tag(sync=True)
    block_choices = List(Int()).tag(sync=True)
    dtypes = List(Unicode()).tag(sync=True)
    d_k = Int(D_K).tag(sync=True)
    table = Dict().tag(sync=True)
    n = checked_trait(4096)
    block_size = checked_trait(128)
    dtype = checked_trait("float32")
    causal = checked_trait(False)
    step = checked_trait(1)

    def __init__(self) -> None:
        super().__init__(
            title="Dense against blocked: memory and the scores that exist",
            n_choices=list(N_CHOICES),
            block_choices=list(BLOCK_SIZE_CHOICES),
            dtypes=list(DTYPES),
            table=block_memory_table(),
            n=4096,
            block_size=128,
            dtype="float32",
            causal=False,
            step=1,
        )

    def _check_n(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("n", value, N_CHOICES)

    def _check_block_size(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_choice("block_size", value, BLOCK_SIZE_CHOICES)

    def _check_dtype(self, value: Any, now: Callable[[str], Any]) -> str:
        return check_dtype(value)

    def _check_causal(self, value: Any, now: Callable[[str], Any]) -> bool:
        return check_flag("causal", value)

    def _check_step(self, value: Any, now: Callable[[str], Any]) -> int:
        return check_block_step(value, now("n"), now("block_size"))

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        # a shorter sequence or a larger block: the step stays within the blocks (the last one)
        count = block_count(now("n"), now("block_size"))
        return {"step": count} if "step" not in values and now("step") > count else {}

    @property
    def result(self) -> dict[str, Any]:
        """The memory figures of the current setting (an entry of ``table``)."""
        return self._result

    def block_at(self, step: int | None = None) -> KeyBlock:
        """The strip of scores at ``step`` (1-based; default the explorer's step), from :func:`attnlib.blocked.key_block`.

        Raises
        ------
        ValueError
            ``step`` is neither ``None`` nor a step of the current setting (an integer from 1 to the number of blocks);
            the message starts with ``step``.
        """
        step = self.step if step is None else step
        try:
            step = check_block_step(step, self.n, self.block_size)
        except SettingError as err:  # a question, not a change: error stays as it is
            raise InvalidSetting(err) from None
        return key_block(self.n, self.n, self.block_size, step - 1, causal=self.causal)

    def _update(self) -> str:
        self._result = dict(self.table[f"{self.n}/{self.block_size}/{self.dtype}"])
        if self.step > self._result["steps"]:  # at construction only: _derived keeps the step in range afterwards
            self._write("step", self._result["steps"])
        self._result["block"] = self.block_at()
        return ""

    def _snapshot(self) -> tuple[str, str]:
        return blocks_snapshot(self.n, self.block_size, self.dtype, self.d_k, self.causal, self._result, self.step, self._result["block"])

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``blockCount`` and ``keyBlock`` (first, middle and last step) for every n and block size, with and without the mask."""
        cases = []
        for n in N_CHOICES:
            for b in BLOCK_SIZE_CHOICES:
                count = block_count(n, b)
                cases.append({"fn": "blockCount", "args": [n, b], "expected": count})
                for step in sorted({1, (count + 1) // 2, count}):
                    for causal in (False, True):
                        ref = key_block(n, n, b, step - 1, causal=causal)
                        expected = {"keys": list(ref.keys), "rows": list(ref.rows)}
                        cases.append({"fn": "keyBlock", "args": [n, b, step, causal], "expected": expected})
        return cases


@factory
def block_memory_explorer() -> BlockMemoryExplorer:
    """Chapter 15: choose n, the block size, the number format and a causal mask; memory of dense against blocked.

    Examples
    --------
    >>> ex = block_memory_explorer()
    >>> ex.result["dense"], ex.result["blocked"]
    ('64.0 MiB', '6.0 MiB')
    >>> ex.n = 131072
    >>> ex.result["dense"], ex.block_at(2).keys
    ('64.0 GiB', (128, 256))
    """
    return BlockMemoryExplorer()
