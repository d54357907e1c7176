"""The numbers issue 24 reports before and after its redesign, measured from the source alone.

    python scripts/question_metrics.py [--root DIR] [--text]

prints one JSON object (`--text`: a short table) about the package `evcli/` under DIR (default: this
repository). Only the standard library is used and nothing of the project is imported or run, so it
measures a tree that does not import. A file that does not parse (one being written) or cannot be
read is skipped and named under "skipped"; nothing else depends on particular file names.

Question understanding = the Python files under QUESTION_DIRS plus QUESTION_FILES (where they exist);
`*.toml` files under QUESTION_DIRS are grammar data, counted apart (rows, words). Per file and in total:
  lines         physical lines;
  regexes       distinct patterns per file: every `re.compile(...)` call, and every pattern written in the
                source (a string, an f-string, a `+` of them, or a module-level string fragment) passed
                to another `re` function (search, match, fullmatch, finditer, findall, sub, subn, split).
                A pattern used at several places counts once (same text, fragments by name; a pattern
                not known statically, by its expression);
  dynamic_regexes  those whose text is not all known statically ("|".join(words), a parameter, ...):
                their alternatives count only the written part, so `alternatives` is a lower bound;
  alternatives  per regex, 1 + the `|` operators in its written text (outside character classes, not
                escaped); a module-level string fragment that regexes of the file interpolate
                (`rf"...{_DATE}..."`) adds its own `|` once, however many regexes use it;
  word_tables   module- or class-level assignments whose value is a literal tuple/list/set/dict
                holding >= 3 string literals (nested containers included), a `"a b c".split()`, a
                `frozenset/set/tuple/list/sorted(...)` of such a value, or a `|`/`+` of them;
  table_words   the string literals in those tables (each word of a split string is one);
  branches      `if`/`elif` statements, conditional expressions, `match` cases, comprehension `if`s,
                and each `and`/`or` operand beyond the first;
  caps          module-level UPPER_CASE names assigned an int or float literal (tuning caps).
Data rows: each list of strings in a TOML file (at any depth) is one row; its strings are its words.

Imports (every `*.py` under evcli/; `if TYPE_CHECKING:` bodies excluded):
  - an edge goes from a file to each evcli module an import names: `import evcli.a.b` -> evcli/a/b.py;
    `from P import x` -> P.x when that is a module, and -> P itself (its __init__.py, which that line
    runs) when P is a package other than the importing one, or when some x is no module; parent
    packages of a named module are no edges (every import would tie to evcli/__init__.py).
    `importlib.import_module("evcli....")` with a literal name is an edge too; with a computed name
    it is listed under "dynamic". A name that matches no file (one being moved) is listed under
    "unresolved". Edges are reported at module level (class bodies and `try` included) and inside
    functions, apart;
  - file circles: strongly connected components of more than one file, plus files that import
    themselves (a package __init__ that imports names from its own package); counted over all edges,
    and apart over module-level edges only (the circles that bite at import time);
  - folders: each package evcli/<pkg>/ (sub-packages included) is one node, each top-level module
    (evcli/x.py, evcli/__init__.py) its own; a folder circle = a strongly connected component of the
    folder graph with more than one node;
  - layers: the folders from the ground up; components in dependency order (what is imported first),
    and inside a folder circle the order that leaves the fewest file edges pointing up (exact up to
    EXACT_ORDER_LIMIT folders, greedy beyond). An upward arrow = a file edge from a lower folder to a
    higher one; only folder circles have them. Each is listed file -> file.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

PACKAGE = "evcli"
QUESTION_DIRS = ("evcli/scope", "evcli/agents/offline")
QUESTION_FILES = ("evcli/backends/vocabulary.py", "evcli/agents/intent.py")
REGEX_FUNCTIONS = frozenset({"compile", "search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split"})
TABLE_CALLS = frozenset({"frozenset", "set", "tuple", "list", "sorted"})
MIN_TABLE_WORDS = 3
EXACT_ORDER_LIMIT = 12  # folders in one circle ordered exactly (2^n subsets); a greedy order beyond
UPPER_NAME = re.compile(r"_*[A-Z][A-Z0-9_]*")
PLACEHOLDER = "\x00"  # stands for interpolated text in a pattern: no `|`, bracket or backslash in it
QUESTION_COLUMNS = (
    "lines",
    "regexes",
    "dynamic_regexes",
    "alternatives",
    "word_tables",
    "table_words",
    "branches",
    "caps",
)


@dataclass
class Tree:
    """The package under `root`, parsed once per file; files that could not be read are noted."""

    root: Path
    skipped: list[str] = field(default_factory=list)
    _parsed: dict[str, tuple[str, ast.Module] | None] = field(default_factory=dict)

    def source(self, rel: str) -> tuple[str, ast.Module] | None:
        if rel not in self._parsed:
            self._parsed[rel] = self._read(rel)
        return self._parsed[rel]

    def _read(self, rel: str) -> tuple[str, ast.Module] | None:
        try:
            text = (self.root / rel).read_text(encoding="utf-8")
            return text, ast.parse(text, filename=rel)
        except SyntaxError as error:
            self.skipped.append(f"{rel}: SyntaxError line {error.lineno}: {error.msg}")
        except (OSError, UnicodeDecodeError, ValueError) as error:
            self.skipped.append(f"{rel}: {type(error).__name__}: {error}")
        return None

    def python_files(self, under: str) -> list[str]:
        base = self.root / under
        if base.is_file():
            return [under] if base.suffix == ".py" else []
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*.py") if "__pycache__" not in p.parts)


# --- question understanding ---------------------------------------------------------------------


def count_alternatives(pattern: str) -> int:
    """1 + the `|` operators of a regex text: not escaped, not inside a character class."""
    bars, index, in_class = 0, 0, False
    while index < len(pattern):
        char = pattern[index]
        index += 1
        if char == "\\":
            index += 1
        elif in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            index += pattern[index : index + 1] == "^"
            index += pattern[index : index + 1] == "]"  # "[]...]", "[^]...]": that ] is a member
        elif char == "|":
            bars += 1
    return bars + 1


def _module_statements(body: Iterable[ast.stmt], into_classes: bool) -> Iterator[ast.stmt]:
    """Statements run at module level (through if/try/with), and class bodies when asked."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.ClassDef) and into_classes:
            yield from _module_statements(statement.body, into_classes)
        elif isinstance(statement, ast.If | ast.With):
            yield from _module_statements(statement.body, into_classes)
            yield from _module_statements(getattr(statement, "orelse", []), into_classes)
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody, *(h.body for h in statement.handlers)):
                yield from _module_statements(block, into_classes)


