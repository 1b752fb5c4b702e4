#!/bin/sh
# Prints, after a failed `ctest`, each failed test's name and its assertion lines (GoogleTest's
# "Failure" and the lines after it, pytest's "E " lines), each cut to 400 characters, so that
# the last lines of a CI log say what failed. Usage: failure_summary.sh BUILD_DIR.
log="${1:-build}/Testing/Temporary/LastTest.log"
[ -r "$log" ] || exit 0
echo "== what the failed tests asserted (from $log) =="
awk '
  function cut(s) { return length(s) > 400 ? substr(s, 1, 400) "..." : s }
  / Testing: / { name = $0; sub(/^[0-9]+\/[0-9]+ Testing: /, "", name); n = 0; after = 0; next }
  /: Failure$/ { lines[n++] = cut($0); after = 6; next }
  /^\[  FAILED  \]|^<end of output>$/ { after = 0 }
  after > 0 { lines[n++] = "    " cut($0); after--; next }
  /^E  / && n < 12 { lines[n++] = cut($0); next }
  /^Test time = .*Timeout|\*\*\*Timeout/ { lines[n++] = "timed out" }
  /^Test Failed\.$/ {
    print "-- " name
    for (i = 0; i < n && i < 24; ++i) print lines[i]
  }
' "$log"
