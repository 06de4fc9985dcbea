"""The explorers as anywidget models: synced traitlets are the state, attnlib computes the result.

Each class is an ``anywidget.AnyWidget`` whose ``_esm`` is the front-end
module of its kind (``attnlib.explorers.frontend.module_source``). The
browser draws the controls and views; the Python model keeps the state:

* every change of a synced trait, from Python or the browser, goes through
  one checked path (``_Explorer._apply``): ``None`` and a value equal to
  the current one are checked like any other, a refusal raises
  ``InvalidSetting``, a ``ValueError`` naming the setting, and a refused
  change leaves state, views, ``.result`` and snapshot as they were (the
  browser gets the kept value back);
* ``.result`` is recomputed by :mod:`attnlib.core` after every change, made
  in Python or in the browser, and an overflow gives ``error``/``message``
  and ``result = None`` instead of an exception;
* the display bundle holds the live widget view, a static ``text/html``
  snapshot with the state as JSON (the web book mounts the live explorer
  from it), and a ``text/plain`` summary.

Examples
--------
>>> ex = AttentionExplorer()
>>> ex.W_Q = [[3, 0], [0, 3]]
>>> ex.result.weights.round(4)[0].tolist()
[0.6821, 0.0818, 0.2362]
>>> ex.W_Q = [[4, 0], [0, 3]]  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
attnlib.explorers.widget.InvalidSetting: W_Q must be a (2, 2) matrix with entries in the sliders' range [-3, 3]; got ...
>>> ex.W_Q.tolist()
[[3.0, 0.0], [0.0, 3.0]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import anywidget
import numpy as np
import traitlets
from traitlets import Dict, Float, Int, List, Unicode

from ..blocked import KeyBlock, key_block
from ..core import TOKENS, AttentionResult, attention, running_example
from . import frontend, snapshot
from . import state as st
from .state import SettingError

__all__ = [
    "InvalidSetting",
    "AttentionExplorer",
    "ScalingExplorer",
    "ScaleComparisonExplorer",
    "HeadCountExplorer",
    "PositionalExplorer",
    "TrainingExplorer",
    "BlockMemoryExplorer",
]


class InvalidSetting(SettingError, traitlets.TraitError):
    """A refused setting (a ``ValueError``); ``setting`` names it. Nothing changed."""

    def __init__(self, error: SettingError) -> None:
        self.setting = error.setting
        Exception.__init__(self, str(error))

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show instead of a traceback into this module: the one line that says what to change."""
        return [f"Setting not changed: {self}"]


def _to_json(value: Any, widget: Any) -> Any:
    return value.tolist() if isinstance(value, np.ndarray) else value


def _from_json(value: Any, widget: Any) -> Any:
    return value


class Matrix(traitlets.TraitType):
    """A read-only numpy array in Python, nested lists in the browser (checked by the owner's ``_check_<name>``)."""

    info_text = "a matrix"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(default_value=None, allow_none=True, **kwargs)


def _matrix() -> Matrix:
    return Matrix().tag(sync=True, to_json=_to_json, from_json=_from_json)


def _checked_trait(default: Any) -> traitlets.Any:
    """A synced trait of any type: its owner's ``_check_<name>`` checks it (so a wrong type gets the named error too)."""
    return traitlets.Any(default).tag(sync=True)


def _same_shape(name: str, new: np.ndarray, old: np.ndarray) -> np.ndarray:
    if new.shape != old.shape:
        raise SettingError(name, f"a matrix of shape {old.shape} (the explorer's tokens and layout)", f"shape {new.shape}")
    return new


_BASE_NAMES = frozenset(anywidget.AnyWidget.class_trait_names()) | {"_esm", "_css", "_anywidget_id"}


def _same(old: Any, new: Any) -> bool:
    """Whether a write changes nothing (then no observer is told)."""
    if isinstance(old, np.ndarray) or isinstance(new, np.ndarray):
        return isinstance(old, np.ndarray) and isinstance(new, np.ndarray) and old.dtype == new.dtype and np.array_equal(old, new)
    try:
        return type(old) is type(new) and bool(old == new)
    except Exception:  # noqa: BLE001 - a comparison that fails means "changed"
        return False


#: The attributes that hold what an explorer computed from its state (restored when a change is refused).
_VIEW_ATTRS = ("_views", "_view", "_results", "_similarity", "_result")


