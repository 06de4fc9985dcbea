"""The induction explorer (chapter 17): the trained two-layer model on the reader's own text.

The reader types letters or words; each is mapped to a token id
(:func:`attnlib.induction.letters_to_tokens`, :func:`attnlib.induction.words_to_tokens`),
and the model the chapter trained shows both layers' attention and its prediction of the
next token at every position. The page receives the trained weights as data (rounded to
:data:`DIGITS` significant digits, the same numbers in Python and in the browser) and
runs the forward pass itself (``static/induction.js``, held to
:meth:`attnlib.induction.InductionModel.forward` by the golden cases).

Examples
--------
>>> from attnlib.induction import InductionModel
>>> model = InductionModel(vocab_size=26, n_positions=48, d_model=8)
>>> ex = induction_explorer(model.init(0), model)
>>> ex.mode = "letters"
>>> ex.text = "abcabc"
>>> ex.result["labels"], len(ex.result["layers"])
(['a', 'b', 'c', 'a', 'b', 'c'], 2)
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
from traitlets import Dict, List, Unicode

from ... import induction
from ..base import Explorer, checked_trait
from ..registry import factory
from ..settings import SettingError, check_text, shown
from ..snapshot import facts, flex, fmt, table_html

__all__ = ["DIGITS", "MODES", "SEPARATORS", "InductionExplorer", "induction_data", "induction_explorer", "induction_view"]

#: How the reader's text becomes tokens.
MODES = ("letters", "words")
#: Significant digits of the exported weights.
DIGITS = 7
#: The longest text the explorer takes (the model reads its first ``n_positions`` tokens).
MAX_TEXT = 2000
#: The text the explorer starts with.
START_TEXT = "the cat sat on the mat"
#: Characters that only separate words and are never reported as left out (whitespace and ASCII punctuation).
SEPARATORS = " \t\n\r\f\v" + string.punctuation
#: How many left-out characters the note names (the rest are counted).
NAMED_DROPPED = 12


def induction_data(params: Mapping[str, Any], model: induction.InductionModel) -> dict[str, Any]:
    """The model's weights as plain lists (rounded to :data:`DIGITS` significant digits) and its sizes.

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.

    Examples
    --------
    >>> m = induction.InductionModel(vocab_size=5, n_positions=6, d_model=4)
    >>> d = induction_data(m.init(0), m)
    >>> d["n_heads"], len(d["E"]), len(d["W_U"][0])
    (1, 5, 5)
    """
    if not isinstance(model, induction.InductionModel):
        raise ValueError(f"model must be an InductionModel; got {type(model).__name__}")
    p = model._params(params)
    out: dict[str, Any] = {name: [[float(f"{v:.{DIGITS}g}") for v in row] for row in p[name]] for name in model.shapes()}
    out.update(vocab_size=model.vocab_size, n_positions=model.n_positions, d_model=model.d_model, n_heads=model.n_heads)
    return out


def _model_of(data: Mapping[str, Any]) -> tuple[induction.InductionModel, dict[str, np.ndarray]]:
    model = induction.InductionModel(data["vocab_size"], data["n_positions"], data["d_model"], data["n_heads"])
    return model, {name: np.array(data[name], dtype=float) for name in model.shapes()}


def _tokens(text: str, mode: str, vocab_size: int) -> tuple[list[int], list[str]]:
    if mode == "letters":
        return induction.letters_to_tokens(text, vocab_size)
    return induction.words_to_tokens(text, vocab_size)


def _label_of(token: int, ids: list[int], labels: list[str], mode: str) -> str:
    """The text of a predicted token: a letter, a word of the text with that id, or the id itself."""
    if mode == "letters" and token < 26:
        return chr(ord("a") + token)
    if mode == "words" and token in ids:
        return labels[ids.index(token)]
    return f"#{token}"


def _dropped(text: str) -> list[str]:
    """The characters of the lowered text the model cannot read (not a to z, not a separator), each once, in order."""
    seen: dict[str, None] = {}
    for c in text.lower():
        if not ("a" <= c <= "z") and c not in SEPARATORS:
            seen.setdefault(c, None)
    return list(seen)


def _dropped_note(dropped: list[str], mode: str) -> str:
    if not dropped:
        return ""
    named = " ".join(dropped[:NAMED_DROPPED]) + (f" and {len(dropped) - NAMED_DROPPED} more" if len(dropped) > NAMED_DROPPED else "")
    split = ", and they split words" if mode == "words" else ""
    return (
        f"Left out: {named}. The model reads only the letters a to z (capitals as small letters): accented"
        f" letters, digits, emoji and other symbols are skipped{split}."
    )


def _predicted_note(predicted: list[int], labels: list[str], mode: str, vocab: int) -> str:
    unknown = sorted({t for t, lab in zip(predicted, labels) if lab.startswith("#")})
    if not unknown:
        return ""
    names = ", ".join(f"#{t}" for t in unknown)
    if mode == "letters":
        return (
            f"{names}: a token id that no letter has. The model knows {vocab} token ids; a to z are 0 to 25,"
            " so a prediction above 25 is a token you cannot type."
        )
    return (
        f"{names}: a token id that no word of your text has. Words get the ids 0, 1, 2, ... in the order they first"
        f" appear (the model knows {vocab} ids), so the model predicts a word that is not in your text."
    )


def _wrapped_note(ids: list[int], labels: list[str], mode: str, vocab: int) -> str:
    """Say when two different words (or letters) of the shown text share a token id, because the ids wrapped."""
    first: dict[int, str] = {}
    distinct: list[str] = []
    shared: list[tuple[str, str, int]] = []
    for t, lab in zip(ids, labels):
        if lab not in distinct:
            distinct.append(lab)
        earlier = first.setdefault(t, lab)
        if earlier != lab and all(s[0] != lab for s in shared):
            shared.append((lab, earlier, t))
    if not shared:
        return ""
    later, earlier, t = shared[0]
    unit = "words" if mode == "words" else "letters"
    more = f" (and {len(shared) - 1} more such pairs)" if len(shared) > 1 else ""
    return (
        f"Your text has {len(distinct)} distinct {unit}, but the model knows only {vocab} token ids, so the ids start"
        f' again from 0: "{later}" and "{earlier}" are the same token (id {t}) to the model{more}, and it predicts'
        " as if the later one repeated the earlier."
    )


def induction_view(data: Mapping[str, Any], text: str, mode: str) -> dict[str, Any]:
    """What the explorer shows for ``text``: tokens, both layers' attention, and the prediction at every position.

    The text is cut after the model's ``n_positions`` tokens (``cut`` says how
    many were left out). ``layers[l][h]`` is head ``h`` of layer ``l + 1``;
    ``predicted`` and ``probability`` are the most likely next token at every
    position and its probability; ``predicted_labels`` its text (``#k`` for
    a token id that no letter or word of the text has). ``dropped`` are the
    characters the model cannot read (accents, digits, emoji, ...; not
    whitespace or ASCII punctuation), ``dropped_note`` says so to the reader
    ``predicted_note`` explains the ``#k`` predictions shown and
    ``wrapped_note`` says when two different words (or letters) share a token
    id because the ids started again from 0, so that the model takes the later
    one for a repeat (each ``""`` when there is nothing to say).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    model, params = _model_of(data)
    ids, labels = _tokens(text, mode, model.vocab_size)
    cut = max(0, len(ids) - model.n_positions)
    ids, labels = ids[: model.n_positions], labels[: model.n_positions]
    dropped = _dropped(text)
    out: dict[str, Any] = {"ids": ids, "labels": labels, "cut": cut, "dropped": dropped, "dropped_note": _dropped_note(dropped, mode)}
    out["wrapped_note"] = _wrapped_note(ids, labels, mode, model.vocab_size)
    if not ids:
        out.update(layers=[], predicted=[], probability=[], predicted_labels=[], predicted_note="")
        return out
    fwd = model.forward(params, induction.token_batch([ids], model.vocab_size))
    z = fwd.logits - fwd.logits.max(axis=1, keepdims=True)
    probs = np.exp(z) / np.exp(z).sum(axis=1, keepdims=True)
    predicted = probs.argmax(axis=1)
    out["layers"] = fwd.weights
    out["predicted"] = [int(t) for t in predicted]
    out["probability"] = [float(probs[i, t]) for i, t in enumerate(predicted)]
    out["predicted_labels"] = [_label_of(int(t), ids, labels, mode) for t in predicted]
    out["predicted_note"] = _predicted_note(out["predicted"], out["predicted_labels"], mode, model.vocab_size)
    return out


