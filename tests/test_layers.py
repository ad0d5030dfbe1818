"""The house's structure, drawn from the imports (DESIGN.md, "Layout"): apps depend
downward only, and no module outside tests and migrations grows past 600 lines."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Lower numbers sit lower. An app imports only apps on a lower floor: siblings never
# import each other (a lower app tells a higher one through a signal).
FLOORS = {
    "core": 0,  # the toolkit: Django and libraries only
    "config": 1,  # settings, URLs, the Celery app
    "accounts": 2,
    "users": 3,
    "webhooks": 3,
    "providers": 3,  # the provider seam: interfaces, the registry, Twilio, the simulator clock
    "consent": 3,  # the consent ledger: texting, leads and click-to-call write, calls reads
    "calls": 4,
    "understanding": 4,  # pure reading of a transcript into facts; insights and scoring use it
    "leads": 5,
    "clicktocall": 5,
    "insights": 5,  # writes the call's transcription; it never imports scoring
    "texting": 5,
    "scoring": 5,  # scores, coaching, figures and scored data; the pages are in pages/
    # appointments made on calls, by scorers and from transcripts; texts remind the lead
    "appointments": 6,
    # e-mail to leads: the first-touch and not-reached messages; texting's signal tells it
    "emails": 6,
    # spoken revocations from transcripts, the consent endpoint, the ledger's webhook events
    "consenting": 6,
    # handoff timers: a person must act on a lead (replies, callbacks, proposals, ...)
    "handoffs": 7,
    # the follow-up cadence: steps for leads not reached, stopped by a reply, an
    # appointment, an opt-out or a person; notify is its sibling
    "cadence": 8,
    "notify": 8,  # the CRM write-back, alerts and reports read calls, scores and figures
    "pages": 9,  # the staff pages read every app; nothing imports them
    "backoffice": 9,  # reads every app; nothing imports it
    "demo": 9,
    "bench": 10,
}
MOST_LINES = 600


def _modules() -> list[Path]:
    return [
        path
        for app in FLOORS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
    ]


def _imported_apps(path: Path) -> set[str]:
    """The project apps ``path`` imports, at any depth of the module (function bodies too)."""
    apps: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        apps.update(name.split(".")[0] for name in names)
    return apps & FLOORS.keys()


def test_every_app_is_on_a_floor():
    packages = {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if path.parent.name not in {"tests"}
    }
    assert packages <= FLOORS.keys(), packages - FLOORS.keys()


def test_no_import_runs_upward_or_sideways():
    upward = [
        f"{path.relative_to(ROOT)} imports {other}"
        for path in _modules()
        for other in _imported_apps(path) - {path.relative_to(ROOT).parts[0]}
        if FLOORS[other] >= FLOORS[path.relative_to(ROOT).parts[0]]
    ]
    assert not upward, "\n".join(upward)


def test_the_toolkit_imports_no_app():
    for path in (ROOT / "core").rglob("*.py"):
        assert _imported_apps(path) <= {"core"}, path


def test_no_module_is_over_600_lines():
    long = {
        str(path.relative_to(ROOT)): lines
        for path in _modules()
        if (lines := len(path.read_text().splitlines())) > MOST_LINES
    }
    assert not long, long
