#!/usr/bin/env bash
# Replay speed per core as a ratio to two floors, whole processes, CPU
# time (user + system, children included), alternated in one run: the
# text floor (examples/parse_floor.rs: mail-parser's mbox split, parse and
# text of every part, one thread), the reader's floor (the same with
# html5gum's tokenizer over every text/html part, `--html`), then
# `bulkwatch replay --jobs 1` reading in its worker processes (the
# default), then the same reading in-process (`--in-process`, the cost of
# the isolation). Ratios are floor / run (1.0: as fast as the floor), per
# turn, then the median.
#
#   cargo build --release && cargo build --release --example parse_floor
#   benches/replay_floor.sh MBOX...          # default: the corpus
# Env: REPS (turns, default 7), CARGO_TARGET_DIR, BULKWATCH_CORPUS.
set -euo pipefail
cd "$(dirname "$0")/.."
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
CFG=$(mktemp /tmp/bwfloor.XXXXXX.toml)
trap 'rm -f "$CFG"' EXIT
# The built-in defaults, whatever /etc/bulkwatch holds.
: > "$CFG"

cpu() { # prints user+system seconds of the command, children included
  local TIMEFORMAT='%3U %3S' t
  t=$( { time "$@" >/dev/null 2>/dev/null; } 2>&1 )
  echo "$t" | tail -1 | awk '{ print $1 + $2 }'
}

rows=()
for i in $(seq 1 "$REPS"); do
  f=$(cpu "$FLOOR" "$@")
  h=$(cpu "$FLOOR" --html "$@")
  w=$(cpu "$BW" replay --jobs 1 --config "$CFG" "$@")
  p=$(cpu "$BW" replay --jobs 1 --in-process --config "$CFG" "$@")
  rows+=("$f $w $p $h")
  echo "turn $i: text floor ${f}s  reader's floor ${h}s  replay ${w}s  in-process ${p}s"
done
printf '%s\n' "${rows[@]}" | awk '
  { f[NR] = $1; w[NR] = $2; p[NR] = $3; h[NR] = $4; rw[NR] = $1 / $2; rp[NR] = $1 / $3; iso[NR] = $2 / $3
    hw[NR] = $4 / $2; hp[NR] = $4 / $3 }
  function med(a, n,   i, j, t, b) { for (i = 1; i <= n; i++) b[i] = a[i];
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (b[j] < b[i]) { t = b[i]; b[i] = b[j]; b[j] = t }
    return n % 2 ? b[(n + 1) / 2] : (b[n / 2] + b[n / 2 + 1]) / 2 }
  END {
    printf "median CPU s: floor %.3f  replay %.3f  in-process %.3f\n", med(f, NR), med(w, NR), med(p, NR)
    printf "floor/replay (per-core ratio): %.3f   floor/in-process: %.3f   isolation cost (replay/in-process): %.3f\n", med(rw, NR), med(rp, NR), med(iso, NR)
    printf "reader'"'"'s floor %.3f s: reader'"'"'s floor/replay %.3f   reader'"'"'s floor/in-process %.3f\n", med(h, NR), med(hw, NR), med(hp, NR)
  }'