def _assignments(module: ast.Module, into_classes: bool) -> Iterator[tuple[list[ast.expr], ast.expr]]:
    for statement in _module_statements(module.body, into_classes):
        if isinstance(statement, ast.Assign):
            yield statement.targets, statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            yield [statement.target], statement.value


def _is_string_expression(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _is_string_expression(node.left) or _is_string_expression(node.right)
    return isinstance(node, ast.JoinedStr)


def string_fragments(module: ast.Module) -> dict[str, ast.expr]:
    """Module-level names bound to a string written in the source (pieces that patterns interpolate)."""
    return {
        target.id: value
        for targets, value in _assignments(module, into_classes=False)
        for target in targets
        if isinstance(target, ast.Name) and _is_string_expression(value)
    }


@dataclass
class PatternText:
    """A pattern's written text, with PLACEHOLDER where a fragment or unknown text is interpolated."""

    text: str = ""
    static: bool = True
    fragments: set[str] = field(default_factory=set)

    def add(self, node: ast.expr, fragments: Mapping[str, ast.expr]) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            self.text += node.value
        elif isinstance(node, ast.JoinedStr):
            for part in node.values:
                self.add(part.value if isinstance(part, ast.FormattedValue) else part, fragments)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            self.add(node.left, fragments)
            self.add(node.right, fragments)
        elif isinstance(node, ast.Name) and node.id in fragments:
            self.text += f"{PLACEHOLDER}{node.id}{PLACEHOLDER}"
            self.fragments.add(node.id)
        else:
            self.text += f"{PLACEHOLDER}?{PLACEHOLDER}"
            self.static = False


def _regex_callers(module: ast.Module) -> tuple[set[str], dict[str, str]]:
    """Names of the `re` module, and names bound to its functions by `from re import ...`."""
    modules: set[str] = set()
    functions: dict[str, str] = {}
    for node in ast.walk(module):
        if isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name for alias in node.names if alias.name == "re")
        elif isinstance(node, ast.ImportFrom) and node.module == "re" and not node.level:
            functions.update({alias.asname or alias.name: alias.name for alias in node.names})
    return modules, functions


