"""The package graph of the product code, and the floors it must keep.

Data flows one way (ERP and world -> servers -> runs -> scores -> analysis -> report), and so do
the imports: each package imports only the floors below it, the ground floor
(``ledgerbench_core``) imports none of ours, and the roof (``ledgerbench``) is imported by none.
Every import counts: at module level, inside a function, under ``TYPE_CHECKING``, and
``importlib.import_module("pkg.mod")`` / ``runpy.run_module("pkg.mod")`` with a literal name.

``python scripts/package-graph`` prints the graph; tests/test_layering.py holds the floors.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

FLOORS: tuple[str, ...] = (
    "ledgerbench_core",
    "synthetic_erp",
    "erp_mcp",
    "synthetic_world",
    "harnesses",
    "judge",
    "analysis",
    "ledgerbench",
)
"""The product packages, lowest floor first: a package may import only packages before it."""

_DYNAMIC_IMPORTERS = {"import_module", "run_module"}


@dataclass(frozen=True)
class ImportSite:
    """One import of another product package: where it is and what it names."""

    module: str
    line: int
    target: str

    @property
    def source_package(self) -> str:
        return self.module.split(".")[0]

    @property
    def target_package(self) -> str:
        return self.target.split(".")[0]

    def __str__(self) -> str:
        return f"{self.module}:{self.line} imports {self.target}"


def module_name(root: Path, path: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        if node.level == 0:
            yield node.module or ""
        else:  # relative: resolve against the importing module's package
            base = module.split(".")
            keep = len(base) - node.level + (1 if is_package else 0)
            yield ".".join(base[:keep] + ([node.module] if node.module else []))
    elif isinstance(node, ast.Call) and node.args:
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        first = node.args[0]
        if name in _DYNAMIC_IMPORTERS and isinstance(first, ast.Constant):
            yield from [first.value] if isinstance(first.value, str) else []


def import_sites(root: Path, packages: tuple[str, ...] = FLOORS) -> list[ImportSite]:
    """Every import, in the product packages under ``root``, of another product package."""
    sites = []
    for package in packages:  # a package missing under root (an older checkout) has no imports
        for path in sorted((root / package).rglob("*.py")):
            module = module_name(root, path)
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                for target in _imported_names(node, module, path.name == "__init__.py"):
                    site = ImportSite(module, getattr(node, "lineno", 0), target)
                    if site.target_package in packages and site.target_package != package:
                        sites.append(site)
    return sites


def package_edges(sites: list[ImportSite]) -> dict[tuple[str, str], list[ImportSite]]:
    """(importing package, imported package) -> the import sites making that edge."""
    edges: dict[tuple[str, str], list[ImportSite]] = defaultdict(list)
    for site in sites:
        edges[(site.source_package, site.target_package)].append(site)
    return dict(sorted(edges.items()))


def cycles(edges: dict[tuple[str, str], list[ImportSite]]) -> list[list[str]]:
    """The strongly connected groups of more than one package (Tarjan), each sorted."""
    graph: dict[str, set[str]] = defaultdict(set)
    for source, target in edges:
        graph[source].add(target)
        graph.setdefault(target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def upward_imports(sites: list[ImportSite], floors: tuple[str, ...] = FLOORS) -> list[ImportSite]:
    """The imports of a package on the same or a higher floor than the importer."""
    rank = {package: i for i, package in enumerate(floors)}
    return [s for s in sites if rank[s.target_package] >= rank[s.source_package]]


def graph_text(edges: dict[tuple[str, str], list[ImportSite]], *, verbose: bool) -> str:
    """One line per edge with its count of importing modules (``-v``: each module and target)."""
    lines = []
    for (source, target), sites in edges.items():
        pairs = sorted({(s.module, s.target) for s in sites})
        lines.append(f"{source} -> {target}: {len(pairs)}")
        if verbose:
            lines += [f"     {module} -> {name}" for module, name in pairs]
    return "\n".join(lines)


def report(root: Path, *, verbose: bool) -> str:
    """The graph, its cycles and the imports against the floors, as ``scripts/package-graph``
    prints them."""
    sites = import_sites(root)
    edges = package_edges(sites)
    found = cycles(edges)
    upward = upward_imports(sites)
    lines = [graph_text(edges, verbose=verbose), ""]
    lines.append(f"package cycles: {len(found)}")
    lines += [f"     {' <-> '.join(group)}" for group in found]
    lines.append(f"imports against the floors ({' < '.join(FLOORS)}): {len(upward)}")
    if verbose:
        lines += [f"     {site}" for site in upward]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scripts/package-graph",
        description="Print the import graph among the product packages: one line per edge "
        "(importing package -> imported package: number of distinct importing module/target "
        "pairs), then the package cycles and the imports that go against the floors.",
    )
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root (default: .)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every import")
    args = parser.parse_args(argv)
    if not any((args.root / package).is_dir() for package in FLOORS):
        print(
            f"package-graph: error: {args.root} holds none of the packages {', '.join(FLOORS)}; "
            "pass the repository root with --root",
            file=sys.stderr,
        )
        return 2
    print(report(args.root, verbose=args.verbose))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "FLOORS",
    "ImportSite",
    "cycles",
    "graph_text",
    "import_sites",
    "main",
    "package_edges",
    "report",
    "upward_imports",
]
