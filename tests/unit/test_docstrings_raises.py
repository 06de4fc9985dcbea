"""Every public function of attnlib says what it raises: a numpydoc ``Raises`` section in its docstring.

The README's "How attnlib treats odd input" states the rules once and points to these sections for
each function. The functions are found from the package (``support/public_api.py``): every public
function and method with at least one parameter, and every public class that takes arguments (its
docstring documents the constructor). Records that attnlib fills (dataclasses, named tuples) and
exception classes take no reader input of their own and are not asked.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from support.public_api import parameters, public_callables

RAISES = re.compile(r"^Raises\n-{6,}\n(\S.*)\n((?: {4}\S.*\n?)+)", re.M)


def _asked(label: str, obj) -> bool:
    if inspect.isclass(obj) and (
        dataclasses.is_dataclass(obj) or (issubclass(obj, tuple) and hasattr(obj, "_fields")) or issubclass(obj, BaseException)
    ):
        return False
    return bool([p for p in parameters(obj) if p not in ("args", "kwargs")])


def test_every_public_function_has_a_raises_section():
    missing = [label for label, obj in public_callables() if _asked(label, obj) and not RAISES.search(inspect.getdoc(obj) or "")]
    assert not missing, f"add a numpydoc Raises section (what is refused, and that the message names it) to: {missing}"


def test_a_raises_section_names_an_exception_and_says_when():
    asked = [(label, obj) for label, obj in public_callables() if _asked(label, obj)]
    assert len(asked) > 200
    for label, obj in asked:
        doc = inspect.getdoc(obj)
        assert len(RAISES.findall(doc)) == 1, f"{label}: one Raises section, not {len(RAISES.findall(doc))}"
        found = RAISES.search(doc)
        exception, text = found.group(1).strip(), " ".join(found.group(2).split())
        assert exception == "ValueError", f"{label}: attnlib refuses input with ValueError (or a subclass, named in the text): {exception}"
        assert len(text) > 20, f"{label}: the Raises section must say when: {text!r}"
        named = [p for p in parameters(obj) if f"``{p}``" in text]
        assert named or text.startswith(("Never", "``InvalidSetting``")), f"{label}: the Raises section names no argument: {text!r}"

