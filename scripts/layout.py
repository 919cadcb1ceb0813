#!/usr/bin/env python3
"""The folder graph of src/: which folder imports which, and whether the
arrows keep to the floors.

An arrow A -> B (two folders of src/) is drawn when a file of A
  - includes a header of B ("B/name.h"), or
  - names a function or variable that one file of B alone defines with
    external linkage (a name of cprof's own: cprof_..., cprof__...).
Names of the C library that cprof interposes (malloc, pthread_create) draw
nothing: every file may call them.

The floors, from the ground up, are FLOORS below: a folder may import
folders on floors below its own (or its own floor), never above. The
output lists every arrow with the names that draw it, then the circles
(folders that reach each other), then the arrows that run up; the exit
status is 1 when there is a circle, an upward arrow or a forbidden one
(NEVER below), 0 otherwise.

  scripts/layout.py              the arrows, circles and upward arrows
  scripts/layout.py --dot        the graph for Graphviz (dot -Tsvg)
  scripts/layout.py --root DIR   another checkout
"""
import argparse
import os
import re
import sys

# Bottom to top. A folder imports only folders on lower floors; folders on
# one floor do not import each other.
FLOORS = [
    ["core"],  # buffers, log, settings, clocks, fds, the re-entrancy guard
    ["arch"],  # per-architecture registers and frames
    ["unwind"],  # walkers: cfa, frame pointers, from outside
    ["symbol"],  # modules, libdw symbolization
    ["sample"],  # samplers and their handlers, process readers
    ["interpose"],  # wrappers that hand events to the samplers
    ["profile"],  # what the library needs to encode
    ["model"],  # the offline model: decode, merge, filter, graph, reports
    ["registry"],  # profiles as objects
    ["tree"],  # process trees
    ["metrics", "push"],  # consumers of the registry
    ["ui"],  # pages (bytes)
    ["http"],  # the server, router, handlers
    ["life"],  # start, stop, exit files, setters: above all it starts
]

# Arrows the floors allow that the house still forbids: consumers read the
# registry and the public setters, never a sampler, a walker or the
# symbolizer; the profile model knows no sampler.
SAMPLERS = {"sample", "interpose", "unwind", "symbol"}
NEVER = {
    "metrics": SAMPLERS,
    "push": SAMPLERS,
    "ui": SAMPLERS,
    "http": SAMPLERS,
    "model": {"sample", "interpose"},
    "profile": {"sample", "interpose"},
}

COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)
NAME = re.compile(r"\bcprof_\w+")
# A definition at file scope: a line at column 0 that is not static, not a
# preprocessor line, not a typedef/extern/struct declaration, names
# cprof_x followed by "(" (a function; the body's "{" follows) or by "=",
# ";" or "[" (a variable).
DEF_FN = re.compile(r"^(?!static\b|extern\b|typedef\b|#|\s)[^;{}()=]*?\b(cprof_\w+)\s*\(", re.M)
DEF_VAR = re.compile(
    r"^(?!static\b|extern\b|typedef\b|#|\s|struct\b[^;]*\{|enum\b|union\b)"
    r"[^;{}()=]*?\b(cprof_\w+)\s*(?:\[[^\]]*\])?\s*(?:=|;)",
    re.M,
)


def strip(text):
    text = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return STRING.sub('""', text)


def folder_of(path, src):
    rel = os.path.relpath(path, src)
    parts = rel.split(os.sep)
    return parts[0] if len(parts) > 1 else None


def read_tree(src):
    files = {}
    for dirpath, _, names in os.walk(src):
        for n in names:
            if n.endswith((".c", ".h", ".cc", ".cpp")):
                p = os.path.join(dirpath, n)
                with open(p, encoding="utf-8", errors="replace") as f:
                    files[p] = f.read()
    return files


def definitions(path, text):
    """External names a .c file defines (function bodies follow "(...) {")."""
    out = set()
    if not path.endswith((".c", ".cc", ".cpp")):
        return out
    for m in DEF_FN.finditer(text):
        # a prototype ends with ";" before any "{": not a definition
        rest = text[m.end() :]
        brace, semi = rest.find("{"), rest.find(";")
        if brace >= 0 and (semi < 0 or brace < semi):
            out.add(m.group(1))
    for m in DEF_VAR.finditer(text):
        out.add(m.group(1))
    return out


def graph(root):
    src = os.path.join(root, "src")
    raw = read_tree(src)
    text = {p: strip(t) for p, t in raw.items()}
    owner = {}  # name -> the one file that defines it, None when several
    for p, t in text.items():
        for name in definitions(p, t):
            owner[name] = None if name in owner else p
    arrows = {}  # (from, to) -> set of reasons

    def arrow(a, b, why):
        if a and b and a != b:
            arrows.setdefault((a, b), set()).add(why)

    for p, t in text.items():
        here = folder_of(p, src)
        for inc in INCLUDE.findall(raw[p]):
            if "/" in inc and os.path.exists(os.path.join(src, inc)):
                arrow(here, inc.split("/")[0], "#include " + inc)
        for name in set(NAME.findall(t)):
            where = owner.get(name)
            if where and where != p:
                arrow(here, folder_of(where, src), name)
    return arrows


def circles(nodes, arrows):
    """Strongly connected components of more than one folder (Tarjan)."""
    succ = {n: sorted(b for (a, b) in arrows if a == n) for n in nodes}
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in succ[v]:
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

    for n in sorted(nodes):
        if n not in index:
            visit(n)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    ap.add_argument("--dot", action="store_true", help="print the graph for Graphviz")
    args = ap.parse_args()
    arrows = graph(args.root)
    floor = {f: i for i, names in enumerate(FLOORS) for f in names}
    nodes = {a for a, _ in arrows} | {b for _, b in arrows}
    nodes |= {d for d in os.listdir(os.path.join(args.root, "src"))
              if os.path.isdir(os.path.join(args.root, "src", d))}
    unknown = sorted(n for n in nodes if n not in floor)
    up = sorted((a, b) for (a, b) in arrows
                if a in floor and b in floor and floor[b] >= floor[a])
    never = sorted((a, b) for (a, b) in arrows if b in NEVER.get(a, ()))

    if args.dot:
        print("digraph src {\n  rankdir=BT; node [shape=box];")
        for (a, b) in sorted(arrows):
            style = ' [color=red]' if (a, b) in up or (a, b) in never else ""
            print(f'  "{a}" -> "{b}"{style};')
        print("}")
        return 0

    by_floor = sorted(nodes, key=lambda n: (-floor.get(n, len(FLOORS)), n))
    print(f"{len(nodes)} folders, {len(arrows)} arrows")
    for a in by_floor:
        for b in sorted(b for (x, b) in arrows if x == a):
            why = sorted(arrows[(a, b)])
            more = f", and {len(why) - 4} more" if len(why) > 4 else ""
            mark = "  UP" if (a, b) in up else "  FORBIDDEN" if (a, b) in never else ""
            print(f"  {a} -> {b}{mark}: {', '.join(why[:4])}{more}")
    found = circles(nodes, arrows)
    print(f"{len(found)} circles")
    for c in found:
        print("  " + " <-> ".join(c))
    print(f"{len(up)} arrows up (or across one floor)")
    for (a, b) in up:
        print(f"  {a} -> {b}")
    print(f"{len(never)} forbidden arrows (a consumer to a sampler, the model to a sampler)")
    for (a, b) in never:
        print(f"  {a} -> {b}")
    for n in unknown:
        print(f"folder {n} has no floor in scripts/layout.py's FLOORS")
    return 1 if found or up or never or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
