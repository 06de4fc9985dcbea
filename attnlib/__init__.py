"""attnlib: the math behind the book *Deriving Attention*, in small tested functions.

The chapters call these functions instead of re-implementing the math, so
every number the book prints comes from one place.
"""

from importlib import metadata as _metadata

from . import (
    backward,
    blocked,
    compatibility,
    cost,
    exact,
    experiments,
    heads,
    induction,
    measure,
    paths,
    positional,
    retrieval,
    scaling,
    training,
    transformer,
)
from .core import (
    CAUSAL,
    NO_SCALING,
    SQRT_D_K,
    TOKENS,
    AttentionResult,
    additive_mask,
    additive_scores,
    attention,
    attention_parameter_count,
    causal_mask,
    cross_attention,
    multi_head_attention,
    project,
    running_example,
    scale_divisor,
    scaled_scores,
    self_attention,
    softmax,
)
from .positional import positional_frequencies, sinusoidal_encoding

try:  # the version is written once, in pyproject.toml; pip records it in the package metadata
    __version__ = _metadata.version("attnlib")
except _metadata.PackageNotFoundError:  # imported from a folder without being installed
    __version__ = "0+unknown"

__all__ = [
    "CAUSAL",
    "NO_SCALING",
    "SQRT_D_K",
    "TOKENS",
    "AttentionResult",
    "additive_mask",
    "additive_scores",
    "attention",
    "attention_parameter_count",
    "backward",
    "blocked",
    "causal_mask",
    "checks",
    "compatibility",
    "cost",
    "cross_attention",
    "exact",
    "exercises",
    "experiments",
    "heads",
    "induction",
    "measure",
    "multi_head_attention",
    "paths",
    "plots",
    "positional",
    "positional_frequencies",
    "project",
    "retrieval",
    "running_example",
    "scale_divisor",
    "scaled_scores",
    "scaling",
    "self_attention",
    "sinusoidal_encoding",
    "softmax",
    "training",
    "transformer",
    "variants",
]


#: Submodules imported on first use, so that ``import attnlib`` stays light: ``plots`` needs matplotlib
#: (about 0.3 s to import; a grader's kernel or an nbgrader command never draws), ``explorers`` (the live
#: explorers; ``widgets`` is its old name) needs anywidget, and the homework wing (``checks``, ``exercises``,
#: ``variants``: 17 chapter modules and the grading code) is needed only by a chapter's exercises.
#: ``attnlib.plots.heatmap(...)``, ``attnlib.checks.check_softmax`` and ``from attnlib import checks`` work as before.
_LAZY_SUBMODULES = ("checks", "exercises", "explorers", "plots", "variants", "widgets")


def __getattr__(name: str):
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'attnlib' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))
