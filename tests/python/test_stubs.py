"""The hand-written stubs (ringsync/_ringsync.pyi) name exactly what the extension defines."""

import ast
import pathlib

import ringsync
from ringsync import _ringsync

# Names the stub declares for typing only.
TYPING_ONLY = {"ArrayLike", "Placement", "AveragerStats", "Sequence", "Any", "TypedDict"}


def stub_tree():
    path = pathlib.Path(_ringsync.__file__).with_name("_ringsync.pyi")
    assert path.exists(), f"{path} is not installed with the package"
    return ast.parse(path.read_text())


def declared(body):
    names = set()
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets)
        elif isinstance(node, ast.ImportFrom):
            names.update(a.name for a in node.names)
    return names


def public(obj):
    return {n for n in dir(obj) if not n.startswith("_") or n in ("__init__", "__version__")}


def test_module_level_names_match():
    tree = stub_tree()
    stub = declared(tree.body) - TYPING_ONLY
    runtime = {n for n in public(_ringsync) if n != "__init__"}
    assert stub == runtime
    assert set(ringsync.__all__) == runtime


def test_class_members_match():
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef) and node.name not in TYPING_ONLY and node.body[0].__class__ is not ast.Expr:
            cls = getattr(_ringsync, node.name)
            if issubclass(cls, BaseException):
                continue
            inherited = public(object)
            assert declared(node.body) == public(cls) - inherited | {"__init__"}, node.name
