#!/usr/bin/env bash
# The dependency arrows of src/ run one way, down the pipeline (docs/architecture.md, "Layout"):
# a file may include headers of its own folder and of the folders before it in
#   base < front < infer < nest < deps < lower < fuse < schedule < plan < target < build < driver
# and, further, nothing after lowering (fuse, schedule, plan, target) includes a lowering or
# inference header or front/passes.h (the front end's passes): those stages read the nest program
# and the values' shapes, never ONNX nodes; build/ (the native toolchain) needs only base/.
# One line per violation, then the closing count; exit 1 on any.
set -u
cd "$(dirname "$0")/.."
order=(base front infer nest deps lower fuse schedule plan target build driver)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
passed=0 failed=0
while IFS= read -r file; do
  from=${file#src/}; from=${from%%/*}
  rf=$(rank "$from")
  while IFS= read -r inc; do
    to=${inc%%/*}
    [ "$to" = "$inc" ] && continue # a generated or kernels/ header (onnx.pb-c.h, bd_kernels.h)
    [ "$to" = bdc ] && continue    # the public header, include/bdc/
    rt=$(rank "$to")
    why=""
    if [ "$rt" -lt 0 ]; then why="unknown folder '$to'"
    elif [ "$rt" -gt "$rf" ]; then why="'$from' comes before '$to' in the pipeline"
    elif [[ " deps fuse schedule plan target " == *" $from "* ]] &&
         { [ "$to" = lower ] || [ "$to" = infer ] || [ "$inc" = front/passes.h ]; }; then
      why="'$from' reads the nest program, not lowering, inference or the front end's passes"
    elif [ "$from" = build ] && [ "$to" != base ] && [ "$to" != build ]; then
      why="the toolchain layer needs only base/"
    fi
    if [ -n "$why" ]; then
      echo "FAIL $file includes \"$inc\": $why"
      failed=$((failed + 1))
    else
      passed=$((passed + 1))
    fi
  done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$file")
done < <(find src -name '*.[ch]' | sort)
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
