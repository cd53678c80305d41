#!/usr/bin/python3
"""The include graph's rules, checked: make test runs this (tests/CMakeLists.txt).

- libk8s is four layers, each a folder, lowest first: base, format, kube, ml.
  A module of a layer includes only headers of its own layer and those
  below: never one of a higher layer.
- No cycle among modules (a module is a .c/.h pair; a .c including another
  module's header is an edge from the module to that one).
- The programs stand on the library side by side: webhook/ (wh_*),
  operator/ (op_*) and mldiag/ (md_*, the kubectl plugin) never include
  one another's headers.

    scripts/layers.py [ROOT]     exit 1 naming every violation
"""
import os
import re
import sys

LAYERS = ("base", "format", "kube", "ml")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root, folder):
    for d, _, files in os.walk(os.path.join(root, folder)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.join(d, f)


def includes(path):
    with open(path, errors="replace") as f:
        return INCLUDE.findall(f.read())


def module(path):
    return os.path.splitext(os.path.basename(path))[0]


def library(root):
    """{header name: layer index} and {module: set of modules it includes}."""
    layer_of, edges, files = {}, {}, []
    for i, layer in enumerate(LAYERS):
        for p in sources(root, os.path.join("libk8s", layer)):
            files.append((i, p))
            if p.endswith(".h"):
                layer_of[os.path.basename(p)] = i
    for i, p in files:
        m = module(p)
        for h in includes(p):
            if h in layer_of and module(h) != m:
                edges.setdefault(m, set()).add(module(h))
    return layer_of, edges, files


def upward(root, layer_of, files):
    out = []
    for i, p in files:
        for h in includes(p):
            if h in layer_of and layer_of[h] > i:
                out.append("%s (%s) includes %s of the higher layer %s" % (
                    os.path.relpath(p, root), LAYERS[i], h, LAYERS[layer_of[h]]))
    return out


def cycles(edges):
    """Each cycle once, as a list of modules."""
    out, state = [], {}

    def visit(m, path):
        state[m] = 1
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                out.append(path[path.index(n):] + [n])
            elif not state.get(n):
                visit(n, path + [n])
        state[m] = 2
    for m in sorted(edges):
        if not state.get(m):
            visit(m, [m])
    return out


# each program's folder and the prefix of its modules
PROGRAMS = {"webhook": "wh_", "operator": "op_", "mldiag": "md_"}


def programs(root):
    out = []
    for folder, own in PROGRAMS.items():
        banned = tuple(p for p in PROGRAMS.values() if p != own)
        for p in sources(root, folder):
            for h in includes(p):
                if os.path.basename(h).startswith(banned):
                    out.append("%s includes %s: the programs share only libk8s" % (
                        os.path.relpath(p, root), h))
    return out


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                           os.path.join(os.path.dirname(__file__), ".."))
    layer_of, edges, files = library(root)
    problems = upward(root, layer_of, files)
    problems += ["include cycle: " + " -> ".join(c) for c in cycles(edges)]
    problems += programs(root)
    for p in problems:
        print(p)
    if not problems:
        print("layers: %d library files in %d layers, no upward include, no cycle" % (
            len(files), len(LAYERS)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