class _Explorer(anywidget.AnyWidget):
    """Shared machinery: the one checked path for every change, one recomputation per change, the display bundle.

    Every write to a synced trait after construction, by attribute (``ex.W_Q = ...``), ``set_trait``,
    ``set(...)`` or the page (``set_state``), goes through :meth:`_apply`: each value, ``None`` and
    a value equal to the current one included, is checked by the kind's ``_check_<name>`` method
    (traits without one are data, fixed after construction), the result is recomputed, and only then
    are the values kept and observers told. A refused change (a bad value, or a setting whose result
    attnlib cannot compute) raises ``InvalidSetting`` and leaves the state, the views, ``.result`` and
    the snapshot as they were; only ``error`` reports the refusal to the page.
    """

    #: The front-end kind (one module per kind).
    KIND: ClassVar[str] = ""
    #: The traits the browser may write; every other trait of ours is data set by Python.
    STATE: ClassVar[tuple[str, ...]] = ()
    #: The traits Python may change after construction, in the order they are checked (each has a ``_check_<name>``).
    SETTABLE: ClassVar[tuple[str, ...]] = ()

    kind = Unicode("").tag(sync=True)
    title = Unicode("").tag(sync=True)
    # not "style": ipywidgets' DOMWidgetView takes a "style" trait for a StyleModel reference
    look = Dict().tag(sync=True)
    error = Unicode("").tag(sync=True)

    _ready = False
    _writing = False

    def __init__(self, **traits: Any) -> None:
        self._ready = False
        self._writing = True  # the constructor's values are checked by the constructor
        try:
            super().__init__(kind=self.KIND, look=snapshot.style_data(), **traits)
        finally:
            self._writing = False
        self._update()
        self._ready = True

    # -- the one checked path ---------------------------------------------------
    def _checked(self, check: Callable[..., Any], *args: Any) -> Any:
        """Run a check of ``state``; a refusal becomes ``InvalidSetting`` (and ``error``)."""
        try:
            return check(*args)
        except SettingError as err:
            raise self._refuse(err) from None

    def _refuse(self, err: SettingError) -> InvalidSetting:
        refused = InvalidSetting(err)
        if self._ready:
            self._write("error", str(refused))
        return refused

    def _write(self, name: str, value: Any) -> None:
        """Store a value that is already checked (or is the explorer's own report), notifying as traitlets does."""
        was, self._writing = self._writing, True
        try:
            setattr(self, name, value)
        finally:
            self._writing = was

    def __setattr__(self, name: str, value: Any) -> None:
        if self._ready and not self._writing and name in self._synced():
            self._apply({name: value})
        else:
            super().__setattr__(name, value)

    def set_trait(self, name: str, value: Any) -> None:
        """``traitlets``' ``set_trait``, through the same checked path as an assignment."""
        if self._ready and not self._writing and name in self._synced():
            self._apply({name: value})
        else:
            super().set_trait(name, value)

    def _check_title(self, value: Any, now: Callable[[str], Any]) -> str:
        if not isinstance(value, str):
            raise SettingError("title", "a text", repr(value))
        return value

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        """Values that follow from a change (the attention explorer's mask pattern, the block explorer's last step)."""
        return {}

    def _check_all(self, proposed: dict[str, Any]) -> dict[str, Any]:
        """Every proposed value in canonical form, checked against the others (all or nothing); nothing is written."""
        synced = self._synced()
        unknown = [k for k in proposed if k not in synced]
        if unknown:
            raise self._refuse(SettingError(unknown[0], f"one of the explorer's settings {list(self.SETTABLE)}", repr(unknown[0])))
        fixed = [k for k in proposed if k not in self.SETTABLE]
        if fixed:
            expected = f"left as the explorer made it (it is data, not a setting; the settings are {list(self.SETTABLE)})"
            raise self._refuse(SettingError(fixed[0], expected, "a new value"))
        values: dict[str, Any] = {}

        def now(name: str) -> Any:
            return values[name] if name in values else self._trait_values.get(name)

        for name in self.SETTABLE:
            if name in proposed:
                values[name] = self._checked(getattr(self, f"_check_{name}"), proposed[name], now)
        values.update(self._derived(values, now))
        return values

    def _apply(self, proposed: dict[str, Any]) -> None:
        """The one path of every change after construction: check, recompute, keep, then tell observers."""
        values = self._check_all(proposed)
        old = {k: self._trait_values.get(k) for k in values}
        if all(_same(old[k], v) for k, v in values.items()):
            return  # checked, and nothing changes: the views stay as they are
        saved = {k: self.__dict__[k] for k in _VIEW_ATTRS if k in self.__dict__}
        self._trait_values.update(values)
        try:
            with np.errstate(all="ignore"):
                self._update()
        except (ValueError, FloatingPointError, ArithmeticError) as exc:
            self._trait_values.update(old)
            self.__dict__.update(saved)
            names = ", ".join(proposed)
            raise self._refuse(SettingError(names, "a setting whose result attnlib can compute", f"a value for which {exc}")) from None
        # the result is up to date before anyone hears of the change (an observer reads the new ex.result)
        for name, value in values.items():
            if not _same(old[name], value):
                self._notify_trait(name, old[name], value)

    def _update(self) -> None:
        """Recompute what the state shows from the kept values (a failure raises; :meth:`_apply` then refuses)."""
        raise NotImplementedError

    # -- the browser -----------------------------------------------------------
    @classmethod
    def _synced(cls) -> frozenset[str]:
        cached = cls.__dict__.get("_synced_names")
        if cached is None:
            cached = frozenset(n for n in cls.class_trait_names(sync=True) if n not in _BASE_NAMES)
            cls._synced_names = cached
        return cached

    def _own_names(self) -> list[str]:
        return [n for n in self.trait_names(sync=True) if n not in _BASE_NAMES]

    def set_state(self, sync_data: dict) -> None:
        """A change from the browser: only state traits, checked like a change from code (all or nothing); a refusal is sent back."""
        own = self._synced()
        data = [k for k in sync_data if k in own and k not in self.STATE]
        refused = ""
        if data:
            refused = f"{', '.join(data)} cannot be changed from the page; kept the values set in Python"
            self.send_state(data)
        base = {k: v for k, v in sync_data.items() if k not in own}
        if base:
            super().set_state(base)
        proposal = {}
        for k, v in sync_data.items():
            if k in self.STATE:
                from_json = self.trait_metadata(k, "from_json", self._trait_from_json)
                proposal[k] = from_json(v, self)
        if proposal:
            try:
                with self._lock_property(**{k: sync_data[k] for k in proposal}):
                    self._apply(proposal)
            except InvalidSetting as err:
                refused = " ".join(t for t in (refused, str(err)) if t)
                self.send_state(list(proposal))
        if refused:
            self._write("error", refused)

    def state_dict(self) -> dict[str, Any]:
        """Every synced trait of the explorer (not the module source) as JSON-ready values: what the page embeds."""
        out = {}
        for name in self._own_names():
            to_json = self.trait_metadata(name, "to_json", self._trait_to_json)
            out[name] = to_json(getattr(self, name), self)
        return out

    # -- display ---------------------------------------------------------------
    def snapshot_html(self) -> str:
        """The current views as static HTML tables."""
        raise NotImplementedError

    def summary_text(self) -> str:
        """The key numbers of the current setting as plain text."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict]:
        data, metadata = super()._repr_mimebundle_(**kwargs)
        data = dict(data)
        data["text/plain"] = self.summary_text()
        data["text/html"] = snapshot.embed_html(self.kind, self.title, self.state_dict(), self.snapshot_html())
        return data, metadata

    def __repr__(self) -> str:
        return self.summary_text()


# ---------------------------------------------------------------------------
# The attention explorer (full, and the focused W_V and mask explorers)
# ---------------------------------------------------------------------------


class AttentionExplorer(_Explorer):
    """Self-attention on ``X`` with a slider for every entry of ``W_Q``, ``W_K`` and ``W_V``.

    Build it with ``attnlib.explorers.attention_explorer()`` (everything) or one
    of the focused constructors. The state is readable and settable from code:

    * ``W_Q``, ``W_K``, ``W_V``: the matrices (read-only numpy arrays; assign a matrix);
    * ``d_k``: the d_k the scores are scaled for (``None`` = no scaling; the trait ``dk`` holds 0 then);
    * ``mask``: the boolean mask in force (``None`` = no mask); assign ``None``, ``"causal"`` or a matrix;
    * ``result``: the :class:`~attnlib.core.AttentionResult` of the setting, or ``None`` when some query
      row may attend to no key or a value overflows (``message`` says which);
    * ``set(...)`` changes several at once (all or nothing), ``reset()``, ``randomise()``.

    Parameters
    ----------
    X:
        Token vectors as rows, at most 8 tokens of width at most 4 (default: the running example).
    tokens:
        One label per row of ``X``.
    controls, views:
        Which controls and views the panel shows (see ``state.ALL_CONTROLS`` and ``state.ALL_VIEWS``).
    W_Q, W_K, W_V:
        Starting matrices, ``(d_model, d_model)`` with entries in ``[-3, 3]`` (default: identity).
    d_k:
        Starting d_k, ``None`` for no scaling (default: the width of ``X``).
    mask:
        Starting mask: ``None``, ``"causal"`` or a boolean matrix.
    coalesce:
        Kept for compatibility; every change recomputes once.
    seed:
        Seed of the seeded random presets.
    """

    KIND = "attention"
    STATE = ("W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")
    SETTABLE = ("title", "X", "tokens", "W_Q", "W_K", "W_V", "dk", "mask_mode", "mask_cells")
    _esm = frontend.module_source("attention")
    _css = frontend.css_source()

    tokens = _checked_trait([])
    X = _matrix()
    controls = List(Unicode()).tag(sync=True)
    views = List(Unicode()).tag(sync=True)
    slider = Dict().tag(sync=True)
    dk_choices = List(Int()).tag(sync=True)
    true_dk = Int(1).tag(sync=True)
    presets = List(Dict()).tag(sync=True)
    random_draws = List(Dict()).tag(sync=True)
    initial = Dict().tag(sync=True)
    W_Q = _matrix()
    W_K = _matrix()
    W_V = _matrix()
    dk = _checked_trait(0)
    mask_mode = _checked_trait("none")
    mask_cells = _matrix()

    def __init__(
        self,
        X: Any = None,
        tokens: Sequence[str] | None = None,
        *,
        controls: Sequence[str] = st.ALL_CONTROLS,
        views: Sequence[str] = st.ALL_VIEWS,
        W_Q: Any = None,
        W_K: Any = None,
        W_V: Any = None,
        d_k: int | None | str = "width",
        mask: Any = None,
        title: str = "Attention explorer",
        coalesce: bool = True,
        seed: int = 0,
    ) -> None:
        self._ready = False
        x = running_example() if X is None else self._checked(st.check_X, X)
        n, d = x.shape
        labels = (TOKENS if X is None else [f"x{i + 1}" for i in range(n)]) if tokens is None else tokens
        labels = self._checked(st.check_tokens, labels, n)
        for c in controls:
            if c not in st.ALL_CONTROLS:
                raise InvalidSetting(SettingError("controls", f"a subset of {list(st.ALL_CONTROLS)}", repr(c)))
        for v in views:
            if v not in st.ALL_VIEWS:
                raise InvalidSetting(SettingError("views", f"a subset of {list(st.ALL_VIEWS)}", repr(v)))
        choices = st.dk_choices_for(d)
        start = {
            name: self._checked(st.check_weight, name, np.eye(d) if given is None else given, d)
            for name, given in zip(st.W_NAMES, (W_Q, W_K, W_V))
        }
        dk = self._checked(st.check_dk, d if d_k == "width" else d_k, choices)
        mode, cells = self._checked(st.parse_mask, mask, n)
        moved = tuple(name for name in st.W_NAMES if name in controls)
        self._draw = 0
        super().__init__(
            title=title,
            tokens=labels,
            X=x,
            controls=list(controls),
            views=[v for v in views if not (v == "plane" and d != 2)],
            slider=dict(st.SLIDER),
            dk_choices=choices,
            true_dk=d,
            presets=st.presets(d, moved) if moved else [],
            random_draws=st.random_draws(d, moved, seed=seed) if moved and tuple(controls) != ("W_V", "presets") else [],
            initial={
                **{name: start[name].tolist() for name in st.W_NAMES},
                "dk": dk,
                "mask_mode": mode,
                "mask_cells": cells.tolist(),
            },
            W_Q=start["W_Q"],
            W_K=start["W_K"],
            W_V=start["W_V"],
            dk=dk,
            mask_mode=mode,
            mask_cells=cells,
        )

    # -- validation ------------------------------------------------------------
    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        x = st.check_X(value)
        if x.shape != self.X.shape:
            raise SettingError("X", f"a matrix of shape {self.X.shape} (the explorer's tokens and sliders)", f"shape {x.shape}")
        return x

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return st.check_tokens(value, self.X.shape[0])

    def _check_W_Q(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return st.check_weight("W_Q", value, self.X.shape[1])

    def _check_W_K(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return st.check_weight("W_K", value, self.X.shape[1])

    def _check_W_V(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return st.check_weight("W_V", value, self.X.shape[1])

    def _check_dk(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_dk(value, self.dk_choices)

    def _check_mask_mode(self, value: Any, now: Callable[[str], Any]) -> str:
        return st.check_mask_mode(value)

    def _check_mask_cells(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return st.check_mask_cells(value, self.X.shape[0])

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        # without a custom mask, the cells show the pattern of the mode in force
        mode = now("mask_mode")
        if mode == "custom":
            return {}
        pattern = st.effective_mask(mode, now("mask_cells"), self.X.shape[0])
        return {} if np.array_equal(pattern, now("mask_cells")) else {"mask_cells": pattern}

    # -- the Python API ------------------------------------------------------------
    @property
    def d_k(self) -> int | None:
        """The d_k of the scaling, ``None`` for no scaling."""
        return None if self.dk == 0 else int(self.dk)

    @d_k.setter
    def d_k(self, value: int | None) -> None:
        self._apply({"dk": value})

    @property
    def divisor(self) -> float:
        """What the scores are divided by: ``sqrt(d_k)``, or 1 without scaling."""
        return self._views.divisor

    @property
    def mask(self) -> np.ndarray | None:
        """The boolean mask in force (``True`` = may attend), ``None`` without a mask."""
        if self.mask_mode == "none":
            return None
        return st.effective_mask(self.mask_mode, self.mask_cells, self.X.shape[0])

    @mask.setter
    def mask(self, value: Any) -> None:
        self.set(mask=value)

    @property
    def result(self) -> AttentionResult | None:
        """attnlib's result of the current setting, or ``None`` (see ``message``)."""
        return self._views.result

    @property
    def message(self) -> str | None:
        """``None``, the rows that may attend to no key, or what overflowed."""
        return self._views.message

    @property
    def shown(self) -> st.AttentionViews:
        """Everything the panel shows for the current setting (``AttentionViews``)."""
        return self._views

    def set(self, **values: Any) -> AttentionExplorer:
        """Change ``W_Q``, ``W_K``, ``W_V``, ``d_k`` and ``mask`` at once: all are checked first, then one recomputation."""
        allowed = ("W_Q", "W_K", "W_V", "d_k", "mask")
        unknown = sorted(set(values) - set(allowed))
        if unknown:
            raise InvalidSetting(SettingError("set", f"called with settings among {list(allowed)}", unknown))
        new: dict[str, Any] = {}
        for key, value in values.items():
            if key == "d_k":
                new["dk"] = value
            elif key == "mask":
                new["mask_mode"], new["mask_cells"] = self._checked(st.parse_mask, value, self.X.shape[0])
            else:
                new[key] = value
        self._apply(new)
        return self

    def reset(self) -> None:
        """Back to the starting matrices, d_k and mask."""
        start = self.initial
        mode = start["mask_mode"]
        mask = None if mode == "none" else mode if mode == "causal" else np.array(start["mask_cells"], dtype=bool)
        d_k = None if start["dk"] == 0 else start["dk"]
        self.set(W_Q=start["W_Q"], W_K=start["W_K"], W_V=start["W_V"], d_k=d_k, mask=mask)

    def randomise(self) -> None:
        """The next of the seeded random draws (``random_draws``, multiples of the slider step)."""
        if not self.random_draws:
            raise InvalidSetting(SettingError("randomise", "called on an explorer with a seeded random preset", "an explorer without one"))
        draw = self.random_draws[self._draw % len(self.random_draws)]
        self._draw += 1
        self.set(**draw)

    def refresh(self) -> None:
        """Kept for compatibility: the state is always up to date."""

    # -- recomputation -------------------------------------------------------
    def _update(self) -> None:
        # attention_views shows overflow as a message; anything else it raised would refuse the change
        views = st.attention_views(self.X, self.W_Q, self.W_K, self.W_V, dk=self.dk, mask=self.mask, tokens=self.tokens)
        self._views = views
        self._write("error", views.error)

    # -- display -----------------------------------------------------------------
    def _settings(self, decimals: int) -> list[str]:
        out = [f"{name} = {np.round(getattr(self, name), decimals).tolist()}" for name in st.W_NAMES if name in self.controls]
        if "d_k" in self.controls or decimals == 4:
            out.append("d_k: no scaling (divide by 1)" if self.dk == 0 else f"d_k = {self.dk}: divide the scores by {self.divisor:.4f}")
        if "mask" in self.controls or decimals == 4:
            out.append(f"mask: {self.mask_mode}")
        return out

    def snapshot_html(self) -> str:
        return snapshot.attention_snapshot(
            tokens=self.tokens, X=self.X, views=self._views, view_names=self.views, settings=self._settings(2), dk=self.dk
        )

    def summary_text(self) -> str:
        return snapshot.attention_summary(
            title=self.title, tokens=self.tokens, views=self._views, settings=self._settings(4), show_values="V" in self.views
        )


