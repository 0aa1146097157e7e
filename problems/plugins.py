"""Objects named by import path: ``MODULE:ATTR`` (``ATTR`` may be dotted: ``pkg.mod:Class.factory``).

A problem or an algorithm that is not registered in this package is named by where it lives in
the user's own code; the cell spec records that string, and every process that runs the cell (a Ray
worker too) imports it again. The module must be importable there: on a local Ray the workers see
the directory the command was started from and the driver's ``PYTHONPATH``; on a cluster every node
needs it (installed, or on the nodes' ``PYTHONPATH``; docs/how-to/own-problem.md).
"""

from __future__ import annotations

import importlib

__all__ = ["PluginError", "import_object", "is_import_path"]


class PluginError(ValueError):
    """An import path that names nothing usable: one line, meant for the user as it stands."""


def is_import_path(name: str) -> bool:
    """Whether ``name`` is an import path (it has a ``:``) rather than a registry name."""
    return ":" in name


def _dotted(text: str) -> bool:
    return bool(text) and all(part.isidentifier() for part in text.split("."))


def import_object(path: str, kind: str) -> object:
    """The object at ``path`` (``MODULE:ATTR``); :class:`PluginError` naming ``kind`` (e.g.
    ``"problem"``) and the cause if the path is malformed, the module cannot be imported, importing
    it raises, or it has no such attribute."""
    module_name, _, attribute = path.partition(":")
    if not _dotted(module_name) or not _dotted(attribute):
        raise PluginError(f"{kind} {path!r} is not an import path MODULE:ATTR (e.g. mymodule:my_{kind})")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and module_name.startswith(error.name):
            raise PluginError(f"{kind} {path!r}: no module named {error.name!r} on the Python path "
                              "(run from its directory, or add it to PYTHONPATH)") from None
        raise PluginError(f"{kind} {path!r}: importing {module_name} failed: {error}") from None
    except Exception as error:  # the user's module raised while importing: its reason, one line
        reason = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise PluginError(f"{kind} {path!r}: importing {module_name} raised {type(error).__name__}"
                          + (f": {reason}" if reason else "")) from None
    target: object = module
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise PluginError(f"{kind} {path!r}: {module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    return target
