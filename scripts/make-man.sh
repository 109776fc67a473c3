#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Generates the ds-plan(1) man page from the binary's own --help with Debian's help2man: the
# root help as the synopsis and options, then every command's --help under COMMANDS (read from
# the "Subcommands:" lists, so a new command appears without editing this script).
#   scripts/make-man.sh BINARY OUT.1
# The date in the page comes from SOURCE_DATE_EPOCH (the build sets it), so the page is
# byte-for-byte reproducible.
set -euo pipefail
bin=$1
out=$2
include=$(mktemp)
trap 'rm -f "$include"' EXIT

subcommands() {  # the names listed under "Subcommands:" in `$bin $* --help`
  "$bin" "$@" --help | awk '/^Subcommands:/ {on = 1; next} on && NF {print $1} on && !NF {on = 0}'
}
roff() {  # help text as literal roff: backslashes doubled, - as \- (an ASCII minus, so flags
          # copied from the page work), a leading . or ' neutralised
  sed -e 's/\\/\\\\/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"
}
section() {
  printf '.SS "ds-plan %s"\n.nf\n' "$*"
  "$bin" "$@" --help | roff
  printf '.fi\n'
}

{
  printf '[NAME]\nds-plan \\- check, lay out and simulate DeepSpeed parallel training before launch\n'
  printf '[COMMANDS]\n'
  for cmd in $(subcommands); do
    section "$cmd"
    for sub in $(subcommands "$cmd"); do section "$cmd" "$sub"; done
  done
  printf '[EXIT STATUS]\n0: nothing wrong. 1: the input has errors (or warnings with \\-\\-werror), a plan changed, or a parity check failed. 2: usage errors, unreadable files, internal limits.\n'
  printf '[ENVIRONMENT]\n.TP\n.B NO_COLOR\nwhen set and not empty, diagnostics are not coloured unless \\-\\-color always asks.\n'
  printf '[SEE ALSO]\nThe documentation in the ds-plan source tree: README.md and docs/.\n'
} > "$include"

# The page names the release, not the commit --version adds (the page stays the same across commits).
version=$("$bin" --version | head -n 1 | cut -d ' ' -f 1-2)
help2man --no-info --no-discard-stderr --section 1 --version-string "$version" --include "$include" \
  --output "$out.tmp" "$bin"
mv "$out.tmp" "$out"
