#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Rewrites the fenced examples of README.md and docs/plan.md with what ds-plan prints today.

A block whose first line is "$ ds-plan ARGS" gets the command's stdout (stderr dropped), exactly
as tests/apps/readme_test.cc and plan_doc_test.cc compare it. Review `git diff` afterwards: a
changed example is a changed behaviour.
"""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.environ.get("DSP_BINARY", os.path.join(ROOT, "build/release/ds-plan"))
FILES = ["README.md", "docs/plan.md", "docs/explore.md", "docs/compare.md"]


def run(args):
    cmd = "'" + BINARY + "' " + args + " 2>/dev/null"
    return subprocess.run(cmd, shell=True, cwd=ROOT, stdout=subprocess.PIPE).stdout.decode()


def rewrite(path):
    lines = open(path).read().split("\n")
    out, i, changed = [], 0, 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.startswith("```") and i < len(lines) and lines[i].startswith("$ ds-plan "):
            command = lines[i]
            out.append(command)
            i += 1
            old = []
            while i < len(lines) and not lines[i].startswith("```"):
                old.append(lines[i])
                i += 1
            new = run(command[len("$ ds-plan "):]).split("\n")
            if new and new[-1] == "":
                new.pop()
            changed += new != old
            out.extend(new)
    open(path, "w").write("\n".join(out))
    return changed


if not os.access(BINARY, os.X_OK):
    sys.exit("build first (scripts/setup.sh)")
for f in FILES:
    print(f"{f}: {rewrite(os.path.join(ROOT, f))} example(s) changed")
