"""`make help` lists every target of the Makefile that has a description, in one table."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def make_help() -> list[str]:
    run = subprocess.run(
        ["make", "--no-print-directory", "help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return run.stdout.splitlines()


def test_make_help_starts_every_description_in_the_same_column():
    lines = make_help()
    starts = [m for line in lines if (m := re.match(r"  make \S+ +", line))]
    assert len(starts) == len(lines), "\n".join(lines)
    columns = {len(start.group()) for start in starts}
    assert len(columns) == 1, "\n".join(lines)


def test_make_help_lists_every_described_target_once():
    described = re.findall(
        r"^([a-z-]+):.*## ", (ROOT / "Makefile").read_text(), re.MULTILINE
    )
    listed = [line.split()[1] for line in make_help()]
    assert listed == described
    assert {"screenshots", "browser"} <= set(listed)


def test_make_run_needs_no_browser_and_the_tests_install_it():
    makefile = (ROOT / "Makefile").read_text()
    prerequisites = dict(re.findall(r"^([a-z$()A-Z-]+):([^#\n]*)", makefile, re.M))
    for target in ("run", "migrate", "install", "serve", "$(STAMP)"):
        assert "browser" not in prerequisites[target].split(), target
    for target in ("test", "screenshots"):
        assert "browser" in prerequisites[target].split(), target
    stamp = makefile[makefile.index("$(STAMP):") :].split("\n\n")[0]
    assert "apt-get" not in stamp, stamp
    assert "chromium" not in stamp, stamp
