"""What every explorer kind shares: the one checked path of a change, the display bundle, registration.

A kind is a subclass of :class:`Explorer` with two class arguments::

    class ScalingExplorer(Explorer, kind="scaling", module="scaling.js"):
        ...

``Explorer.__init_subclass__`` (anywidget's own ``__init_subclass__`` is the model:
it turns ``_esm``/``_css`` into file contents when the class is made) then sets the
kind's ``_esm`` (its module composed with the shared ones,
:func:`attnlib.explorers.frontend.compose`) and ``_css``, and records the kind in
:mod:`attnlib.explorers.registry`. The kind writes only what is its own:

* ``STATE`` (the traits the browser may write) and ``SETTABLE`` (what Python may change),
  with a ``_check_<name>`` for each settable trait, built from the checks of
  :mod:`attnlib.explorers.settings`;
* ``_update()``: recompute the views from the kept values (return an error text or ``""``);
* ``_snapshot()``: the static HTML and the text summary of the current setting;
* ``golden_cases()``: settings on which its JavaScript must compute what attnlib computes
  (the golden test harness runs them in node).

Every change of a synced trait after construction, from Python or the browser, goes
through ``Explorer._apply``: each value, ``None`` and a value equal to the current one
included, is checked, the result is recomputed, and only then are the values kept and
observers told. A refusal raises ``InvalidSetting`` (a ``ValueError`` naming the setting)
and leaves state, views, ``.result`` and snapshot as they were; only ``error`` reports it
to the page.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import anywidget
import numpy as np
import traitlets
from traitlets import Dict, Unicode

from . import frontend, registry, snapshot
from .settings import SettingError, check_text

__all__ = ["Explorer", "InvalidSetting", "checked_trait", "matrix_trait"]


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


def matrix_trait() -> Matrix:
    """A synced matrix: a numpy array in Python, lists in the browser."""
    return Matrix().tag(sync=True, to_json=_to_json, from_json=_from_json)


def checked_trait(default: Any) -> traitlets.Any:
    """A synced trait of any type: its owner's ``_check_<name>`` checks it (so a wrong type gets the named error too).

    Raises
    ------
    ValueError
        Never for the settings its explorer has checked: this is the explorer's plumbing, which checks nothing itself
        (call it with other input and numpy's own errors may come). Use the explorer's settings instead.
    """
    return traitlets.Any(default).tag(sync=True)


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
VIEW_ATTRS = ("_views", "_view", "_results", "_similarity", "_result")


class Explorer(anywidget.AnyWidget):
    """The base of every explorer kind (see the module docstring for what a kind adds).

    Raises
    ------
    ValueError
        ``InvalidSetting`` (a ``ValueError``) when a trait's value is refused by the kind's check; ``TypeError`` for a
        class that is not a kind (no ``kind=`` in its class statement).
    """

    #: The front-end kind (one module per kind); set by ``kind=`` in the class statement.
    KIND: ClassVar[str] = ""
    #: The kind's front-end module; set by ``module=`` in the class statement.
    MODULE: ClassVar[Path | None] = None
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

    def __init_subclass__(cls, kind: str | None = None, module: str | Path | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if kind is None and module is None:
            return  # a subclass of a kind stays that kind
        if kind is None or module is None:
            raise TypeError(f"{cls.__name__}: a kind needs both kind= and module= in its class statement")
        for name in ("_update", "_snapshot", "golden_cases"):
            if getattr(cls, name) is getattr(Explorer, name):
                raise TypeError(f"{cls.__name__} (kind {kind!r}) must define {name}")
        for name in cls.SETTABLE:
            if not callable(getattr(cls, f"_check_{name}", None)):
                raise TypeError(f"{cls.__name__}: the setting {name!r} needs a _check_{name} method")
        registry.register(cls, kind, module)
        cls.KIND = kind
        cls.MODULE = registry.module_path(kind)
        cls._esm = frontend.compose(cls.MODULE)
        cls._css = frontend.css_source()

    def __init__(self, **traits: Any) -> None:
        if not self.KIND:
            raise TypeError(f"{type(self).__name__} is not an explorer kind (no kind= in its class statement)")
        self._ready = False
        self._writing = True  # the constructor's values are checked by the constructor
        try:
            super().__init__(kind=self.KIND, look=snapshot.style_data(), **traits)
        finally:
            self._writing = False
        self._recompute()
        self._ready = True

    # -- what a kind defines -----------------------------------------------------
    def _update(self) -> str:
        """Recompute what the state shows from the kept values; return an error text (``""`` when all is shown).

        A failure raises (``_apply`` then refuses the change)."""
        raise NotImplementedError

    def _snapshot(self) -> tuple[str, str]:
        """The current views as static HTML tables, and the key numbers as plain text."""
        raise NotImplementedError

    @classmethod
    def golden_cases(cls) -> list[dict[str, Any]]:
        """Calls of the kind's JavaScript and what attnlib says they return.

        Each case is ``{"fn": <a function exported by the composed module>, "args": [...],
        "expected": ...}``; the golden harness runs ``fn(...args)`` in node and compares the
        result with ``expected`` (numbers to 1e-12, ``-inf`` as such, everything else exactly;
        a key of ``expected`` that is missing in the result fails).
        """
        raise NotImplementedError

    # -- the one checked path ---------------------------------------------------
    def _checked(self, check: Callable[..., Any], *args: Any) -> Any:
        """Run a check; a refusal becomes ``InvalidSetting`` (and ``error``)."""
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
        """``traitlets``' ``set_trait``, through the same checked path as an assignment.

        Raises
        ------
        ValueError
            ``InvalidSetting`` (a ``ValueError`` whose message starts with the setting's name) when ``name`` is a synced
            trait and ``value`` is refused by its check, or the trait is not a setting; nothing is changed then.
        """
        if self._ready and not self._writing and name in self._synced():
            self._apply({name: value})
        else:
            super().set_trait(name, value)

    def _check_title(self, value: Any, now: Callable[[str], Any]) -> str:
        return check_text("title", value)

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

    def _recompute(self) -> None:
        self._write("error", self._update() or "")

    def _apply(self, proposed: dict[str, Any]) -> None:
        """The one path of every change after construction: check, recompute, keep, then tell observers."""
        values = self._check_all(proposed)
        old = {k: self._trait_values.get(k) for k in values}
        if all(_same(old[k], v) for k, v in values.items()):
            return  # checked, and nothing changes: the views stay as they are
        saved = {k: self.__dict__[k] for k in VIEW_ATTRS if k in self.__dict__}
        self._trait_values.update(values)
        try:
            with np.errstate(all="ignore"):
                self._recompute()
        except (ValueError, FloatingPointError, ArithmeticError) as exc:
            self._trait_values.update(old)
            self.__dict__.update(saved)
            names = ", ".join(proposed)
            raise self._refuse(SettingError(names, "a setting whose result attnlib can compute", f"a value for which {exc}")) from None
        # the result is up to date before anyone hears of the change (an observer reads the new ex.result)
        for name, value in values.items():
            if not _same(old[name], value):
                self._notify_trait(name, old[name], value)

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
        """A change from the browser: only state traits, checked like a change from code (all or nothing); a refusal is sent back.

        Every other key is refused and named in ``error``: data the explorer was made with, the
        widget's own traits (its front-end module ``_esm``, ``_css``, ``layout`` ...) and names that
        are no trait at all; the page gets the kept values back.

        Raises
        ------
        ValueError
            Never: a refused change (of any key that is not a state trait, or a value its check refuses) is reported in
            ``error`` and sent back to the page, and nothing is changed.
        """
        not_settings = [k for k in sync_data if k not in self.STATE]
        refused = ""
        if not_settings:
            refused = f"{', '.join(map(str, not_settings))} cannot be changed from the page; kept the values set in Python"
            back = [k for k in not_settings if k in self.keys]
            if back:
                self.send_state(back)
        proposal = {}
        for k, v in sync_data.items():
            if k in self.STATE:
                from_json = self.trait_metadata(k, "from_json", self._trait_from_json)
                proposal[k] = from_json(v, self)
        if proposal:
            # the lock holds what the page sent, as JSON (an array handed to set_state from code is compared as lists)
            lock = {k: sync_data[k].tolist() if isinstance(sync_data[k], np.ndarray) else sync_data[k] for k in proposal}
            try:
                with self._lock_property(**lock):
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
        return self._snapshot()[0]

    def summary_text(self) -> str:
        """The key numbers of the current setting as plain text."""
        return self._snapshot()[1]

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict, dict]:
        data, metadata = super()._repr_mimebundle_(**kwargs)
        data = dict(data)
        html, text = self._snapshot()
        data["text/plain"] = text
        data["text/html"] = snapshot.embed_html(self.kind, self.title, self.state_dict(), html)
        return data, metadata

    def __repr__(self) -> str:
        return self.summary_text()