def _regex_calls(module: ast.Module) -> Iterator[tuple[str, ast.expr]]:
    """(function, pattern expression) of each call of a `re` function that takes a pattern."""
    modules, functions = _regex_callers(module)
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        function = None
        if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
            function = node.func.attr if node.func.value.id in modules else None
        elif isinstance(node.func, ast.Name):
            function = functions.get(node.func.id)
        pattern = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "pattern"), None)
        if function in REGEX_FUNCTIONS and pattern is not None:
            yield function, pattern


def _is_written(node: ast.expr, fragments: Mapping[str, ast.expr]) -> bool:
    return _is_string_expression(node) or (isinstance(node, ast.Name) and node.id in fragments)


def regex_counts(module: ast.Module) -> dict[str, int]:
    """regexes, dynamic_regexes and alternatives of one module (definitions in the module docstring)."""
    fragments = string_fragments(module)
    patterns: dict[str, PatternText] = {}
    for function, node in _regex_calls(module):
        if function != "compile" and not _is_written(node, fragments):
            continue  # a compiled pattern or a parameter passed on: no pattern written here
        text = PatternText()
        text.add(node, fragments)
        patterns.setdefault(text.text if text.static else ast.unparse(node), text)
    used: dict[str, PatternText] = {}
    waiting = sorted({name for text in patterns.values() for name in text.fragments})
    while waiting:
        name = waiting.pop()
        if name not in used:
            used[name] = PatternText()
            used[name].add(fragments[name], fragments)
            waiting.extend(used[name].fragments)
    alternatives = sum(count_alternatives(text.text) for text in patterns.values())
    alternatives += sum(count_alternatives(text.text) - 1 for text in used.values())
    return {
        "regexes": len(patterns),
        "dynamic_regexes": sum(not text.static for text in patterns.values()),
        "alternatives": alternatives,
    }


def table_words(node: ast.expr) -> int:
    """String literals in a literal word source (0 when the value is no such source)."""
    if isinstance(node, ast.Constant):
        return 1 if isinstance(node.value, str) else 0
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return sum(table_words(element) for element in node.elts)
    if isinstance(node, ast.Dict):
        return sum(table_words(item) for item in (*node.keys, *node.values) if item is not None)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr | ast.Add):
        return table_words(node.left) + table_words(node.right)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        if isinstance(node.func, ast.Name) and node.func.id in TABLE_CALLS:
            return table_words(node.args[0])
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute):
        split_string = node.func.value
        if node.func.attr == "split" and isinstance(split_string, ast.Constant) and isinstance(split_string.value, str):
            return len(split_string.value.split())
    return 0


def word_tables(module: ast.Module) -> list[int]:
    """The words of each module- or class-level word table."""
    counts = [0 if isinstance(value, ast.Constant) else table_words(value) for _, value in _assignments(module, True)]
    return [count for count in counts if count >= MIN_TABLE_WORDS]


def branch_count(module: ast.Module) -> int:
    branches = 0
    for node in ast.walk(module):
        if isinstance(node, ast.If | ast.IfExp | ast.match_case):
            branches += 1
        elif isinstance(node, ast.comprehension):
            branches += len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            branches += len(node.values) - 1
    return branches


def _is_number(node: ast.expr) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) in (int, float)


def cap_count(module: ast.Module) -> int:
    return sum(
        isinstance(target, ast.Name) and UPPER_NAME.fullmatch(target.id) is not None and _is_number(value)
        for targets, value in _assignments(module, into_classes=False)
        for target in targets
    )