# ---------------------------------------------------------------------------
# Focused explorers with their own knob
# ---------------------------------------------------------------------------


class ScalingExplorer(_Explorer):
    """Chapter 5: seeded random q and k of dimension d_k; the spread of q·k grows like sqrt(d_k).

    The samples and spreads of every d_k are computed once by attnlib (``samples``), seeded.
    """

    KIND = "scaling"
    STATE = ("dk",)
    SETTABLE = ("title", "dk")
    N_KEYS = st.SCALING_N_KEYS
    N_SAMPLES = st.SCALING_N_SAMPLES
    _esm = frontend.module_source("scaling")
    _css = frontend.css_source()

    dk_choices = List(Int()).tag(sync=True)
    samples = Dict().tag(sync=True)
    dk = _checked_trait(2)

    def __init__(self, seed: int = 0, coalesce: bool = True) -> None:
        self.seed = seed
        self._ready = False
        super().__init__(
            title="Scaling: the dimension d_k of queries and keys",
            dk_choices=list(st.SCALING_DK_CHOICES),
            samples=st.scaling_samples(seed),
            dk=2,
        )

    def _check_dk(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_dk(value, self.dk_choices)

    @property
    def d_k(self) -> int:
        """The dimension of the seeded queries and keys."""
        return int(self.dk)

    @d_k.setter
    def d_k(self, value: int) -> None:
        self._apply({"dk": value})

    def sample(self) -> tuple[np.ndarray, np.ndarray]:
        """One query ``(1, d_k)`` and ``N_KEYS`` keys with standard-normal entries, seeded by ``(seed, d_k)``."""
        return st.scaling_query_keys(self.seed, self.d_k)

    def spread(self) -> tuple[float, float]:
        """Standard deviation of ``N_SAMPLES**2`` seeded scores ``q·k``: unscaled, and divided by sqrt(d_k)."""
        s = self.samples[str(self.d_k)]
        return s["spread_raw"], s["spread_scaled"]

    @property
    def result(self) -> dict[str, np.ndarray]:
        """Scores of the seeded query against its keys (``raw``, ``scaled``) and their softmax weights."""
        return self._view

    def _update(self) -> None:
        self._view = st.scaling_view(self.samples[str(self.d_k)]["raw_scores"], self.d_k)
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        return snapshot.scaling_snapshot(self.d_k, self.N_SAMPLES, self._view, self.spread())

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]


