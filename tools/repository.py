"""The repository that ``_config.yml`` names (``repository.url`` and ``branch``), read once for the tools and the tests."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

GITHUB = re.compile(r"https://github\.com/([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+?)(?:\.git)?(?=[/)\s\"'`?#]|$)")
BINDER = re.compile(r"https://mybinder\.org/v2/gh/([^/\s)]+)/([^/\s)]+)/([^?\s)]+)")


def repository() -> tuple[str, str, str]:
    """(owner, name, branch) of the repository that _config.yml names."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    match = GITHUB.fullmatch(config["url"].rstrip("/"))
    assert match, f"_config.yml repository.url is not a GitHub repository address: {config['url']!r}"
    return match.group(1), match.group(2), str(config.get("branch", "main"))
