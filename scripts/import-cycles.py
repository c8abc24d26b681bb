#!/usr/bin/env python3
"""List the import cycles between the top-level modules of each crate.

A file that names `crate::a::...` (in a `use`, a path or a doc link) depends on the top-level
module `a` of its crate; an item re-exported at the crate root (`pub use a::Item;`,
`pub use a::*;`) counts as module `a`. Cycles inside one top-level module (its files naming each
other through `super::`) are that module's own business and are not listed. Comments are
ignored, doc comments are not (a doc link is a dependency a reader follows).

    scripts/import-cycles.py            # every crate under crates/
    scripts/import-cycles.py crates/sim # one crate

Exits 1 if a cycle is found, 0 otherwise.
"""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def top_module(src: pathlib.Path, f: pathlib.Path) -> str:
    rel = f.relative_to(src)
    first = rel.parts[0]
    return first[:-3] if first.endswith(".rs") else first


def strip_comments(text: str) -> str:
    # Drop `//` comments that are not doc comments, and string literals' contents.
    out = []
    for line in text.splitlines():
        s = line.lstrip()
        if s.startswith("//") and not (s.startswith("///") or s.startswith("//!")):
            continue
        out.append(re.sub(r'"(?:[^"\\]|\\.)*"', '""', line))
    return "\n".join(out)


def root_exports(lib: pathlib.Path, modules: set) -> tuple:
    """Items re-exported at the root: name -> module, and the modules glob-exported."""
    names, globs = {}, []
    text = strip_comments(lib.read_text())
    for m in re.finditer(r"pub use (\w+)::([^;]+);", text):
        module, rest = m.group(1), m.group(2)
        if module not in modules:
            continue
        if rest.strip() == "*":
            globs.append(module)
            continue
        for item in re.findall(r"\b([A-Za-z_]\w*)\b(?:\s+as\s+(\w+))?", rest.strip("{} ")):
            names[item[1] or item[0]] = module
    return names, globs


def crate_graph(crate: pathlib.Path) -> dict:
    src = crate / "src"
    lib = src / "lib.rs" if (src / "lib.rs").exists() else src / "main.rs"
    files = [f for f in src.rglob("*.rs") if f != lib]
    modules = {top_module(src, f) for f in files}
    names, globs = root_exports(lib, modules)
    graph = {m: set() for m in modules}
    for f in files:
        here = top_module(src, f)
        text = strip_comments(f.read_text())
        for m in re.finditer(r"\bcrate::(\w+)", text):
            target = m.group(1)
            if target in modules:
                pass
            elif target in names:
                target = names[target]
            elif target[:1].isupper() and len(globs) == 1:
                target = globs[0]
            else:
                continue
            if target != here:
                graph[here].add(target)
    return graph


def cycles(graph: dict) -> list:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    crates = [pathlib.Path(a) for a in sys.argv[1:]] or sorted((ROOT / "crates").iterdir())
    found = 0
    for crate in crates:
        if not (crate / "src").is_dir():
            continue
        graph = crate_graph(crate)
        for comp in cycles(graph):
            found += 1
            edges = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
            print(f"{crate.name}: cycle between {', '.join(comp)}: {'; '.join(edges)}")
    print(f"{found} cycles")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