class ScaleComparisonExplorer(_Explorer):
    """Chapter 7: the running example stretched by a factor, unscaled against scaled weights."""

    KIND = "scale_comparison"
    STATE = ("length",)
    SETTABLE = ("title", "X", "tokens", "length")
    _esm = frontend.module_source("scale_comparison")
    _css = frontend.css_source()

    X = _matrix()
    tokens = List(Unicode()).tag(sync=True)
    length_range = Dict().tag(sync=True)
    length = _checked_trait(1.0)

    def __init__(self, coalesce: bool = True) -> None:
        self._ready = False
        super().__init__(
            title="Unscaled against scaled, as the vectors grow",
            X=running_example(),
            tokens=list(TOKENS),
            length_range=dict(st.LENGTH_RANGE),
            length=1.0,
        )

    def _check_length(self, value: Any, now: Callable[[str], Any]) -> float:
        return st.check_length(value)

    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return _same_shape("X", st.check_X(value), self.X)

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return st.check_tokens(value, self.X.shape[0])

    def results(self) -> tuple[AttentionResult, AttentionResult]:
        """Attention of ``length * X`` with itself (W = I): without scaling, and divided by sqrt(d_k)."""
        return self._results

    @property
    def result(self) -> tuple[AttentionResult, AttentionResult]:
        """The same as ``results``."""
        return self._results

    def _update(self) -> None:
        X = np.asarray(self.X) * self.length
        self._results = (attention(X, X, X, scale=False), attention(X, X, X, scale=True))
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        return snapshot.scale_comparison_snapshot(self.length, self.tokens, *self._results)

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]


