"""Layers that load their modules on first use: one module ``__getattr__`` (PEP 562) per package.

Importing a layer costs what its modules import: the engine's pydantic models (~0.2 s), the LLM
layer's settings, evaluation's statistics. A command's options (``<command> --help``), listing the
runs of a file and the app's shared frame need none of that, yet sit beside code that does. So the
layers are *lazy packages*: a package whose ``__init__`` calls :func:`attach` loads none of its
modules when it is imported, and

* ``package.module`` imports ``package/module.py`` the first time it is read (afterwards it is an
  ordinary attribute, as for any imported submodule);
* a name the package exports (``names={"Store": "store"}``) imports the module that defines it and
  is read from there each time, so the package never holds a copy of it.

Code that must start fast writes ``from knowsim_core import evaluation`` at its top and
``evaluation.explain.explain_run(run)`` where it needs it, instead of an import inside the
function; a module that needs the layer whenever it is used imports it at its top as usual. Each
lazy package's docstring says what its first use costs. Nothing in ``sys.modules`` is replaced or
hidden: these are ordinary imports, made later.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any, Callable, Mapping


def attach(package: str, names: Mapping[str, str] | None = None
           ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the package named ``package``: its submodules and ``names``
    (an exported name → the submodule that defines it), each imported when first read."""
    exported = dict(names or {})

    def __getattr__(name: str) -> Any:
        if name in exported:
            return getattr(importlib.import_module(f"{package}.{exported[name]}"), name)
        if not name.startswith("__"):
            try:
                return importlib.import_module(f"{package}.{name}")
            except ModuleNotFoundError as exc:
                if exc.name != f"{package}.{name}":  # the module exists and an import inside it failed
                    raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *exported})

    return __getattr__, __dir__
