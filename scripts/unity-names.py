#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Finds helpers that a unity build would put side by side under one name.

CMakeLists.txt compiles each of ds-plan's libraries as unity builds (DSP_UNITY_BUILD): many sources
concatenated into one translation unit. Two sources that both define a function of one name in the
same namespace, at least one of them inside an anonymous namespace, then share one scope: with one
signature the build fails, with two the call sites overload, and a call can silently reach the
other file's helper (AutoEP's rules once read activation checkpointing's section that way).

Usage: unity-names.py [ROOT]   exit 0 when there are none, 1 (and the list) when there are.
The scan is textual: functions whose definition starts at column 0, namespaces opened with
`namespace X {` at column 0 and closed with `}  // namespace`, as the code base writes them.
"""
import collections
import os
import re
import sys

# The source folders of each unity-built target (CMakeLists.txt: dsp_unity_build).
TARGETS = {"dsp_core": ["core"], "dsp_sim": ["sim"], "ds-plan": ["apps/ds-plan"]}
FUNCTION = re.compile(r"^(?:static\s+|inline\s+|constexpr\s+)*[\w:<>,\*&\s]+?[\s\*&](\w+)\s*\((?!\*)")
NAMESPACE_OPEN = re.compile(r"^namespace\s*([\w:]*)\s*\{")
NAMESPACE_CLOSE = re.compile(r"^\}\s*//\s*namespace")
USING = re.compile(r"^using\s+[\w:]+::(\w+);")
NOT_A_FUNCTION = ("using", "struct", "class", "enum", "template", "typedef", "constexpr", "const ",
                  "return", "else", "case", "default")


def definitions(path):
    """(enclosing named namespace, name, in an anonymous namespace, defined here) of each column-0
    function definition and each `using ns::name;` that brings another namespace's name in."""
    stack = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = NAMESPACE_OPEN.match(line)
            if m:
                stack.append(m.group(1))
                continue
            if NAMESPACE_CLOSE.match(line):
                if stack:
                    stack.pop()
                continue
            named = "::".join(s for s in stack if s)
            m = USING.match(line)
            if m:
                yield named, m.group(1), "" in stack, False
                continue
            if not line.strip() or line[0] in " \t#/}{" or line.startswith(NOT_A_FUNCTION):
                continue
            m = FUNCTION.match(line)
            if m and m.group(1) not in ("main", "operator"):
                yield named, m.group(1), "" in stack, True


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    found = []
    for target, folders in TARGETS.items():
        where = collections.defaultdict(dict)  # (namespace, name) -> file -> (anonymous?, defined?)
        for folder in folders:
            for dirpath, _, files in os.walk(os.path.join(root, folder)):
                for name in sorted(files):
                    if not name.endswith(".cc"):
                        continue
                    path = os.path.join(dirpath, name)
                    rel = os.path.relpath(path, root)
                    for namespace, function, anonymous, defined in definitions(path):
                        seen = where[(namespace, function)]
                        was = seen.get(rel, (False, False))
                        seen[rel] = (was[0] or anonymous, was[1] or defined)
        for (namespace, function), files in sorted(where.items()):
            anonymous = any(a for a, _ in files.values())
            if len(files) > 1 and anonymous and any(d for _, d in files.values()):
                found.append(f"{target}: {namespace}::{function} in {', '.join(sorted(files))}")
    for line in found:
        print(line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
