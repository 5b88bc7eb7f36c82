#!/usr/bin/env python3
"""Fail when a library includes a header of a library above it, or when
two source units include each other's headers (an include cycle).

The layers, bottom up, and what each folder may include besides itself.
A file belongs to the longest folder below that holds it; an include
"x/y/z.h" names the longest folder that is a prefix of its path. Only
quoted includes of our own tree are judged; system headers are free.
"""
import os
import re
import sys

MAY_INCLUDE = {
    # The leaves: they never call one another.
    'attach': set(),
    'symbolize': set(),
    'symbolize/go': {'symbolize'},  # symbolize/arrays.h only (header-only)
    # A CPython's frames read from its memory (through symbolize/'s
    # target_access.h), in the workers.
    'symbolize/python': {'symbolize'},
    'timeline': set(),
    'bundle': set(),
    # Interpretation of captures: the unwinder over attach's copies, and the
    # sandboxed workers that unwind, symbolize and read a Go runtime (whose
    # profiles they encode with bundle/profile.h).
    'symbolize/unwind': {'attach', 'symbolize'},
    'symbolize/worker': {'attach', 'symbolize', 'symbolize/unwind', 'symbolize/go',
                         'symbolize/python', 'bundle'},
    # Reading and rendering finished bundles.
    'bundle/views': {'bundle', 'timeline'},
    # The subcommands' shared helpers, and the capture engine.
    'cmd/cli': {'attach', 'bundle', 'bundle/views', 'cmd/engine'},
    'cmd/engine': {'attach', 'symbolize', 'symbolize/go', 'symbolize/unwind',
                   'symbolize/worker', 'timeline', 'bundle'},
    # The subcommands: anything.
    'cmd': {'attach', 'symbolize', 'symbolize/go', 'symbolize/python', 'symbolize/unwind',
            'symbolize/worker', 'timeline', 'bundle', 'bundle/views', 'cmd/cli', 'cmd/engine'},
}
# Generated into the build tree, named as if they lived here.
GENERATED = {'version.h': 'cmd', 'bundle/profile.pb-c.h': 'bundle'}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def folder_of(path):
    best = None
    for f in MAY_INCLUDE:
        if path == f or path.startswith(f + '/'):
            if best is None or len(f) > len(best):
                best = f
    return best


def main(root):
    problems = []
    units = {}  # unit ("dir/name") -> set of units its .c/.h include
    for f in sorted(MAY_INCLUDE):
        d = os.path.join(root, f)
        for name in sorted(os.listdir(d)):
            if not name.endswith(('.c', '.h')):
                continue
            rel = f + '/' + name
            if folder_of(rel) != f:
                continue
            unit = rel[:-2]
            deps = units.setdefault(unit, set())
            text = open(os.path.join(root, rel), encoding='utf-8', errors='replace').read()
            for inc in INCLUDE.findall(text):
                if '/' not in inc and inc not in GENERATED:
                    target = f + '/' + inc  # a header beside it
                else:
                    target = inc
                if target in GENERATED:
                    tf = GENERATED[target]
                    if tf != f and tf not in MAY_INCLUDE[f] and not (f == 'cmd' or f.startswith('cmd/')):
                        problems.append(f'{rel}: includes generated "{inc}" of {tf}/')
                    continue
                tf = folder_of(target)
                if tf is None:
                    continue  # not ours (tests/, a system header in quotes)
                if tf != f and tf not in MAY_INCLUDE[f]:
                    problems.append(f'{rel}: includes "{inc}" of {tf}/, which {f}/ may not use '
                                    f'(it may use: {", ".join(sorted(MAY_INCLUDE[f])) or "nothing of ours"})')
                if target.endswith('.h') and target[:-2] != unit:
                    deps.add(target[:-2])

    # Include cycles between units: a unit reaches itself through others.
    # Only units with a .c count: a header of its own (internal.h, a
    # header that extends a public one) calls nothing back.
    with_source = {u for u in units if os.path.exists(os.path.join(root, u + '.c'))}
    units = {u: {v for v in deps if v in with_source} for u, deps in units.items() if u in with_source}
    state = {}

    def visit(u, stack):
        state[u] = 1
        stack.append(u)
        for v in sorted(units.get(u, ())):
            if state.get(v) == 1:
                cyc = stack[stack.index(v):] + [v]
                problems.append('include cycle: ' + ' -> '.join(cyc))
            elif v in units and state.get(v) is None:
                visit(v, stack)
        stack.pop()
        state[u] = 2

    for u in sorted(units):
        if state.get(u) is None:
            visit(u, [])

    for p in problems:
        print(p)
    print(f'{len(units)} units checked, {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else '.'))
