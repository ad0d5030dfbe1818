"""deploy/systemd/: a unit for each of the Procfile's processes, running the Procfile's own
command (without ``config.respawn``: systemd restarts it), each checked by
``systemd-analyze verify`` (a unit systemd would refuse or warn about fails here)."""

from __future__ import annotations

import configparser
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.processes import ROOT, procfile_commands

UNITS = ROOT / "deploy" / "systemd"
INSTALLED = "/srv/leadcall"  # where the units expect the project (and its .venv)


def unit(path: Path) -> configparser.RawConfigParser:
    parser = configparser.RawConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    parser.read_string(path.read_text())
    return parser


def as_run(command: str) -> list[str]:
    """A Procfile command as the process it starts: what follows ``exec``, without
    ``python -m config.respawn``, the program by its name, each ``"${NAME:-default}"`` as
    ``${NAME}`` (systemd sets the default with ``Environment=``) and Celery's ``%h`` as
    systemd's ``%H`` (both the host's name)."""
    command = command.split("exec ", 1)[1]
    command = command.replace("python -m config.respawn ", "")
    command = re.sub(r'"\$\{(\w+):-[^}]*\}"', r"${\1}", command)
    args = shlex.split(command.replace("${", "\\${"))
    return [Path(args[0]).name, *(a.replace("%h", "%H") for a in args[1:])]


@pytest.mark.parametrize("name", list(procfile_commands()))
def test_each_procfile_process_has_a_unit_running_its_command(name):
    path = UNITS / f"leadcall-{name}.service"
    assert path.exists(), f"no unit for the Procfile's {name}"
    service = unit(path)["Service"]
    start = shlex.split(service["ExecStart"].replace("${", "\\${"))
    assert start[0] == f"{INSTALLED}/.venv/bin/{start[0].rsplit('/', 1)[-1]}"
    assert [Path(start[0]).name, *start[1:]] == as_run(procfile_commands()[name])
    assert "respawn" not in service["ExecStart"]
    assert service["Restart"] == "always"
    assert service["EnvironmentFile"] == "/etc/leadcall/leadcall.env"
    assert service["WorkingDirectory"] == INSTALLED
    assert unit(path)["Install"]["WantedBy"] == "leadcall.target"
    # Every variable the command names has a value before the environment file's.
    for variable in re.findall(r"\$\{(\w+)\}", service["ExecStart"]):
        assert f"Environment={variable}=" in path.read_text(), variable


def test_the_units_are_the_procfiles_and_a_target():
    assert sorted(p.name for p in UNITS.glob("*.service")) == sorted(
        f"leadcall-{name}.service" for name in procfile_commands()
    )
    assert (UNITS / "leadcall.target").exists()


def test_systemd_analyze_verifies_every_unit(tmp_path):
    """systemd-analyze checks each unit as systemd would load it, ExecStart's program
    included, so the copies point at this checkout's .venv instead of /srv/leadcall."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is missing (Debian's systemd package)")
    copies = []
    for path in sorted(UNITS.glob("leadcall*.*")):
        if path.suffix in (".service", ".target"):
            copy = tmp_path / path.name
            copy.write_text(path.read_text().replace(INSTALLED, str(ROOT)))
            copies.append(str(copy))
    verified = subprocess.run(
        [analyze, "verify", "--man=no", *copies],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert verified.returncode == 0, verified.stderr
    assert verified.stderr == "", verified.stderr  # warnings (an unknown key) too
