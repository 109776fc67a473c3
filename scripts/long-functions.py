#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Lists the function bodies in C++ sources longer than a limit (default 120 lines).

A brace counter, not a parser: a definition is a '{' opened at namespace or class level on a line
whose text since the last ';', '{' or '}' holds a parameter list. String and character literals
and comments are skipped. Exit status 1 when any body is over the limit.

  scripts/long-functions.py [--limit N] DIR_OR_FILE...
"""
import argparse
import os
import re
import sys


def strip_code(text):
    """The source with comments and literals blanked, newlines kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append('\n' * text.count('\n', i, j))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""' + '\n' * text.count('\n', i, j))
            i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return ''.join(out)


def long_functions(path, limit):
    code = strip_code(open(path, encoding='utf-8').read())
    # Stack of (kind, start_line, header): kind 'scope' for namespaces/classes, 'body' otherwise.
    stack, found, header, line = [], [], '', 1
    for c in code:
        if c == '\n':
            line += 1
        if c == '{':
            in_body = any(kind == 'body' for kind, _, _ in stack)
            head = header.strip()
            is_scope = re.search(r'\b(namespace|class|struct|union|enum)\b[^()]*$', head) is not None
            if in_body or is_scope or '(' not in head:
                stack.append(('scope' if (is_scope and not in_body) else 'inner', line, head))
            else:
                stack.append(('body', line, head))
            header = ''
        elif c == '}':
            if stack:
                kind, start, head = stack.pop()
                if kind == 'body' and line - start + 1 > limit:
                    name = re.sub(r'\s+', ' ', head)[-90:]
                    found.append((line - start + 1, path, start, name))
            header = ''
        elif c == ';':
            header = ''
        else:
            header += c
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--limit', type=int, default=120)
    ap.add_argument('paths', nargs='+')
    args = ap.parse_args()
    files = []
    for p in args.paths:
        if os.path.isdir(p):
            for root, _, names in os.walk(p):
                files += [os.path.join(root, f) for f in names if f.endswith(('.cc', '.h'))]
        else:
            files.append(p)
    found = []
    for f in sorted(files):
        found += long_functions(f, args.limit)
    for length, path, start, name in sorted(found, reverse=True):
        print(f'{path}:{start}: {length} lines: {name}')
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
