"""Where things are: the repository, its chapters, the test environment's programs, the artifacts folder."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHAPTERS = ROOT / "chapters"
INSTRUCTOR = ROOT / "instructor"
#: the folder of the test environment's programs (jupyter-book, jupyter, nbgrader, alembic)
BIN = Path(sys.executable).parent
#: screenshots, reports and logs the tests leave for a person to look at (git-ignored)
ARTIFACTS = ROOT / "test-artifacts"
