"""The one way the edge tests check a refusal: a ValueError that says what it should, and no warning on the way."""

from __future__ import annotations

import warnings

import pytest


def raises(call, *words):
    """``call()`` raises a ValueError containing every word, with no warning on the way; return its text."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError) as info:
            call()
    for w in words:
        assert w in str(info.value), (w, str(info.value))
    return str(info.value)