def question_file_metrics(text: str, module: ast.Module) -> dict[str, int]:
    tables = word_tables(module)
    return {
        "lines": len(text.splitlines()),
        **regex_counts(module),
        "word_tables": len(tables),
        "table_words": sum(tables),
        "branches": branch_count(module),
        "caps": cap_count(module),
    }


def data_rows(value: Any) -> Iterator[int]:
    """The word count of each list of strings in parsed TOML."""
    if isinstance(value, dict):
        for item in value.values():
            yield from data_rows(item)
    elif isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        yield len(value)
    elif isinstance(value, list):
        for item in value:
            yield from data_rows(item)


def data_file_metrics(tree: Tree, rel: str) -> dict[str, int] | None:
    try:
        text = (tree.root / rel).read_text(encoding="utf-8")
        rows = list(data_rows(tomllib.loads(text)))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        tree.skipped.append(f"{rel}: {type(error).__name__}: {error}")
        return None
    return {"lines": len(text.splitlines()), "rows": len(rows), "words": sum(rows)}


def _totals(per_file: Mapping[str, Mapping[str, int]], columns: Iterable[str]) -> dict[str, int]:
    return {column: sum(metrics[column] for metrics in per_file.values()) for column in columns}


def question_understanding(tree: Tree) -> dict[str, Any]:
    rels = sorted({rel for under in (*QUESTION_DIRS, *QUESTION_FILES) for rel in tree.python_files(under)})
    files = {}
    for rel in rels:
        parsed = tree.source(rel)
        if parsed is not None:
            files[rel] = question_file_metrics(*parsed)
    data_paths = sorted(
        p.relative_to(tree.root).as_posix() for under in QUESTION_DIRS for p in (tree.root / under).rglob("*.toml")
    )
    data = {rel: metrics for rel in data_paths if (metrics := data_file_metrics(tree, rel)) is not None}
    return {
        "files": files,
        "total": _totals(files, QUESTION_COLUMNS),
        "data": data,
        "data_total": _totals(data, ("lines", "rows", "words")),
    }


# --- imports ----------------------------------------------------------------------------------------


def module_files(tree: Tree) -> dict[str, str]:
    """Dotted module name -> file, for every file of the package."""
    modules = {}
    for rel in tree.python_files(PACKAGE):
        parts = rel.removesuffix(".py").split("/")
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = rel
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@dataclass
class ImportsOfFile(ast.NodeVisitor):
    """The evcli modules one file imports: (target module, inside a function), plus the misses."""

    module: str
    is_package: bool
    modules: Mapping[str, str]
    found: set[tuple[str, bool]] = field(default_factory=set)
    unresolved: list[str] = field(default_factory=list)
    dynamic: list[int] = field(default_factory=list)
    depth: int = 0

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_Lambda = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        if not _is_type_checking(node.test):
            self.generic_visit(node)
            return
        for statement in node.orelse:
            self.visit(statement)

    def _add(self, name: str, line: int) -> None:
        if name in self.modules:
            self.found.add((name, self.depth > 0))
        else:
            self.unresolved.append(f"{line}: {name}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == PACKAGE or alias.name.startswith(PACKAGE + "."):
                self._add(alias.name, node.lineno)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = self._absolute(node)
        if base is None or not (base == PACKAGE or base.startswith(PACKAGE + ".")):
            return
        submodules = [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in self.modules]
        for name in submodules:
            self._add(name, node.lineno)
        names_from_base = len(submodules) < len(node.names)
        base_is_package = base in self.modules and self.modules[base].endswith("__init__.py")
        if names_from_base or (base_is_package and base != self.module):
            self._add(base, node.lineno)

    def _absolute(self, node: ast.ImportFrom) -> str | None:
        if not node.level:
            return node.module
        parts = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
        if node.level - 1 >= len(parts):
            return None
        parts = parts[: len(parts) - (node.level - 1)]
        return ".".join([*parts, node.module] if node.module else parts)

    def visit_Call(self, node: ast.Call) -> None:
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if callee in ("import_module", "__import__") and node.args:
            name = node.args[0]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if name.value.startswith(PACKAGE):
                    self._add(name.value, node.lineno)
            else:
                self.dynamic.append(node.lineno)
        self.generic_visit(node)


def strongly_connected(nodes: Iterable[str], edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's components, each sorted; a component comes after every component it reaches."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def enter(node: str) -> Iterator[str]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return iter(sorted(edges.get(node, ())))

    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, enter(root))]
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    work.append((child, enter(child)))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component: list[str] = []
                    while not component or component[-1] != node:
                        component.append(stack.pop())
                        on_stack.discard(component[-1])
                    components.append(sorted(component))
    return components


