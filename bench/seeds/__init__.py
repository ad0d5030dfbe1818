"""Scripts the bench runs in a process of the service's own, one module each: the seeds of
its parts, part 13's seed and timing of the morning report, and the count of part 2's
intake outcomes.

Each runs as ``python /abs/path/bench/seeds/<name>.py ARGUMENTS`` with the working
directory at the checkout of the service it seeds (``bench/before.py`` seeds an older
checkout than this one) and prints one JSON object. So each puts that directory first on
``sys.path`` before Django starts, and imports nothing of the bench: an older checkout may
not have it. They are real modules rather than source in strings so that ruff and mypy
read them.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType


def script(module: ModuleType) -> str:
    """The absolute path to run ``module`` by: the process that runs it works in the
    service's checkout, which may not be this one."""
    if module.__file__ is None:
        raise ValueError(f"{module.__name__} has no file")
    return str(Path(module.__file__).resolve())
