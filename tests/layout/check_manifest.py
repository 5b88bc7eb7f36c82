#!/usr/bin/env python3
"""Check real bundles against the bundle format's one document.

Usage: check_manifest.py FORMAT_DOC BUNDLE_DIR...

doc/bundle-format.md is the contract between the capture engine, which
writes bundles, and every reader (report, diff, export, merge, verify,
pem). Its tables list each member and each manifest key with its type and
unit. For each bundle this fails on a manifest key the document does not
name or whose value is not of the type it says, and on a member whose name
no row of the members table matches.

Key rows: | `a.b.c` | type | unit | meaning |, where a path component
`*` stands for any one key (a map: counters, processes) and `[]` for the
elements of an array; type is string, number, bool or object (an object
whose keys are the user's, listed no further). Member rows:
| `name` | ... with `*` for any run of characters but '/'.
"""
import fnmatch
import json
import os
import re
import sys

KEY_ROW = re.compile(r'^\|\s*`([^`]+)`\s*\|\s*(string|number|bool|object|null)\s*\|')
MEMBER_ROW = re.compile(r'^\|\s*`([^`]+)`\s*\|')


def load_doc(path):
    keys, members, section = {}, [], None
    for line in open(path, encoding='utf-8'):
        if line.startswith('## '):
            section = line[3:].strip().lower()
            continue
        if section and section.startswith('manifest keys'):
            m = KEY_ROW.match(line)
            if m:
                keys[m.group(1)] = m.group(2)
        elif section and section.startswith('members'):
            m = MEMBER_ROW.match(line)
            if m:
                members.append(m.group(1))
    return keys, members


def split(path):
    return path.replace('[]', '.[]').split('.')


def matches(pattern, path):
    p, q = split(pattern), split(path)
    if len(p) != len(q):
        return False
    return all(a == b or (a == '*' and b != '[]') for a, b in zip(p, q))


def type_of(v):
    if isinstance(v, bool):
        return 'bool'
    if isinstance(v, (int, float)):
        return 'number'
    if isinstance(v, str):
        return 'string'
    if v is None:
        return 'null'
    return 'object' if isinstance(v, dict) else 'array'


def check_bundle(keys, members, d):
    problems = []
    with open(os.path.join(d, 'manifest.json'), encoding='utf-8') as f:
        manifest = json.load(f)

    def find(path):
        # Several processes: each target[] entry is a process's target
        # object with its own top-level keys (capture, pause, ...).
        candidates = [path]
        if path.startswith('target[].'):
            rest = path[len('target[].'):]
            candidates = ['target[].' + rest, 'target.' + rest, rest]
        for c in candidates:
            for pattern, t in keys.items():
                if matches(pattern, c):
                    return pattern, t
        return None, None

    def walk(v, path):
        if path:
            pattern, t = find(path)
            if t == 'object':
                if not isinstance(v, dict):
                    problems.append(f'{d}: {path}: {type_of(v)}, the document says object')
                return  # its keys are not ours to list
            if pattern is not None and type_of(v) != t and not (t == 'null' or type_of(v) == 'null'):
                problems.append(f'{d}: {path}: {type_of(v)}, the document ({pattern}) says {t}')
                return
            if pattern is None and not isinstance(v, (dict, list)):
                problems.append(f'{d}: {path}: not in the document ({type_of(v)}: {json.dumps(v)[:60]})')
                return
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, f'{path}.{k}' if path else k)
        elif isinstance(v, list):
            for x in v:
                walk(x, path + '[]')

    walk(manifest, '')
    for m in manifest.get('members', []):
        name = m.get('name', '')
        if not any(fnmatch.fnmatchcase(name, p) and name.count('/') == p.count('/') for p in members):
            problems.append(f'{d}: member {name}: not in the document')
    return problems


def main(argv):
    if len(argv) >= 2:
        keys, members = load_doc(argv[0])
        problems = []
        for d in argv[1:]:
            problems += check_bundle(keys, members, d)
        what = f'{len(argv) - 1} bundle(s)'
    else:
        sys.exit(__doc__)
    if not keys:
        problems.append('no key rows found in the document')
    for p in problems:
        print(p)
    print(f'{what} checked against {len(keys)} documented keys: {len(problems)} problem(s)')
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
