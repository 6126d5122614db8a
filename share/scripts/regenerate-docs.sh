#!/bin/sh
# Regenerates the committed shell completions and man pages from a built
# pstrain (they are generated from its flags; a test fails when they differ).
#   share/scripts/regenerate-docs.sh [path/to/pstrain]
set -eu
cd "$(dirname "$0")/../.."
bin=${1:-build/bin/pstrain}
"$bin" completions bash > completions/pstrain.bash
"$bin" completions zsh > completions/_pstrain
"$bin" completions fish > completions/pstrain.fish
rm -f man/*.1
"$bin" man > man/pstrain.1
for sub in $("$bin" --help | sed -n '/^Subcommands:/,/^$/p' | awk 'NR > 1 && NF { print $1 }'); do
  "$bin" man "$sub" > "man/pstrain-$sub.1"
done
