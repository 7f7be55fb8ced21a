#!/usr/bin/env bash
# Whole-process memory per windowed message: peak RSS of two replays that
# keep N1 and N2 messages in the window, (RSS2 - RSS1) / (N2 - N1). Each
# replay's window, index tables and Bloom filters are sized to its N
# (window.max_entries = exact.bloom_items = N), so everything that grows
# with the window is counted at the size a full window of N gives it, and
# the process's fixed part cancels out. The LRU of exact texts is capped
# by exact.lru_capacity, not by the window: LRU=window sizes it to N too
# (the worst case below the cap), the default leaves it at 100,000. The
# replay keeps its records in a temporary file (what `bulkwatch replay`
# does), so they are not counted.
#
# Two streams, replayed at 100 messages a simulated second (all inside
# the 6-hour window):
# - corpus: the SpamAssassin corpus 8 and 64 times over (the same messages
#   again: they join their campaigns);
# - distinct: messages of random words in five sentences, each a campaign
#   of its own (the worst case: a campaign per message).
#
#   cargo build --release && benches/memory.sh
# Env: CARGO_TARGET_DIR, BULKWATCH_CORPUS, N1 / N2 (distinct messages:
# 110000 / 440000, both past the LRU's default cap), LRU (window: the LRU
# sized to the window).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=${CARGO_TARGET_DIR:-$PWD/target}
BW=$TARGET/release/bulkwatch
C=${BULKWATCH_CORPUS:?set BULKWATCH_CORPUS to the directory of the sa-*.mbox files (docs/dev/development.md)}
N1=${N1:-110000}
N2=${N2:-440000}
[ -x "$BW" ] || { echo "missing $BW" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "missing /usr/bin/time" >&2; exit 2; }
DIR=$(mktemp -d /tmp/bwmem.XXXXXX)
trap 'rm -rf "$DIR"' EXIT

count() { grep -c '^From ' "$1"; }
peak_kb() { # peak RSS of `bulkwatch replay` of the mbox $1 with a window of its size, in kB
  local n cfg
  n=$(count "$1")
  cfg="$DIR/w$n.toml"
  if [ "${LRU:-}" = window ]; then
    printf '[window]\nmax_entries = %s\n[exact]\nbloom_items = %s\nlru_capacity = %s\n' "$n" "$n" "$n" > "$cfg"
  else
    printf '[window]\nmax_entries = %s\n[exact]\nbloom_items = %s\n' "$n" "$n" > "$cfg"
  fi
  # (replay exits 1 when it found bulk mail: not an error here)
  { /usr/bin/time -f "%M" "$BW" replay --rate 100 --format jsonl \
    --config "$cfg" "$1" 2>&1 >/dev/null || true; } | tail -1
}
per_message() { # mbox_small mbox_large label
  local a b na nb
  a=$(peak_kb "$1"); b=$(peak_kb "$2"); na=$(count "$1"); nb=$(count "$2")
  awk -v a="$a" -v b="$b" -v na="$na" -v nb="$nb" -v l="$3" 'BEGIN {
    printf "%s: %d messages %d kB, %d messages %d kB: %.0f bytes per windowed message\n",
      l, na, a, nb, b, (b - a) * 1024 / (nb - na) }'
}

if [ -r "$C/sa-spam.mbox" ]; then
  cat "$C/sa-spam.mbox" "$C/sa-easy-ham.mbox" "$C/sa-hard-ham.mbox" > "$DIR/c1.mbox"
  for _ in 1 2 3 4 5 6 7 8; do cat "$DIR/c1.mbox"; done > "$DIR/c8.mbox"
  for _ in 1 2 3 4 5 6 7 8; do cat "$DIR/c8.mbox"; done > "$DIR/c64.mbox"
  per_message "$DIR/c8.mbox" "$DIR/c64.mbox" corpus
else
  echo "corpus: skipped (no $C)"
fi

python3 - "$DIR" "$N1" "$N2" <<'PY'
import random, sys
d, n1, n2 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(7)
words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 9)))
         for _ in range(5000)]
def write(path, count):
    with open(path, "w") as f:
        for i in range(count):
            # Five sentences of twelve words: each message keeps the
            # anchors of the containment rule (a text of three sentences
            # of eight words or more), as most mail does.
            body = ". ".join(" ".join(rng.choice(words) for _ in range(12)) for _ in range(5))
            f.write(f"From x{i}@example.org Mon Jan  1 00:00:00 2024\nFrom: s{i % 97}@sender{i % 13}.example\n"
                    f"Subject: note {i} {rng.choice(words)}\nMessage-ID: <{i}@example.org>\n\n{body}.\n\n")
write(f"{d}/d1.mbox", n1)
write(f"{d}/d2.mbox", n2)
PY
per_message "$DIR/d1.mbox" "$DIR/d2.mbox" distinct
