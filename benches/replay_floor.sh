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
# The binaries, the inputs, cpu() and AWK_MEDIAN.
. benches/floor.sh
CFG=$(mktemp /tmp/bwfloor.XXXXXX.toml)
trap 'rm -f "$CFG"' EXIT
# The built-in defaults, whatever /etc/bulkwatch holds.
: > "$CFG"

rows=()
for i in $(seq 1 "$REPS"); do
  f=$(cpu "$FLOOR" "$@")
  h=$(cpu "$FLOOR" --html "$@")
  w=$(cpu "$BW" replay --jobs 1 --config "$CFG" "$@")
  p=$(cpu "$BW" replay --jobs 1 --in-process --config "$CFG" "$@")
  rows+=("$f $w $p $h")
  echo "turn $i: text floor ${f}s  reader's floor ${h}s  replay ${w}s  in-process ${p}s"
done
printf '%s\n' "${rows[@]}" | awk "$AWK_MEDIAN"'
  { f[NR] = $1; w[NR] = $2; p[NR] = $3; h[NR] = $4; rw[NR] = $1 / $2; rp[NR] = $1 / $3; iso[NR] = $2 / $3
    hw[NR] = $4 / $2; hp[NR] = $4 / $3 }
  END {
    printf "median CPU s: floor %.3f  replay %.3f  in-process %.3f\n", med(f, NR), med(w, NR), med(p, NR)
    printf "floor/replay (per-core ratio): %.3f   floor/in-process: %.3f   isolation cost (replay/in-process): %.3f\n", med(rw, NR), med(rp, NR), med(iso, NR)
    printf "reader'"'"'s floor %.3f s: reader'"'"'s floor/replay %.3f   reader'"'"'s floor/in-process %.3f\n", med(h, NR), med(hw, NR), med(hp, NR)
  }'
