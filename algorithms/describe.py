"""An algorithm's options, their defaults and their meanings, read from the code itself, for a
class that does not declare them (:mod:`algorithms.options`: a registered algorithm declares
them; a plug-in may not).

The names and defaults come from the signature of the class's ``__init__`` (``problem``,
``seed_root`` and ``risk``, the cell's risk measure, are not options) and from the fields of the
dataclasses the class declares in
:attr:`algorithms.base.Algorithm.option_settings`; the meanings come from the class docstrings,
whose ``Options:`` (or ``Args:``, ``Attributes:``) section has one entry per option::

    Options:
        beta: the confidence-bound width ...
        n_raw (discrete Z): quasi-random x scored per iteration ...
            (a continuation line, indented further).

``(discrete Z)`` or ``(continuous Z)`` after a name says the option applies on that kind of Z
only. ``**kwargs`` of ``__init__`` that the class declares no settings for are passed on to the
parent class, whose options are then the class's too (a subclass that only changes defaults names
those and passes the rest on). What ``python -m harness.run --describe`` and ``--list`` print is
:func:`algorithms.options.describe_options`: the declaration where there is one, else
:func:`signature_options`.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from dataclasses import dataclass

from algorithms.base import Algorithm

#: The parameters of ``__init__`` that are not options.
NOT_OPTIONS = ("self", "problem", "seed_root", "risk")  # risk: the cell's (--risk), not an option
#: The docstring sections that document options.
SECTIONS = ("Options", "Args", "Arguments", "Attributes")
#: The default of an option that has none (it must be given).
REQUIRED = inspect.Parameter.empty

_HEADER = re.compile(r"^(\s*)(\w+):\s*$")
_ENTRY = re.compile(r"^(\**\w+(?:\s*,\s*\**\w+)*)\s*(?:\(([^)]*)\))?\s*:(?:\s+(.*))?$")
_ROLE = re.compile(r":[\w:]+:`~?([^`]+)`")


@dataclass(frozen=True)
class OptionDoc:
    """One option of an algorithm.

    Attributes:
        name: the option's name (``--option NAME=VALUE``, a grid's ``options``).
        default: its default, or :data:`REQUIRED`.
        meaning: what it sets, from the docstring ("" when the docstring does not say).
        z_kind: ``"discrete"`` or ``"continuous"`` when it applies on that kind of Z only, else
            None (every kind the algorithm handles).
    """

    name: str
    default: object
    meaning: str
    z_kind: str | None = None


def plain_text(text: str) -> str:
    """Docstring markup to plain text: ``x`` -> x, :class:`a.b.C` -> a.b.C."""
    return " ".join(_ROLE.sub(r"\1", text).replace("``", "").split())


def markdown_text(text: str) -> str:
    """Docstring markup to Markdown: ``x`` -> `x`, :class:`a.b.C` -> `a.b.C`."""
    return _ROLE.sub(r"`\1`", text).replace("``", "`")


def _z_kind(note: str | None) -> str | None:
    for kind in ("discrete", "continuous"):
        if note and re.fullmatch(rf"{kind}\s+Z(\s+only)?", note.strip()):
            return kind
    return None


def parse_options_doc(doc: str | None) -> dict[str, tuple[str, str | None]]:
    """``{name: (meaning, z_kind)}`` from the ``Options:`` / ``Args:`` / ``Attributes:`` sections
    of a docstring (see the module docstring). An entry may name several options (``a, b: ...``),
    which then share the meaning; an entry's continuation lines are indented further than it; a
    section ends at the first line indented no further than its header."""
    entries: list[tuple[list[str], str | None, list[str]]] = []  # (names, kind of Z, text lines)
    # not dedented: only relative indentation counts, and a docstring that opens with its section
    # header (``"""Options:``) has its entries indented further than the header all the same
    lines = (doc or "").expandtabs().strip().splitlines()
    i = 0
    while i < len(lines):
        header = _HEADER.match(lines[i])
        i += 1
        if not header or header.group(2) not in SECTIONS:
            continue
        base = len(header.group(1))
        entry_indent: int | None = None
        for line in lines[i:]:
            if not line.strip():
                i += 1
                continue
            indent = len(line) - len(line.lstrip())
            if indent <= base:
                break
            entry = _ENTRY.match(line.strip())
            if entry and entry_indent in (None, indent):
                entry_indent = indent
                names = [n.strip().lstrip("*") for n in entry.group(1).split(",")]
                entries.append((names, _z_kind(entry.group(2)), [entry.group(3) or ""]))
            elif entries and entry_indent is not None:
                entries[-1][2].append(line.strip())
            i += 1
    found: dict[str, tuple[str, str | None]] = {}
    for names, kind, text in entries:
        for name in names:
            found.setdefault(name, (plain_text(" ".join(text)), kind))
    return found


def _meaning(owners: list[type], name: str) -> tuple[str, str | None]:
    """The first documentation of option ``name`` among the docstrings of ``owners``."""
    for owner in owners:
        documented = parse_options_doc(owner.__doc__)
        if name in documented:
            return documented[name]
    return "", None


def _init_owner(cls: type) -> type:
    """The class in ``cls``'s MRO whose ``__init__`` ``cls`` runs."""
    return next(c for c in cls.__mro__ if "__init__" in vars(c))


def _init_options(cls: type, documented: list[type], uses_settings: bool) -> list[OptionDoc]:
    """The options of the ``__init__`` that ``cls`` runs, and, where its ``**kwargs`` are passed on,
    of its parent's: in the parent's order, with this class's defaults where it names them."""
    owner = _init_owner(cls)
    if owner is Algorithm or owner is object:  # the base takes no options (it refuses any)
        return []
    own: dict[str, OptionDoc] = {}
    passes_on = False
    for parameter in inspect.signature(owner.__init__).parameters.values():
        if parameter.name in NOT_OPTIONS or parameter.kind is parameter.VAR_POSITIONAL:
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            passes_on = not uses_settings
            continue
        meaning, kind = _meaning(documented, parameter.name)
        own[parameter.name] = OptionDoc(parameter.name, parameter.default, meaning, kind)
    if not passes_on:
        return list(own.values())
    inherited = _init_options(owner.__mro__[1], documented, uses_settings)
    names = {o.name for o in inherited}
    return [own.get(o.name, o) for o in inherited] + [o for o in own.values() if o.name not in names]


def signature_options(factory: type[Algorithm]) -> list[OptionDoc]:
    """Every option of the algorithm class ``factory`` as its code says: in the order of its
    ``__init__`` (then the fields of its option settings, by kind of Z); see the module docstring.
    An option whose meaning no docstring gives has ``meaning == ""``. What a class that declares no
    ``options`` (:mod:`algorithms.options`) is described by."""
    documented = [c for c in factory.__mro__ if c is not object]
    options = _init_options(factory, documented, bool(factory.option_settings))
    seen = {o.name for o in options}
    for kind, settings in factory.option_settings.items():
        for setting in settings:
            for field in dataclasses.fields(setting):
                if field.name in seen:
                    continue
                seen.add(field.name)
                default = (field.default if field.default is not dataclasses.MISSING
                           else field.default_factory() if field.default_factory is not dataclasses.MISSING
                           else REQUIRED)
                meaning, _ = _meaning([setting], field.name)
                options.append(OptionDoc(field.name, default, meaning, kind))
    return options


def options_on(options: list[OptionDoc], kind: str) -> list[OptionDoc]:
    """The options that apply on a Z of kind ``kind``."""
    return [o for o in options if o.z_kind in (None, kind)]