def _forward_case(data: Mapping[str, Any], ids: list[int]) -> dict[str, Any]:
    model, params = _model_of(data)
    fwd = model.forward(params, induction.token_batch([ids], model.vocab_size))
    return {"weights": fwd.weights.tolist(), "logits": fwd.logits.tolist()}


def _check_model(model: Any) -> induction.InductionModel:
    if not isinstance(model, induction.InductionModel):
        raise SettingError("model", "an attnlib.induction.InductionModel (or None, for the chapter's model)", shown(model))
    return model


def _checked_data(params: Any, model: induction.InductionModel) -> dict[str, Any]:
    try:
        return induction_data(params, model)
    except ValueError as exc:
        raise SettingError("params", "the model's parameters, a dict of its matrices (or None)", f"{shown(params)} ({exc})") from None


class InductionExplorer(Explorer, kind="induction", module="induction.js"):
    """Chapter 17: type a text and watch a two-layer model's attention and predictions.

    ``params`` and ``model`` are the weights to show; without them, the chapter's model before
    training (:func:`induction_explorer` without arguments gives it after training).

    Raises
    ------
    ValueError
        ``params`` is neither ``None`` nor a dict of the model's matrices; ``model`` is neither ``None`` nor the object
        it names; ``text`` is not a text (a ``str``); ``mode`` is not one of the values it may take. The error is an
        ``InvalidSetting`` (a ``ValueError``) whose message starts with the argument's name.
    """

    STATE = ("text", "mode")
    SETTABLE = ("title", "text", "mode")

    weights = Dict().tag(sync=True)
    modes = List(Unicode()).tag(sync=True)
    text = checked_trait(START_TEXT)
    mode = checked_trait("words")

    def __init__(
        self,
        params: Mapping[str, Any] | None = None,
        model: induction.InductionModel | None = None,
        text: str = START_TEXT,
        mode: str = "words",
    ) -> None:
        # without weights: the chapter's model as it starts, untrained (induction_explorer() gives the trained one)
        model = induction.book_model() if model is None else self._checked(_check_model, model)
        data = self._checked(_checked_data, model.init(0) if params is None else params, model)
        text = self._checked(self._check_text, text, lambda name: None)
        mode = self._checked(self._check_mode, mode, lambda name: None)
        super().__init__(title="Induction heads on your own text", weights=data, modes=list(MODES), text=text, mode=mode)

    def _check_text(self, value: Any, now: Callable[[str], Any]) -> str:
        text = check_text("text", value)
        if len(text) > MAX_TEXT:
            raise SettingError("text", f"a text of at most {MAX_TEXT} characters", f"{len(text)} characters")
        return text

    def _check_mode(self, value: Any, now: Callable[[str], Any]) -> str:
        if not isinstance(value, str) or value not in MODES:
            raise SettingError("mode", f"one of {list(MODES)}", shown(value))
        return value

    @property
    def result(self) -> dict[str, Any]:
        """The shown text: ``ids``, ``labels``, ``cut``, ``layers`` (2, heads, n, n), ``predicted``, ``probability``, their labels and
        the notes on left-out characters, ``#k`` predictions and token ids shared after they wrapped (:func:`induction_view`)."""
        return self._view

    def _update(self) -> str:
        self._view = induction_view(self.weights, self.text, self.mode)
        if not self._view["ids"]:
            return f"no {self.mode} in the text: type some {'letters' if self.mode == 'letters' else 'words'}"
        if self._view["cut"]:
            return f"the model reads {self.weights['n_positions']} tokens; the last {self._view['cut']} were left out"
        return ""

    def _snapshot(self) -> tuple[str, str]:
        v = self._view
        if not v["ids"]:
            text = " ".join(t for t in (v["dropped_note"], "No tokens.") if t)
            return facts(text), text
        labels = [f"{i}:{t}" for i, t in enumerate(v["labels"])]
        tables = [
            table_html(
                v["layers"][layer][h],
                labels,
                labels,
                name=f"layer{layer + 1}-head{h}",
                title=f"layer {layer + 1}, head {h + 1}: attention weights",
                vmin=0.0,
                vmax=1.0,
            )
            for layer in range(2)
            for h in range(len(v["layers"][layer]))
        ]
        pred = np.array(v["probability"])[:, None]
        rows = [f"{lab} \u2192 {p}" for lab, p in zip(labels, v["predicted_labels"])]
        tables.append(
            table_html(pred, rows, ["probability"], name="predictions", title="next token predicted at each position", vmin=0.0, vmax=1.0)
        )
        text = "Next token predicted: " + ", ".join(
            f"{a} \u2192 {b} ({fmt(p)})" for a, b, p in zip(v["labels"], v["predicted_labels"], v["probability"])
        )
        text = " ".join(t for t in (v["dropped_note"], text, v["predicted_note"], v["wrapped_note"]) if t)
        return facts(text) + flex(*tables), text

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """``inductionForward`` on random weights and random token ids (1 to 48 tokens), ``inductionTokens`` on texts,
        and ``inductionView`` (the predictions and their probabilities) on texts of 0 to more than 48 tokens."""
        cases: list[dict[str, Any]] = []
        rng = np.random.default_rng(17)
        # sizes and scales like the chapter's model (trained weights are a few times the start's)
        for seed, (vocab, d, heads, std) in enumerate(
            [(32, 32, 1, None), (32, 32, 1, 0.3), (64, 32, 2, 0.3), (26, 8, 4, 0.5), (7, 4, 1, 0.7)]
        ):
            model = induction.InductionModel(vocab, 48, d, heads)
            data = induction_data(model.init(seed, std=std), model)
            for n in (1, 2, 5, 17, 48):
                ids = rng.integers(0, vocab, size=n).tolist()
                cases.append({"fn": "inductionForward", "args": [data, ids], "expected": _forward_case(data, ids)})
        texts = [
            "",
            "Ab, ca!",
            "the cat saw THE cat",
            "zz top 123 zz",
            " ".join(f"w{c}{d}" for c in "abcdefgh" for d in "xyz"),
            " ".join(f"w{c}{d}" for c in "abcdefghijkl" for d in "xyz"),  # 36 distinct words: ids wrap, and the note says so
            "Café déjà vu \U0001f642 2024, café ÉTÉ",  # accents, an emoji and digits: left out, and said so
            "\u00e9\u00e8 \u00f1 0123456789 \u00df \u03a3\u03b1 \u4e2d \u2603 \u00fc\u00f6 \u00e7 \u00e5 \u0153 x",  # more than 12 of them
        ]
        for text in texts:
            for mode in MODES:
                ids, labels = _tokens(text, mode, 64)
                cases.append({"fn": "inductionTokens", "args": [text, mode, 64], "expected": {"ids": ids, "labels": labels}})
        model = induction.InductionModel(26, 48, 8, 2)
        data = induction_data(model.init(3, std=0.5), model)
        for text in [*texts, "abcdefghij" * 6]:  # the last: 60 letters, 12 of them cut
            for mode in MODES:
                view = induction_view(data, text, mode)
                expected = {**view, "layers": np.asarray(view["layers"]).tolist()}
                cases.append({"fn": "inductionView", "args": [data, text, mode], "expected": expected})
        return cases


@factory
def induction_explorer(params: Mapping[str, Any] | None = None, model: induction.InductionModel | None = None) -> InductionExplorer:
    """Chapter 17: the two-layer model on the reader's own text (both layers' attention, the next-token predictions).

    Without arguments it uses the model the chapter trains (:func:`attnlib.induction.book_run`, seed 0).

    Raises
    ------
    ValueError
        ``params`` is not a dict of the expected matrices (a missing, unknown or wrongly shaped entry is refused naming
        it); ``model`` is not the object it names (made by attnlib). The error is an ``InvalidSetting`` (a
        ``ValueError``) whose message starts with the argument's name.

    Examples
    --------
    >>> from attnlib.induction import InductionModel
    >>> m = InductionModel(vocab_size=26, n_positions=48, d_model=8)
    >>> ex = induction_explorer(m.init(0), m)
    >>> ex.mode = "letters"
    >>> ex.text = "Hello"
    >>> ex.result["ids"]
    [7, 4, 11, 11, 14]
    """
    if params is None and model is None:
        model = induction.book_model()
        params = induction.book_run(0).final_params
    if params is None or model is None:
        raise ValueError("give both params and model (or neither, for the chapter's trained model)")
    return InductionExplorer(params, model)
