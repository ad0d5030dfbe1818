"""A name with a leading underscore is its module's own: no other module imports it
(``from x import _y``) or reaches it through the module (``x._y``). A helper two modules
share is public. The tests are left out: they may reach into a module (to pin a compiled
query, or to replace a private seam with ``monkeypatch``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEFT_OUT = {".venv", ".git", "migrations", "node_modules", "tests", "var"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _project_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of the project."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def _absolute(module: str | None, level: int, path: Path) -> str | None:
    """The dotted name an ``ImportFrom`` in ``path`` reads from (relative ones too)."""
    if not level:
        return module
    package = list(path.relative_to(ROOT).parent.parts)
    base = package[: len(package) - (level - 1)] if level > 1 else package
    return ".".join([*base, *([module] if module else [])]) or None


def _imports(tree: ast.AST, path: Path) -> tuple[list[str], set[str]]:
    """The private names ``tree`` imports from project modules (``line: what``), and the
    names it binds to project modules."""
    found: list[str] = []
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if _project_module(alias.name)
            )
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node.module, node.level, path)
            if module is None or not _project_module(module):
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{node.lineno}: from {module} import {alias.name}")
                elif _project_module(f"{module}.{alias.name}"):
                    modules.add(alias.asname or alias.name)
    return found, modules


def crossings(source: str, path: Path) -> list[str]:
    """Each use in ``source`` (the text of ``path``) of another project module's private
    name, as ``line: what``."""
    tree = ast.parse(source)
    found, modules = _imports(tree, path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in modules:
                found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def _sources() -> list[Path]:
    return [
        path
        for path in sorted(ROOT.rglob("*.py"))
        if not LEFT_OUT & set(path.relative_to(ROOT).parts)
    ]


def test_no_private_name_is_used_by_another_module():
    crossing = {
        str(path.relative_to(ROOT)): found
        for path in _sources()
        if (found := crossings(path.read_text(), path))
    }
    assert crossing == {}


def test_the_check_finds_each_kind_of_crossing():
    here = ROOT / "calls" / "pipeline" / "example.py"
    source = "\n".join(
        [
            "from calls.pipeline.transitions import call_finish, _hidden",
            "from . import legs",
            "from .legs import _also_hidden",
            "import calls.pipeline.offers",
            "from core import handover",
            "from os import _exit",  # not the project's
            "legs._a",
            "calls.pipeline.offers._b",
            "handover.hand_over, handover.__name__",
            "call_finish._c",  # a function's attribute, not a module's
        ]
    )
    assert crossings(source, here) == [
        "1: from calls.pipeline.transitions import _hidden",
        "3: from calls.pipeline.legs import _also_hidden",
        "7: legs._a",
        "8: calls.pipeline.offers._b",
    ]
    assert crossings("import calls\n", here) == []