def circles(nodes: Iterable[str], pairs: Iterable[tuple[str, str]]) -> list[list[str]]:
    """Components of more than one node, and nodes with an edge to themselves."""
    edges: dict[str, set[str]] = {}
    for source, target in pairs:
        edges.setdefault(source, set()).add(target)
    return [c for c in strongly_connected(nodes, edges) if len(c) > 1 or c[0] in edges.get(c[0], ())]


def folder_of(rel: str) -> str:
    parts = rel.split("/")
    return f"{parts[0]}/{parts[1]}/" if len(parts) > 2 else rel


def least_upward_order(members: list[str], weight: Mapping[tuple[str, str], int]) -> list[str]:
    """Members from the ground up, with the least weight of edges from a lower to a higher member."""
    if len(members) > EXACT_ORDER_LIMIT:
        return _greedy_order(members, weight)
    best: dict[frozenset[str], tuple[int, tuple[str, ...]]] = {frozenset(): (0, ())}
    for size in range(1, len(members) + 1):
        for chosen in combinations(members, size):
            candidates = []
            for top in chosen:
                below = frozenset(chosen) - {top}
                cost, order = best[below]
                candidates.append((cost + sum(weight.get((low, top), 0) for low in below), (*order, top)))
            best[frozenset(chosen)] = min(candidates)  # ties: the order whose names sort first
    return list(best[frozenset(members)][1])


def _greedy_order(members: list[str], weight: Mapping[tuple[str, str], int]) -> list[str]:
    """Ground first: each time the member whose imports of the rest (arrows up, once it is below) weigh least."""
    order: list[str] = []
    rest = sorted(members)
    while rest:
        lowest = min(rest, key=lambda member: (sum(weight.get((member, other), 0) for other in rest), member))
        order.append(lowest)
        rest.remove(lowest)
    return order


def layering(files: Iterable[str], pairs: set[tuple[str, str]]) -> tuple[list[list[str]], list[str]]:
    """Folder circles and the folders from the ground up."""
    weight: dict[tuple[str, str], int] = {}
    for source, target in pairs:
        if folder_of(source) != folder_of(target):
            key = (folder_of(source), folder_of(target))
            weight[key] = weight.get(key, 0) + 1
    folders = sorted({folder_of(rel) for rel in files})
    components = strongly_connected(folders, _adjacency(weight))
    order = [folder for component in components for folder in least_upward_order(component, weight)]
    return [component for component in components if len(component) > 1], order


def _adjacency(weight: Mapping[tuple[str, str], int]) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for source, target in weight:
        edges.setdefault(source, set()).add(target)
    return edges


