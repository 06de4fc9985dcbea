"""One repository address: _config.yml's ``repository.url`` (and ``branch``), from which the rest follows.

The chapters' Binder and repository buttons are made from it by the theme at
build time (checked on the built pages by tests/book/test_lite.py and
tests/web/test_web_pages.py). The two places that cannot be derived, the README's
Binder badge (GitHub shows the README as it is) and the clone command on
the page "Ways to run this book", are checked here: after a fork changes
``_config.yml``, this test fails and prints the lines to write.
"""

from __future__ import annotations

from support.paths import ROOT
from support.repository import BINDER, GITHUB, repository


def binder_badge(owner: str, name: str, branch: str) -> str:
    url = f"https://mybinder.org/v2/gh/{owner}/{name}/{branch}?urlpath=lab/tree/chapters/01-running-example.ipynb"
    return f"[![Binder](https://mybinder.org/badge_logo.svg)]({url})"


def project_texts() -> dict[str, str]:
    """The committed text files that readers see: README, book pages, notebooks, package metadata."""
    paths = [ROOT / "README.md", ROOT / "pyproject.toml", *ROOT.glob("*.md"), *(ROOT / "chapters").glob("*.ipynb")]
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in sorted(set(paths))}


def test_readme_binder_badge_matches_config():
    owner, name, branch = repository()
    want = binder_badge(owner, name, branch)
    lines = (ROOT / "README.md").read_text().splitlines()
    assert want in lines, f"README.md's Binder badge should be the line\n{want}"


def test_every_repository_and_binder_address_names_the_configured_repository():
    owner, name, branch = repository()
    problems = []
    for path, text in project_texts().items():
        for match in GITHUB.finditer(text):
            if (match.group(1), match.group(2)) != (owner, name):
                problems.append(f"{path}: {match.group(0)} (want https://github.com/{owner}/{name})")
        for match in BINDER.finditer(text):
            if match.groups() != (owner, name, branch):
                problems.append(f"{path}: {match.group(0)} (want https://mybinder.org/v2/gh/{owner}/{name}/{branch})")
    assert problems == [], "\n".join(problems)


def test_ways_to_run_clones_the_configured_repository():
    owner, name, _ = repository()
    text = (ROOT / "ways-to-run.md").read_text()
    assert f"git clone https://github.com/{owner}/{name}\ncd {name}\n" in text, (
        f"ways-to-run.md should show\ngit clone https://github.com/{owner}/{name}\ncd {name}"
    )
