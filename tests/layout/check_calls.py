#!/usr/bin/env python3
"""Fail when source units call one another in a circle, whatever header
declares the functions: the graph comes from the built objects themselves
(nm: the symbols each object defines and the ones it needs), so a header
without a .c (cmd/engine/internal.h was one) cannot hide an edge.

Usage: check_calls.py SOURCE_ROOT BUILD_DIR. Only our libraries' and
commands' sources count (not tests/); an object built twice (the same
source in two targets) counts once.
"""
import json
import os
import subprocess
import sys

FOLDERS = ('cmd', 'attach', 'symbolize', 'timeline', 'bundle')


def symbols(obj):
    out = subprocess.run(['nm', '--format=posix', obj], capture_output=True, text=True, check=True).stdout
    defined, needed = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == 'U':
            needed.add(name)
        elif kind in 'TDBRVWGS' and kind.isupper():
            defined.add(name)
    return defined, needed


def main(root, build):
    root = os.path.realpath(root)
    with open(os.path.join(build, 'compile_commands.json')) as f:
        commands = json.load(f)
    units = {}  # "dir/name" (no .c) -> (defined, needed)
    for c in commands:
        src = os.path.realpath(os.path.join(c['directory'], c['file']))
        rel = os.path.relpath(src, root)
        if not rel.endswith('.c') or rel.split('/')[0] not in FOLDERS:
            continue
        obj = os.path.join(c['directory'], c['output'])
        if not os.path.exists(obj):
            continue  # not built (a target this configuration leaves out)
        unit = rel[:-2]
        d, n = symbols(obj)
        old = units.get(unit, (set(), set()))
        units[unit] = (old[0] | d, old[1] | n)
    owner = {}
    for u, (defined, _) in units.items():
        for s in defined:
            owner.setdefault(s, u)
    calls = {u: sorted({owner[s] for s in needed if s in owner and owner[s] != u})
             for u, (_, needed) in units.items()}

    # Tarjan's strongly connected components: each with more than one unit
    # is a circle of calls.
    index, low, on, stack, sccs = {}, {}, set(), [], []
    counter = [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in calls[v]:
            if w not in index:
                strong(w)
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
                sccs.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for u in sorted(calls):
        if u not in index:
            strong(u)
    for comp in sccs:
        edges = [f'{a} -> {b}' for a in comp for b in calls[a] if b in comp]
        print('call cycle among ' + ', '.join(comp) + ': ' + '; '.join(edges))
    print(f'{len(units)} units checked, {len(sccs)} call cycle(s)')
    return 1 if sccs else 0


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.exit('usage: check_calls.py SOURCE_ROOT BUILD_DIR')
    sys.exit(main(sys.argv[1], sys.argv[2]))
