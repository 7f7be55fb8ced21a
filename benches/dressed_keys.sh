#!/usr/bin/env bash
# The dressed-campaign suite (tests/dressed.rs) under the built-in key and
# KEYS other fingerprint keys (DRESSED_KEY=1..KEYS): an attacker does not
# know a site's key, so a class counts at its worst key. Prints each
# class's rate under every key and the worst, classes under 100% first.
#
#   benches/dressed_keys.sh                 # KEYS=5
# Env: KEYS, BULKWATCH_CORPUS (adds the 40 corpus spam texts), DRESSED_CLASS.
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-5}
BIN=$(cargo test --release --test dressed --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "dressed" and m.get("executable"):
        print(m["executable"])')
[ -x "$BIN" ] || { echo "could not build tests/dressed.rs" >&2; exit 2; }
OUT=$(mktemp /tmp/dressed-keys.XXXXXX)
trap 'rm -f "$OUT"' EXIT
for k in builtin $(seq 1 "$KEYS"); do
  if [ "$k" = builtin ]; then unset DRESSED_KEY; else export DRESSED_KEY=$k; fi
  # (the suite exits non-zero when a class is under its bar: the table
  # is what counts here)
  { "$BIN" --nocapture 2>&1 || true; } |
    awk -v k="$k" '/^class /{on=1; next} on && /^\(plainX/{on=0} on {print k, $1, $5}' >> "$OUT"
done
python3 - "$OUT" <<'PY'
import collections, sys
rates = collections.defaultdict(dict)
order = []
for line in open(sys.argv[1]):
    key, cls, rate = line.split()
    if cls not in order:
        order.append(cls)
    rates[cls][key] = float(rate.rstrip('%'))
keys = list(next(iter(rates.values())).keys()) if rates else []
print(f"{'class':24} {'worst':>7}  " + " ".join(f"{k:>7}" for k in keys))
for cls in sorted(order, key=lambda c: (min(rates[c].values()) == 100, order.index(c))):
    r = rates[cls]
    print(f"{cls:24} {min(r.values()):6.1f}%  " + " ".join(f"{r.get(k, float('nan')):6.1f}%" for k in keys))
PY
