#!/usr/bin/env bash
# Where a replay's CPU goes beyond the reader's floor: the floor
# (examples/parse_floor.rs --html: mail-parser's split, parse and text of
# every part, html5gum over every HTML part) against `bulkwatch replay
# --jobs 1` with what the readers do taken away one layer at a time:
#
#   default      the built-in settings (OCR on where Tesseract is installed)
#   ocr-off      [scan] ocr = "off"
#   bare         and every [normalize] rule off (spellings, quotes,
#                signatures, greetings, recipients, URLs, digits, random
#                tokens, markup, NFKC, case folding)
#   bare-inproc  and read in-process (--in-process: no worker, no pipe)
#
# What is left in bare-inproc is the reading the rules cannot turn off
# (MIME, HTML rendering, CSS, pictures' hashes) plus fingerprints and the
# decision. Ratios are floor / run (1.0: as fast as the floor), per turn,
# then the median over REPS turns, all alternated in one run (this
# machine's speed drifts). Verdicts differ without the rules: for the
# attribution of CPU only.
#
#   cargo build --release && cargo build --release --example parse_floor
#   benches/speed_budget.sh MBOX...          # default: the corpus
# Env: REPS (7), CARGO_TARGET_DIR, BULKWATCH_CORPUS.
set -euo pipefail
cd "$(dirname "$0")/.."
# The binaries, the inputs, cpu() and AWK_MEDIAN.
. benches/floor.sh
DIR=$(mktemp -d /tmp/bwbudget.XXXXXX)
trap 'rm -rf "$DIR"' EXIT
: > "$DIR/default.toml"
printf '[scan]\nocr = "off"\n' > "$DIR/ocr-off.toml"
{
  printf '[scan]\nocr = "off"\n[normalize]\n'
  for k in nfkc case_fold strip_markup read_spellings urls_to_host fold_digits \
    drop_random_tokens strip_greetings strip_recipient strip_quotes strip_signatures; do
    echo "$k = false"
  done
} > "$DIR/bare.toml"

for i in $(seq 1 "$REPS"); do
  h=$(cpu "$FLOOR" --html "$@")
  a=$(cpu "$BW" replay --jobs 1 --config "$DIR/default.toml" "$@")
  b=$(cpu "$BW" replay --jobs 1 --config "$DIR/ocr-off.toml" "$@")
  c=$(cpu "$BW" replay --jobs 1 --config "$DIR/bare.toml" "$@")
  d=$(cpu "$BW" replay --jobs 1 --in-process --config "$DIR/bare.toml" "$@")
  echo "$h $a $b $c $d"
  echo "turn $i: floor ${h}s  default ${a}s  ocr-off ${b}s  bare ${c}s  bare-inproc ${d}s" >&2
done | awk "$AWK_MEDIAN"'
  { n = NR; h[n] = $1; for (k = 2; k <= 5; k++) { s[k, n] = $k; r[k, n] = $1 / $k } }
  END {
    split("default ocr-off bare bare-inproc", name, " ")
    printf "reader'"'"'s floor: %.3f s (median)\n", med(h, n)
    for (k = 2; k <= 5; k++) {
      for (i = 1; i <= n; i++) { x[i] = s[k, i]; y[i] = r[k, i] }
      printf "%-12s %.3f s   floor/run %.3f\n", name[k - 1], med(x, n), med(y, n)
    }
  }'
