"""An algorithm's options, declared once: name, type, default, allowed range, meaning.

A class declares them in its ``options`` attribute, a tuple of :class:`Option`::

    class MyAlgorithm(Algorithm):
        name = "mine"
        options = (
            Option("steps", int, 10, "gradient steps per iteration", low=1),
            Option("rule", str, "prob", "how z is chosen", choices=("prob", "unif")),
        )

Everything that needs the options reads that one declaration (:func:`declared_options`):

* :func:`validate_options`, which the command line and grid files call before anything runs: an
  unknown name (with the closest valid one and the list of valid ones), a value of the wrong type
  or out of range is a one-line :class:`OptionError`;
* ``--describe`` and ``--list`` (:mod:`harness.catalog`), and :func:`options_markdown`, the
  documentation's table of every algorithm's options;
* the cost estimate of ``--dry-run``, whose model gets the options with their defaults filled in
  (:func:`resolved_options`; a cell's spec never does, so adding a default never changes a hash).

A class that declares nothing (a plug-in written before declarations existed, or a subclass whose
``__init__`` takes options its parent's declaration does not list) keeps working: its options are
read from its ``__init__`` signature, its option-settings dataclasses and its docstrings'
``Options:`` sections (:mod:`algorithms.describe`), with the type and range of an option its parent
declares, and no type or range (any value; the constructor checks) otherwise.

Values are never converted: ``eta = 2`` stays the integer 2 in the cell's spec (an int is accepted
where a float is), ``2.0`` is refused where an integer is required, and a bool is never a number.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from algorithms.describe import REQUIRED, markdown_text, parse_options_doc, signature_options

__all__ = ["REQUIRED", "Option", "OptionError", "declared_options", "declares_options", "describe_options",
           "options_markdown", "resolved_options", "settings_options", "validate_options", "with_defaults"]

#: The types an option may declare: a value of that type (``float`` takes an int too), ``tuple`` for
#: a list value (kept as a tuple so the cell's spec stays hashable), ``object`` for any value.
TYPES = (int, float, str, bool, tuple, object)
_TYPE_NAMES = {int: "integer", float: "number", str: "string", bool: "boolean", tuple: "list", object: "any"}


class OptionError(ValueError):
    """An option that is unknown, of the wrong type or out of range: one line."""


@dataclass(frozen=True)
class Option:
    """One option of an algorithm.

    Attributes:
        name: its name (``--option NAME=VALUE``, a grid's ``options``).
        type: the type of its values (:data:`TYPES`); besides them, the strings of ``choices``.
        default: its value when not given, or :data:`REQUIRED`.
        meaning: what it sets (one or a few sentences; ``--describe`` and the docs print it).
        low, high: the allowed range of a number, inclusive (``low_open``: ``low`` itself excluded).
        choices: the strings it accepts: all of them for ``type=str``; besides numbers for a number
            (V-UCB's ``beta``: ``"paper"``, ``"authors"`` or a positive number).
        nullable: None (JSON ``null``) is accepted too, meaning "unset" (the default decides).
        z_kind: ``"discrete"`` or ``"continuous"`` when it applies on that kind of Z only, else None.
        low_open: whether ``low`` is excluded (``low=0, low_open=True``: positive).
    """

    name: str
    type: type
    default: object
    meaning: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    nullable: bool = False
    z_kind: str | None = None
    low_open: bool = False

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise TypeError(f"option {self.name}: type must be one of {[t.__name__ for t in TYPES]}, "
                            f"got {self.type!r}")
        if self.z_kind not in (None, "discrete", "continuous"):
            raise ValueError(f"option {self.name}: z_kind must be None, 'discrete' or 'continuous'")

    def expects(self) -> str:
        """What a valid value is, in words: ``a positive integer``, ``one of best, worst``."""
        if self.type is str and self.choices:
            what = f"one of {', '.join(self.choices)}"
        else:
            what = _range_words(self)
            if self.choices:
                what = f"{', '.join(repr(c) for c in self.choices)} or {what}"
        return f"{what} or null" if self.nullable else what

    def check(self, value: object, owner: str = "") -> object:
        """``value`` if it is valid (a list turned into a tuple for a ``tuple`` option), else a
        one-line :class:`OptionError`: ``"{owner}: {name} must be {expects}, got {value!r}"``."""
        if (value is None and self.nullable) or self.type is object:
            return value
        if isinstance(value, str) and value in self.choices:
            return value
        if self.type is tuple and isinstance(value, list | tuple):
            return tuple(value)
        if _of_type(value, self.type) and _in_range(self, value):
            return value
        hint = ""
        if isinstance(value, str) and self.choices:
            close = difflib.get_close_matches(value, self.choices, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
        prefix = f"{owner}: " if owner else ""
        raise OptionError(f"{prefix}{self.name} must be {self.expects()}, got {value!r}{hint}")


def _of_type(value: object, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):  # a bool is never a number or a string
        return False
    if kind is float:
        return isinstance(value, int | float) and math.isfinite(value)
    if kind is str and not isinstance(value, str):
        return False
    return isinstance(value, kind)


def _in_range(option: Option, value: object) -> bool:
    if option.type not in (int, float):
        return option.type is not str or not option.choices  # a str with choices: one of them only
    low, high = option.low, option.high
    if low is not None and (value < low or (option.low_open and value == low)):
        return False
    return high is None or value <= high


def _range_words(option: Option) -> str:
    """``a positive integer``, ``a finite number >= 0``, ``an integer in [1, 8]`` ..."""
    if option.type not in (int, float):
        return f"a {_TYPE_NAMES[option.type]}"
    low, high, integer, open_ = option.low, option.high, option.type is int, option.low_open
    if high is None and (integer, low, open_) in ((True, 1, False), (False, 0, True)):
        return "a positive integer" if integer else "a positive finite number"
    noun = "an integer" if integer else "a finite number"
    if low is not None and high is not None:
        return f"{noun} in {'(' if open_ else '['}{low:g}, {high:g}]"
    if low is not None:
        return f"{noun} {'>' if open_ else '>='} {low:g}"
    return f"{noun} <= {high:g}" if high is not None else noun


def with_defaults(options: Iterable[Option], **defaults: object) -> tuple[Option, ...]:
    """``options`` with the defaults of some replaced (a subclass that changes only defaults)."""
    options = tuple(options)
    unknown = set(defaults) - {o.name for o in options}
    if unknown:
        raise ValueError(f"with_defaults: no option(s) {', '.join(sorted(unknown))}")
    return tuple(replace(o, default=defaults[o.name]) if o.name in defaults else o for o in options)


def settings_options(settings: type, z_kind: str | None = None) -> tuple[Option, ...]:
    """The fields of a settings dataclass (V-UCB's :class:`~algorithms.lnso.LNSOSettings`) as
    options: type from the field's annotation (``int`` or ``float``), default from the field,
    meaning from the class docstring's ``Attributes:`` section, and positive (the dataclasses check
    that in ``__post_init__``; a test builds every one with the declared bounds' neighbours)."""
    hints = typing.get_type_hints(settings)
    documented = parse_options_doc(settings.__doc__)
    found = []
    for field in dataclasses.fields(settings):
        kind = hints[field.name]
        if kind not in (int, float):
            raise TypeError(f"{settings.__name__}.{field.name}: only int and float settings are options")
        meaning = documented.get(field.name, ("", None))[0]
        found.append(Option(field.name, kind, field.default, meaning, low=0 if kind is float else 1,
                            low_open=kind is float, z_kind=z_kind))
    return tuple(found)


# ---------------------------------------------------------------------------------------------------
# which declaration a class has


def _owner(cls: type, attribute: str) -> type | None:
    """The class in ``cls``'s MRO that sets ``attribute`` (not None), or None."""
    return next((c for c in cls.__mro__ if vars(c).get(attribute) is not None), None)


def declares_options(cls: type) -> bool:
    """Whether ``cls``'s options are declared for the ``__init__`` it runs: some class of its MRO
    sets ``options``, and no class below it defines another ``__init__``."""
    owner = _owner(cls, "options")
    init_owner = next((c for c in cls.__mro__ if "__init__" in vars(c)), object)
    return owner is not None and issubclass(owner, init_owner)


def describe_options(factory: type) -> list[Option]:
    """Every option of the algorithm class ``factory``, as ``--describe`` and ``--list`` print them:
    :func:`declared_options` as a list."""
    return list(declared_options(factory))


def declared_options(cls: type) -> tuple[Option, ...]:
    """The options of the algorithm class ``cls``: its declaration (:func:`declares_options`), or
    those of its ``__init__`` signature and docstrings (:func:`algorithms.describe.signature_options`),
    typed where an ancestor declares an option of the same name, of any value otherwise."""
    if declares_options(cls):
        return tuple(cls.options)
    owner = _owner(cls, "options")
    inherited = {o.name: o for o in (owner.options if owner is not None else ())}
    found = []
    for doc in signature_options(cls):
        if doc.name in inherited:
            parent = inherited.pop(doc.name)
            found.append(replace(parent, default=doc.default, meaning=doc.meaning or parent.meaning))
        else:
            found.append(Option(doc.name, object, doc.default, doc.meaning, z_kind=doc.z_kind))
    if _passes_keywords_on(cls):  # its **kwargs reach the declaring ancestor: those options too
        found += inherited.values()
    return tuple(found)


def _passes_keywords_on(cls: type) -> bool:
    """Whether the ``__init__`` that ``cls`` runs takes ``**kwargs`` (passed on to its parent)."""
    init = next((c for c in cls.__mro__ if "__init__" in vars(c)), object).__init__
    try:
        parameters = inspect.signature(init).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is p.VAR_KEYWORD for p in parameters)


# ---------------------------------------------------------------------------------------------------
# validation


def unknown_option_message(key: str, name: str, valid: list[str]) -> str:
    """``unknown option 'restart_per_dim' for rhokg-apx (did you mean 'restarts_per_dim'?); valid:
    ...``, or ``...: it takes no options``."""
    if not valid:
        return f"unknown option {name!r} for {key}: it takes no options"
    close = difflib.get_close_matches(name, valid, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown option {name!r} for {key}{hint}; valid: {', '.join(valid)}"


def validate_options(key: str, cls: type, given: Mapping[str, object]) -> dict[str, object]:
    """``given`` checked against ``cls``'s declaration (:func:`declared_options`): every name known,
    every value of its type and in its range; the values as given (a list as a tuple for a ``tuple``
    option), never with defaults added. One-line :class:`OptionError` otherwise. ``key`` names the
    algorithm in the messages (its registry key or import path).

    Whether an option applies on the problem's kind of Z, and any rule between options, is left to
    the constructor, which the callers run next (an option of the other kind of Z is accepted and
    ignored by some algorithms, refused by others, as before declarations existed)."""
    options = {o.name: o for o in declared_options(cls)}
    checked = {}
    for name, value in given.items():
        if name not in options:
            raise OptionError(unknown_option_message(key, name, list(options)))
        checked[name] = options[name].check(value, key)
    return checked


def resolved_options(cls: type, given: Mapping[str, object], z_kind: str) -> dict[str, object]:
    """The options an algorithm runs with on a Z of kind ``z_kind``: the declared defaults of those
    that apply there, overridden by ``given``. For models of the algorithm (its cost), never for a
    cell's spec."""
    defaults = {o.name: o.default for o in declared_options(cls) if o.z_kind in (None, z_kind)
                and o.default is not REQUIRED}
    return {**defaults, **given}


# ---------------------------------------------------------------------------------------------------
# documentation


def _cell(text: str) -> str:
    """Docstring markup to Markdown (``x`` and :func:`a.b` -> `x`, `a.b`), on one line of a table."""
    return " ".join(markdown_text(str(text)).split()).replace("|", "\\|")


def format_value(value: object) -> str:
    """A default as ``--option NAME=VALUE`` reads it: ``"paper"``, ``null``, ``0.1``; ``(required)``."""
    import json

    if value is REQUIRED:
        return "(required)"
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def options_table(options: Iterable[Option]) -> list[str]:
    """A Markdown table of ``options``: name, type and range, default, kind of Z, meaning."""
    lines = ["| option | values | default | Z | meaning |", "| --- | --- | --- | --- | --- |"]
    for o in options:
        values = "any" if o.type is object else o.expects()
        lines.append(f"| `{o.name}` | {_cell(values)} | `{format_value(o.default)}` | "
                     f"{o.z_kind or 'any'} | {_cell(o.meaning)} |")
    return lines


def options_markdown(algorithms: Mapping[str, type], level: int = 3) -> str:
    """The documentation of the options of ``algorithms`` (name -> class; the registry's:
    ``options_markdown(algorithms.ALGORITHMS)``), read from their declarations: one heading of
    ``level`` per algorithm, then its table (or "No options.")."""
    parts = []
    for key, cls in algorithms.items():
        options = declared_options(cls)
        body = options_table(options) if options else ["No options."]
        parts.append("\n".join([f"{'#' * level} `{key}`", "", *body]))
    return "\n\n".join(parts) + "\n"


def check_declaration(key: str, cls: type) -> None:
    """One-line ``ValueError`` unless ``cls.options`` (if set) is a tuple of :class:`Option` with
    distinct names whose defaults pass their own checks."""
    options = vars(cls).get("options")
    if options is None:
        return
    if not isinstance(options, tuple) or not all(isinstance(o, Option) for o in options):
        raise ValueError(f"algorithm {key!r}: options must be a tuple of algorithms.options.Option")
    names = [o.name for o in options]
    if len(set(names)) != len(names):
        raise ValueError(f"algorithm {key!r} declares option(s) twice: "
                         f"{', '.join(sorted({n for n in names if names.count(n) > 1}))}")
    for option in options:
        if option.default is not REQUIRED:
            try:
                option.check(option.default, key)
            except OptionError as error:
                raise ValueError(f"algorithm {key!r}: the default of {error}") from None