class HeadCountExplorer(_Explorer):
    """Chapter 8: four tokens of width 8 split across 1, 2, 4 or 8 heads; the parameter count stays 4 d_model^2."""

    KIND = "head_count"
    STATE = ("n_heads",)
    SETTABLE = ("title", "tokens", "X", "W_Q", "W_K", "W_V", "W_O", "n_heads")
    D_MODEL = st.HEAD_D_MODEL
    TOKENS = st.HEAD_TOKENS
    _esm = frontend.module_source("head_count")
    _css = frontend.css_source()

    tokens = List(Unicode()).tag(sync=True)
    X = _matrix()
    W_Q = _matrix()
    W_K = _matrix()
    W_V = _matrix()
    W_O = _matrix()
    head_choices = List(Int()).tag(sync=True)
    param_counts = Dict().tag(sync=True)
    n_heads = _checked_trait(2)

    def __init__(self, seed: int = 0, coalesce: bool = True) -> None:
        self._ready = False
        data = st.head_count_data(seed)
        super().__init__(
            title="Number of heads",
            tokens=list(self.TOKENS),
            head_choices=list(st.HEAD_CHOICES),
            n_heads=2,
            **{k: st._frozen(v) if isinstance(v, np.ndarray) else v for k, v in data.items()},
        )

    def _check_n_heads(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_choice("n_heads", value, self.head_choices)

    def _check_tokens(self, value: Any, now: Callable[[str], Any]) -> list[str]:
        return st.check_tokens(value, self.X.shape[0])

    def _data_matrix(self, name: str, value: Any) -> np.ndarray:
        old = getattr(self, name)
        return _same_shape(name, st._frozen(st._float_matrix(name, value, f"a finite real matrix of shape {old.shape}")), old)

    def _check_X(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("X", value)

    def _check_W_Q(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_Q", value)

    def _check_W_K(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_K", value)

    def _check_W_V(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_V", value)

    def _check_W_O(self, value: Any, now: Callable[[str], Any]) -> np.ndarray:
        return self._data_matrix("W_O", value)

    def results(self) -> tuple[np.ndarray, np.ndarray]:
        """``attnlib.multi_head_attention`` of the seeded example: output and per-head weights."""
        return self._results

    @property
    def result(self) -> tuple[np.ndarray, np.ndarray]:
        """The same as ``results``."""
        return self._results

    def _update(self) -> None:
        data = {"X": self.X, "W_Q": self.W_Q, "W_K": self.W_K, "W_V": self.W_V, "W_O": self.W_O}
        self._results = st.head_count_result(data, self.n_heads)
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        params = int(self.param_counts[str(self.n_heads)])
        return snapshot.head_count_snapshot(self.n_heads, self.D_MODEL, params, self.tokens, self._results[1])

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]


class PositionalExplorer(_Explorer):
    """Chapter 11: the sinusoidal encoding of one position, for a chosen d_model."""

    KIND = "positional"
    STATE = ("position", "d_model")
    SETTABLE = ("title", "position", "d_model")
    N_POSITIONS = st.N_POSITIONS
    _esm = frontend.module_source("positional")
    _css = frontend.css_source()

    tables = Dict().tag(sync=True)
    frequencies = Dict().tag(sync=True)
    d_model_choices = List(Int()).tag(sync=True)
    position = _checked_trait(1)
    d_model = _checked_trait(2)

    def __init__(self, coalesce: bool = True) -> None:
        self._ready = False
        super().__init__(
            title="Sinusoidal positions", d_model_choices=list(st.D_MODEL_CHOICES), position=1, d_model=2, **st.positional_data()
        )

    def _check_position(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_position(value)

    def _check_d_model(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_choice("d_model", value, st.D_MODEL_CHOICES)

    def table(self) -> np.ndarray:
        """``sinusoidal_encoding(N_POSITIONS, d_model)``."""
        return np.array(self.tables[str(self.d_model)], dtype=float)

    @property
    def result(self) -> np.ndarray:
        """Dot products of ``PE(position)`` with every position, shape ``(N_POSITIONS,)``."""
        return self._similarity

    def _update(self) -> None:
        self._similarity = st.positional_similarity(self.table(), self.position)
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        freqs = self.frequencies[str(self.d_model)]
        return snapshot.positional_snapshot(self.position, self.d_model, self.table(), freqs, self._similarity)

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]


class TrainingExplorer(_Explorer):
    """Chapter 14: a slider over the recorded steps of a training run.

    Each step shows the attention map of one held-out sequence, the learned
    ``W_Q W_K^T`` and the loss; the states are computed once by attnlib
    (``attnlib.explorers.state.training_data``) and handed to the page as data.
    """

    KIND = "training"
    STATE = ("step",)
    SETTABLE = ("title", "step")
    _esm = frontend.module_source("training")
    _css = frontend.css_source()

    steps = List(Int()).tag(sync=True)
    losses = List(Float()).tag(sync=True)
    previous = List(Float()).tag(sync=True)
    weights = List().tag(sync=True)
    bilinear = List().tag(sync=True)
    tokens = List(Unicode()).tag(sync=True)
    features = List(Unicode()).tag(sync=True)
    step = _checked_trait(0)

    def __init__(self, seed: int = 0) -> None:
        self._ready = False
        super().__init__(title="Training: attention learns to look one token back", step=0, **st.training_data(seed))

    def _check_step(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_training_step(value, self.steps)

    def _data(self) -> dict[str, Any]:
        return {"steps": self.steps, "losses": self.losses, "previous": self.previous, "weights": self.weights, "bilinear": self.bilinear}

    @property
    def result(self) -> dict[str, Any]:
        """The shown step: ``step``, ``loss``, ``previous``, ``weights`` and ``bilinear`` (arrays)."""
        return self._view

    def _update(self) -> None:
        self._view = st.training_view(self._data(), self.step)
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        return snapshot.training_snapshot(self._view, self.steps[-1], self.tokens, self.features)

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]


class BlockMemoryExplorer(_Explorer):
    """Chapter 15: memory of the n x n score matrix against the blocked working set, and the strip of scores per step.

    The memory figures come from :mod:`attnlib.cost` (``table``, one entry per
    setting); the page draws the strip of scores that exists at a step it
    chooses, which :meth:`block_at` gives in Python.
    """

    KIND = "blocks"
    STATE = ("n", "block_size", "dtype", "causal", "step")
    SETTABLE = ("title", "n", "block_size", "dtype", "causal", "step")
    _esm = frontend.module_source("blocks")
    _css = frontend.css_source()

    n_choices = List(Int()).tag(sync=True)
    block_choices = List(Int()).tag(sync=True)
    dtypes = List(Unicode()).tag(sync=True)
    d_k = Int(st.BLOCK_D_K).tag(sync=True)
    table = Dict().tag(sync=True)
    n = _checked_trait(4096)
    block_size = _checked_trait(128)
    dtype = _checked_trait("float32")
    causal = _checked_trait(False)
    step = _checked_trait(1)

    def __init__(self, coalesce: bool = True) -> None:
        self._ready = False
        super().__init__(
            title="Dense against blocked: memory and the scores that exist",
            n_choices=list(st.BLOCK_N_CHOICES),
            block_choices=list(st.BLOCK_SIZE_CHOICES),
            dtypes=list(st.BLOCK_DTYPES),
            table=st.block_memory_table(),
            n=4096,
            block_size=128,
            dtype="float32",
            causal=False,
            step=1,
        )

    def _check_n(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_choice("n", value, st.BLOCK_N_CHOICES)

    def _check_block_size(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_choice("block_size", value, st.BLOCK_SIZE_CHOICES)

    def _check_dtype(self, value: Any, now: Callable[[str], Any]) -> str:
        return st.check_dtype(value)

    def _check_causal(self, value: Any, now: Callable[[str], Any]) -> bool:
        return st.check_flag("causal", value)

    def _check_step(self, value: Any, now: Callable[[str], Any]) -> int:
        return st.check_block_step(value, now("n"), now("block_size"))

    def _derived(self, values: dict[str, Any], now: Callable[[str], Any]) -> dict[str, Any]:
        # a shorter sequence or a larger block: the step stays within the blocks (the last one)
        count = st.block_count(now("n"), now("block_size"))
        return {"step": count} if "step" not in values and now("step") > count else {}

    @property
    def result(self) -> dict[str, Any]:
        """The memory figures of the current setting (an entry of ``table``)."""
        return self._result

    def block_at(self, step: int | None = None) -> KeyBlock:
        """The strip of scores at ``step`` (1-based; default the explorer's step), from :func:`attnlib.blocked.key_block`."""
        step = self.step if step is None else step
        try:
            step = st.check_block_step(step, self.n, self.block_size)
        except SettingError as err:  # a question, not a change: error stays as it is
            raise InvalidSetting(err) from None
        return key_block(self.n, self.n, self.block_size, step - 1, causal=self.causal)

    def _update(self) -> None:
        self._result = dict(self.table[f"{self.n}/{self.block_size}/{self.dtype}"])
        if self.step > self._result["steps"]:  # at construction only: _derived keeps the step in range afterwards
            self._write("step", self._result["steps"])
        self._result["block"] = self.block_at()
        self._write("error", "")

    def _parts(self) -> tuple[str, str]:
        return snapshot.blocks_snapshot(
            self.n, self.block_size, self.dtype, self.d_k, self.causal, self._result, self.step, self._result["block"]
        )

    def snapshot_html(self) -> str:
        return self._parts()[0]

    def summary_text(self) -> str:
        return self._parts()[1]
