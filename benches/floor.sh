# Sourced by benches/replay_floor.sh and benches/speed_budget.sh (from the
# repository root, with their arguments as the positional parameters):
# the binaries they time, the inputs (the corpus when none is given), and
# how they time and summarise. Env: REPS (turns, default 7),
# CARGO_TARGET_DIR, BULKWATCH_CORPUS.
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BW=$TARGET/release/bulkwatch
FLOOR=$TARGET/release/examples/parse_floor
REPS=${REPS:-7}
if [ $# -eq 0 ]; then
  C=${BULKWATCH_CORPUS:?set BULKWATCH_CORPUS to the directory of the sa-*.mbox files (docs/dev/development.md)}
  set -- "$C/sa-spam.mbox" "$C/sa-easy-ham.mbox" "$C/sa-hard-ham.mbox"
fi
for f in "$BW" "$FLOOR" "$@"; do
  [ -e "$f" ] || { echo "missing $f" >&2; exit 2; }
done

cpu() { # prints user+system seconds of the command, children included
  local TIMEFORMAT='%3U %3S' t
  t=$( { time "$@" >/dev/null 2>/dev/null; } 2>&1 )
  echo "$t" | tail -1 | awk '{ print $1 + $2 }'
}

# An awk function: the median of a[1..n].
AWK_MEDIAN='function med(a, n,   i, j, t, b) { for (i = 1; i <= n; i++) b[i] = a[i];
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }'
