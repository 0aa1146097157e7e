"""The house rules, checked on the source: data flows one way (problems and algorithms never import
the harness or analysis; the harness never imports analysis), no module imports another that imports
it back (directly or through a chain, counting imports inside functions), and no module imports
another's private names."""

import ast
import importlib
from pathlib import Path

PACKAGES = ("problems", "algorithms", "harness", "analysis", "studies")
ROOT = Path(__file__).resolve().parents[1]


def imports() -> dict[str, set[tuple[str, tuple[str, ...]]]]:
    """module -> {(imported module, names imported from it)} for this project's modules."""
    graph: dict[str, set[tuple[str, tuple[str, ...]]]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            found = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add((node.module, tuple(a.name for a in node.names)))
                elif isinstance(node, ast.Import):
                    found.update((a.name, ()) for a in node.names)
            graph[module] = {(m, names) for m, names in found if m.split(".")[0] in PACKAGES}
    return graph


def test_problems_and_algorithms_never_import_the_harness_or_analysis() -> None:
    for module, targets in imports().items():
        if module.split(".")[0] in ("problems", "algorithms"):
            bad = sorted(m for m, _ in targets if m.split(".")[0] in ("harness", "analysis"))
            assert not bad, f"{module} imports {bad}"


def test_the_harness_never_imports_analysis() -> None:
    """Rows flow from the harness to analysis; a study's grids are read through harness.study."""
    for module, targets in imports().items():
        if module.split(".")[0] == "harness":
            bad = sorted(m for m, _ in targets if m.split(".")[0] == "analysis")
            assert not bad, f"{module} imports {bad}"


def test_the_engine_never_imports_a_study() -> None:
    for module, targets in imports().items():
        if module.split(".")[0] != "studies":
            bad = sorted(m for m, _ in targets if m.split(".")[0] == "studies")
            assert not bad, f"{module} imports {bad}"


def test_no_import_circles() -> None:
    graph = imports()
    modules = set(graph)

    def resolve(name: str) -> str | None:  # a package import resolves to its __init__ module
        return name if name in modules else None

    edges = {m: {resolve(t) for t, _ in targets} - {None, m} for m, targets in graph.items()}
    # a package's __init__ re-exporting its submodules is not a circle with them
    for m in edges:
        edges[m] = {t for t in edges[m] if not (m.startswith(t + ".") and t in PACKAGES)}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt):], nxt]
                raise AssertionError("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node)


def test_no_private_names_imported_across_modules() -> None:
    for module, targets in imports().items():
        for target, names in targets:
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            assert not private, f"{module} imports private {private} from {target}"


def _string_constants(tree: ast.AST) -> list[ast.Constant]:
    """The string constants of a module that are not docstrings (of the module, a class or a
    function): what its code names."""
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                docstrings.add(id(body[0].value))
    return [node for node in ast.walk(tree) if isinstance(node, ast.Constant)
            and isinstance(node.value, str) and id(node) not in docstrings]


def test_the_engine_names_no_problem_algorithm_or_claim_of_a_study() -> None:
    """harness/ and analysis/ name no registered problem, no registered algorithm and no claim id
    (C1, C2, ...) in code: those are a study's (studies/), which the engine receives as data.
    Nor in docstrings, comments and messages: :func:`test_the_engine_never_names_a_study_in_words`."""
    import re

    from algorithms import ALGORITHMS
    from problems import PROBLEMS

    names = set(PROBLEMS) | set(ALGORITHMS)
    found = []
    for package in ("harness", "analysis"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in _string_constants(ast.parse(path.read_text())):
                if node.value in names or re.fullmatch(r"C[0-9]+", node.value):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, "the engine names a study's problems, algorithms or claims:\n" + "\n".join(found)


#: Registered names that are also ordinary words the engine uses in their ordinary sense ("common
#: random numbers", ``np.random``, "drawn at random"): such a name counts only where it is quoted as a
#: name ("random", 'random', ``random``).
ORDINARY_WORDS = {"random"}
#: Claim ids that are also names the engine uses in their own sense: "S3", Amazon's object store, which
#: the engine writes to (``s3://``); as :data:`ORDINARY_WORDS`, such an id counts only quoted.
ORDINARY_CLAIM_IDS = {"S3"}


def _study_words() -> tuple[set[str], set[str]]:
    """(names, claim ids) of the studies, from the registries and the installed studies: the name of
    every installed study (its entry point's and its own), of every registered problem and
    algorithm; the id of every claim of an installed study."""
    from algorithms import ALGORITHMS
    from harness.study import installed_studies, load_study
    from problems import PROBLEMS

    installed = installed_studies()
    studies = [load_study(name) for name in installed]
    names = set(installed) | {study.name for study in studies} | set(PROBLEMS) | set(ALGORITHMS)
    claims = {claim.id for study in studies for claim in study.claims}
    assert studies and claims and PROBLEMS and ALGORITHMS, "no study, claim, problem or algorithm found"
    return names, claims


def test_the_engine_never_names_a_study_in_words() -> None:
    """The engine never names a study's problems, algorithms or claims, nor the word "paper": no file
    under harness/ or analysis/ holds, anywhere (code, docstrings, comments, messages, report prose),

    * "paper", case-insensitive, also inside a longer word (``paper_exponent``);
    * an installed study's name, a registered problem's or algorithm's, case-insensitive, as a whole
      word (no letter, digit, ``_`` or ``-`` on either side: ``vucb-prob`` is not in
      ``my-vucb-prob-x``), except :data:`ORDINARY_WORDS`, which count only quoted;
    * a claim id of an installed study, as the study spells it (case-sensitive: lower-case ``c1`` and
      ``s3`` are other tokens, a CPU-clock reading and the ``s3://`` URI scheme) and as a whole word
      (``C1-C8`` names two), except :data:`ORDINARY_CLAIM_IDS`, which count only quoted.

    Examples in the engine's docstrings and help use placeholders (``--problem PROBLEM``)."""
    import re

    names, claims = _study_words()
    assert not ORDINARY_WORDS - names, f"stale exceptions, no longer a name: {sorted(ORDINARY_WORDS - names)}"
    stale = ORDINARY_CLAIM_IDS - claims
    assert not stale, f"stale exceptions, no claim: {sorted(stale)}"

    def alternatives(words: set[str]) -> str:
        return "|".join(re.escape(word) for word in sorted(words, key=len, reverse=True))

    checks = [re.compile("paper", re.IGNORECASE),
              re.compile(rf"(?<![\w-])(?:{alternatives(names - ORDINARY_WORDS)})(?![\w-])", re.IGNORECASE),
              re.compile(rf"(``|\"|')(?:{alternatives(ORDINARY_WORDS)})\1", re.IGNORECASE),
              re.compile(rf"(?<!\w)(?:{alternatives(claims - ORDINARY_CLAIM_IDS)})(?!\w)"),
              re.compile(rf"(``|\"|')(?:{alternatives(ORDINARY_CLAIM_IDS)})\1")]
    found = []
    for package in ("harness", "analysis"):
        for path in sorted((ROOT / package).rglob("*")):
            if not path.is_file() or "__pycache__" in path.parts:
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                words = [match.group(0) for check in checks for match in check.finditer(line)]
                if words:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {', '.join(words)}: {line.strip()}")
    assert not found, ("the engine names a study, its problems, algorithms or claims, or 'paper' "
                       "(reword, or use a placeholder such as PROBLEM):\n" + "\n".join(found))


def test_the_checkpoint_keepers_module_loads_nothing_heavy() -> None:
    """Ray imports the keeper actor's module in the actor's own process, which every grid run and
    every replacement of a lost keeper waits for: it loads neither torch nor the project's modules."""
    import subprocess
    import sys

    code = ("import sys, harness.keeper; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('torch', 'numpy', 'ray', 'problems', 'algorithms', 'analysis') or m.startswith('harness.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.stdout.strip() == "['harness.keeper']"


def test_benchmarks_import_no_tests() -> None:
    """A benchmark runs from a checkout without its tests' modules: no file of ``benchmarks/`` imports
    from ``tests`` (shared helpers live in ``benchmarks/`` or the packages)."""
    import re

    pattern = re.compile(r"^\s*(from\s+tests[.\s]|import\s+tests\b)", re.MULTILINE)
    found = [str(path.relative_to(ROOT)) for path in sorted((ROOT / "benchmarks").rglob("*.py"))
             if pattern.search(path.read_text())]
    assert not found, f"benchmarks that import tests: {found}"


def test_a_problem_or_an_algorithm_is_registered_by_its_module_alone() -> None:
    """Adding an in-tree problem or algorithm is its module, its test and one line elsewhere: the
    registries import the modules (one name a line) and never a factory or a class by name, and every
    registered entry outside the problem registry's own synthetic problems came from a decorator."""
    from algorithms import ALGORITHMS
    from algorithms.base import registered_classes
    from problems import PROBLEMS
    from problems.base import registered_factories

    for registry, package in (("problems/registry.py", "problems"), ("algorithms/registry.py", "algorithms")):
        tree = ast.parse((ROOT / registry).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(f"{package}."):
                imported = {alias.name for alias in node.names}
                module = importlib.import_module(node.module)
                registered = {getattr(module, n) for n in imported if hasattr(module, n)}
                named = registered & {*registered_factories(), *registered_classes()}
                assert not named, f"{registry} imports {sorted(n.__name__ for n in named)} by name"
    own = {name for name, f in PROBLEMS.items() if getattr(f, "func", f).__module__ != "problems.registry"}
    assert {f().name for f in registered_factories()} == own
    assert set(ALGORITHMS.values()) == set(registered_classes())


def test_the_engines_public_functions_document_their_returns() -> None:
    """The engine's functions are documented as BoTorch's are, so every public function or method of
    harness/ and analysis/ that returns a value says what it takes (``Args:``) and what it returns
    (``Returns:``) in its docstring."""
    found = []
    for package in ("harness", "analysis"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text())
            def_types = ast.FunctionDef | ast.AsyncFunctionDef
            functions = [(node.name, node) for node in tree.body if isinstance(node, def_types)]
            functions += [(f"{node.name}.{item.name}", item) for node in tree.body
                          if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
                          for item in node.body if isinstance(item, def_types)]
            for name, node in functions:
                if (node.name.startswith("_") or node.returns is None
                        or (isinstance(node.returns, ast.Constant) and node.returns.value is None)):
                    continue
                arguments = node.args
                named = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs,
                                         arguments.vararg, arguments.kwarg) if a is not None]
                sections = (ast.get_docstring(node) or "").splitlines()
                missing = [section for section, needed in
                           (("Args:", any(a not in ("self", "cls") for a in named)), ("Returns:", True))
                           if needed and section not in sections]
                if missing:
                    found.append(f"{path.relative_to(ROOT)}:{name} (no {' or '.join(missing)})")
    assert not found, ("public functions of the engine without a Google-style Args: or Returns: section "
                       "(see BoTorch's docstrings):\n" + "\n".join(found))


#: Compares with a measure's name that are not about a risk measure: (file, the compare's source).
NOT_A_MEASURE = {
    ("algorithms/gp.py", "'mean' in hypers"),  # the GP's constant-mean hyperparameter
    ("algorithms/rahbo.py", "self.mean_noise == 'mean'"),  # RAHBO's option for its noise model
}


def test_no_measure_is_told_by_its_name_outside_the_measures_module() -> None:
    """A risk measure is an object (``problems/measures.py``): no engine, problem or algorithm code
    compares a value with a measure's name ("var", "cvar", "mean", "worst_case"), so that a new
    measure has one place to be declared; the default is ``DEFAULT_RISK``. Declarations (a set of
    the measures a method optimizes) and the command line's choices are names, not compares."""
    from problems.measures import RISK_MEASURES

    names = set(RISK_MEASURES)
    found = []
    for package in ("problems", "algorithms", "harness", "analysis"):
        for path in sorted((ROOT / package).rglob("*.py")):
            where = str(path.relative_to(ROOT))
            if where == "problems/measures.py":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Compare):
                    continue
                sides = [node.left, *node.comparators]
                values = [e for s in sides for e in ([s] if isinstance(s, ast.Constant) else
                                                     getattr(s, "elts", []))]
                if any(isinstance(v, ast.Constant) and v.value in names for v in values) and \
                        (where, ast.unparse(node)) not in NOT_A_MEASURE:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    assert names >= {"var", "cvar", "mean", "worst_case"}
    assert found == [], "\n".join(found)
