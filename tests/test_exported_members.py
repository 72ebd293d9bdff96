"""What ``import agui_pipeline`` exposes is ``__all__``, each name under the package's own name.

The model is httpx's ``tests/test_exported_members.py``: the namespace holds the curated
API and the package's submodules, nothing picked up on the way (``Any``,
``TYPE_CHECKING``), and an exported class or function names ``agui_pipeline`` as its
module, so reprs, tracebacks and pickles show the path a user imports it from.
"""

from __future__ import annotations

import inspect
import pickle
import typing
from types import ModuleType

import agui_pipeline

PACKAGE = agui_pipeline.__name__


def _submodule(name: str, value: object) -> bool:
    return isinstance(value, ModuleType) and value.__name__ == f"{PACKAGE}.{name}"


def test_all_is_sorted_and_each_name_once() -> None:
    assert agui_pipeline.__all__ == sorted(set(agui_pipeline.__all__))


def test_the_public_namespace_is_all_and_the_submodules() -> None:
    exported = {name: getattr(agui_pipeline, name) for name in agui_pipeline.__all__}
    public = {
        name
        for name, value in vars(agui_pipeline).items()
        # pytest rewrites the asserts of a plugin's distribution, and leaves names such
        # as ``@py_builtins`` behind: not identifiers, so nothing an import can reach.
        if name.isidentifier() and not name.startswith("_")
        if not (_submodule(name, value) and name not in exported)
    }
    assert public == set(exported)


def test_no_typing_name_in_the_namespace() -> None:
    typing_names = set(typing.__all__)
    assert sorted(typing_names & set(vars(agui_pipeline))) == []


def test_each_exported_class_and_function_names_the_package_as_its_module() -> None:
    elsewhere = {
        name: value.__module__
        for name in agui_pipeline.__all__
        if inspect.isclass(value := getattr(agui_pipeline, name)) or inspect.isfunction(value)
        if value.__module__ != PACKAGE
    }
    assert elsewhere == {}


def test_an_exported_value_pickles_by_its_public_path() -> None:
    severity = agui_pipeline.Severity.WARNING
    assert b"catalog" not in pickle.dumps(severity)
    assert pickle.loads(pickle.dumps(severity)) is severity
    assert pickle.loads(pickle.dumps(agui_pipeline.run_sync)) is agui_pipeline.run_sync