def import_graph(tree: Tree) -> dict[str, Any]:
    modules = module_files(tree)
    graph: dict[str, dict[str, list[str]]] = {}
    edges: set[tuple[str, str, bool]] = set()
    unresolved: list[str] = []
    dynamic: list[str] = []
    for module, rel in sorted(modules.items(), key=lambda item: item[1]):
        parsed = tree.source(rel)
        if parsed is None:
            continue
        visitor = ImportsOfFile(module, rel.endswith("__init__.py"), modules)
        visitor.visit(parsed[1])
        edges.update((rel, modules[target], in_function) for target, in_function in visitor.found)
        unresolved += [f"{rel}:{miss}" for miss in sorted(visitor.unresolved)]
        dynamic += [f"{rel}:{line}" for line in visitor.dynamic]
        graph[rel] = {
            "module_level": sorted({modules[t] for t, inside in visitor.found if not inside}),
            "in_functions": sorted({modules[t] for t, inside in visitor.found if inside}),
        }
    all_pairs = {(source, target) for source, target, _ in edges}
    module_pairs = {(source, target) for source, target, inside in edges if not inside}
    folder_circles, layers = layering(modules.values(), all_pairs)  # a skipped file stays a node
    position = {folder: place for place, folder in enumerate(layers)}
    upward = sorted(pair for pair in all_pairs if position[folder_of(pair[0])] < position[folder_of(pair[1])])
    file_circles = circles(modules.values(), all_pairs)
    return {
        "files": len(graph),
        "edges": {"module_level": len(module_pairs), "in_functions": len(all_pairs - module_pairs)},
        "unresolved": unresolved,
        "dynamic": dynamic,
        "file_circles": {
            "count": len(file_circles),
            "module_level_count": len(circles(modules.values(), module_pairs)),
            "circles": file_circles,
        },
        "folder_circles": {"count": len(folder_circles), "circles": folder_circles},
        "layers": layers,
        "upward_arrows": {
            "count": len(upward),
            "arrows": [{"from": s, "to": t, "in_function": (s, t) not in module_pairs} for s, t in upward],
        },
        "graph": graph,
    }


# --- output -------------------------------------------------------------------------------------------


def measure(root: Path) -> dict[str, Any]:
    tree = Tree(root)
    result = {"root": str(root), "question_understanding": question_understanding(tree), "imports": import_graph(tree)}
    return {**result, "skipped": sorted(set(tree.skipped))}


def text_report(result: Mapping[str, Any]) -> str:
    understanding, imports = result["question_understanding"], result["imports"]
    width = max([len(rel) for rel in understanding["files"]] + [len(rel) for rel in understanding["data"]] + [5])
    short = ("lines", "regexes", "dynamic", "alts", "tables", "words", "branches", "caps")
    lines = ["question understanding".ljust(width) + "".join(f"{name:>9}" for name in short)]
    for rel, metrics in [*understanding["files"].items(), ("total", understanding["total"])]:
        lines.append(rel.ljust(width) + "".join(f"{metrics[column]:>9}" for column in QUESTION_COLUMNS))
    lines.append("grammar data".ljust(width) + "".join(f"{name:>9}" for name in ("lines", "rows", "words")))
    for rel, metrics in [*understanding["data"].items(), ("total", understanding["data_total"])]:
        lines.append(rel.ljust(width) + "".join(f"{metrics[column]:>9}" for column in ("lines", "rows", "words")))
    edges, file_circles = imports["edges"], imports["file_circles"]
    lines.append(
        f"\nimports: {imports['files']} files, {edges['module_level']} edges at module level, "
        f"{edges['in_functions']} only inside functions"
    )
    lines.append(f"file circles: {file_circles['count']} ({file_circles['module_level_count']} at module level)")
    lines += [f"  {', '.join(members)}" for members in file_circles["circles"]]
    lines.append(f"folder circles: {imports['folder_circles']['count']}")
    lines += [f"  {', '.join(members)}" for members in imports["folder_circles"]["circles"]]
    lines.append(f"upward arrows: {imports['upward_arrows']['count']}")
    lines += [
        f"  {arrow['from']} -> {arrow['to']}{' (inside a function)' if arrow['in_function'] else ''}"
        for arrow in imports["upward_arrows"]["arrows"]
    ]
    lines += [f"unresolved import {miss}" for miss in imports["unresolved"]]
    lines += [f"skipped {note}" for note in result["skipped"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent, help="holds evcli/")
    parser.add_argument("--text", action="store_true", help="a short table instead of JSON")
    options = parser.parse_args(argv)
    if not (options.root / PACKAGE).is_dir():
        print(f"error: no {PACKAGE}/ under {options.root}; pass --root DIR", file=sys.stderr)
        return 2
    result = measure(options.root.resolve())
    print(text_report(result) if options.text else json.dumps(result, indent=1, sort_keys=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
