#!/usr/bin/env python3
"""A flood among campaigns: does the scan bound change any verdict?

Writes an mbox of --copies hash-busted near copies of one text (random words
inserted, a sentence pair swapped now and then, a greeting name and a
tracking URL per copy), shuffled among the fixture campaigns (their own
order kept), replays it with each --bin given, and prints per binary: the
flood's campaign ids and bulk count, the fixture campaigns' ids and bulk
count, and the replay's wall time; with two binaries, how many messages got
a different level.

Used to choose MAX_BUCKET_SCAN (src/engine/index/tables.rs): build once per bound,
copy each binary aside, then

  python3 benches/flood.py --copies 20000 --bin /tmp/bw1024 --bin /tmp/bw256

Nothing here writes into the repository; the mbox goes to a temp dir.
"""
import argparse, collections, csv, json, mailbox, os, random, subprocess, tempfile, time

VOCAB = ('alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike '
         'november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee '
         'zulu amber basil cedar dune ember fjord grove harbor island jasper knoll lagoon '
         'meadow nectar orchid prairie quartz river summit thistle umber valley willow').split()
TEXT = ('We are pleased to inform you that your account qualifies for our exclusive '
        'loyalty upgrade this month. Members who confirm before the end of the week '
        'receive double points on every purchase, free shipping on all orders and a '
        'personal account manager. To confirm your upgrade simply visit the secure '
        'member page and enter your customer number. This offer cannot be combined with '
        'other promotions and is available only to selected customers. Thank you for '
        'being a valued member of our community and we look forward to serving you.').split()
NAMES = 'John Mary Ahmed Li Olga Pedro Aisha Tom Nina Raj'.split()


def flood_copy(rng, k):
    words = list(TEXT)
    for _ in range(rng.randint(2, 6)):
        words.insert(rng.randrange(len(words)), rng.choice(VOCAB) + str(rng.randrange(100)))
    if rng.random() < 0.3:
        j = rng.randrange(len(words) - 1)
        words[j], words[j + 1] = words[j + 1], words[j]
    name = rng.choice(NAMES)
    body = 'Dear %s,\n\n%s\n\nhttps://track.example/c/%08x\n' % (name, ' '.join(words), rng.getrandbits(32))
    return ('From: Rewards <news%d@rewards.example>\nTo: %s <u%d@site.example>\n'
            'Subject: %s, your upgrade\nMessage-ID: <f%d@rewards.example>\n'
            'Content-Type: text/plain\n\n%s' % (k % 50, name, k, name, k, body)).encode()


def write_mbox(path, fixtures, copies, seed):
    """Returns the label of each message written: 'flood' or a campaign."""
    labels = {}
    with open(os.path.join(fixtures, 'labels.tsv')) as f:
        for row in list(csv.reader(f, delimiter='\t'))[1:]:
            if row[0] == 'campaigns.mbox':
                labels[int(row[1]) - 1] = row[3]
    fix = [m.as_bytes() for m in mailbox.mbox(os.path.join(fixtures, 'mbox', 'campaigns.mbox'))]
    rng = random.Random(seed)
    kinds = ['flood'] * copies + ['fix'] * len(fix)
    rng.shuffle(kinds)
    out, fi, k = [], 0, 0
    with open(path, 'wb') as f:
        for kind in kinds:
            if kind == 'fix':
                raw, label = fix[fi], labels[fi]
                fi += 1
            else:
                raw, label = flood_copy(rng, k), 'flood'
                k += 1
            out.append(label)
            f.write(b'From MAILER-DAEMON Thu Jan  1 00:00:00 1970\n')
            for line in raw.split(b'\n'):
                f.write((b'>' + line if line.startswith(b'From ') else line) + b'\n')
            f.write(b'\n')
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bin', action='append', default=[])
    ap.add_argument('--fixtures', default='fixtures')
    ap.add_argument('--copies', type=int, default=20000)
    ap.add_argument('--seed', type=int, default=7)
    args = ap.parse_args()
    bins = args.bin or ['target/release/bulkwatch']
    levels = {}
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'flood.mbox')
        labels = write_mbox(path, args.fixtures, args.copies, args.seed)
        for b in bins:
            t0 = time.monotonic()
            out = subprocess.run([b, 'replay', '--format', 'jsonl', '--bulk-threshold', '5', path],
                                 capture_output=True, check=False)
            secs = time.monotonic() - t0
            if out.returncode not in (0, 1):
                raise SystemExit('replay failed: ' + out.stderr.decode(errors='replace'))
            recs = [json.loads(l) for l in out.stdout.decode().splitlines()]
            assert len(recs) == len(labels), (len(recs), len(labels))
            ids, bulk = collections.defaultdict(set), collections.Counter()
            for label, r in zip(labels, recs):
                key = 'flood' if label == 'flood' else 'fixtures'
                if r['campaign']:
                    ids[label].add(r['campaign'])
                bulk[key] += r['level'] == 'bulk'
            fixture_ids = sum(len(v) for k, v in ids.items() if k != 'flood')
            print('%s: flood %d ids, %d of %d bulk; fixture campaigns %d ids, %d bulk; %.2f s' % (
                b, len(ids['flood']), bulk['flood'], args.copies, fixture_ids, bulk['fixtures'], secs))
            levels[b] = [r['level'] for r in recs]
    if len(bins) == 2:
        a, b = (levels[x] for x in bins)
        print('messages with a different level:', sum(x != y for x, y in zip(a, b)))


if __name__ == '__main__':
    main()
