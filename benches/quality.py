#!/usr/bin/env python3
"""Quality of bulkwatch's campaign detection, measured against independent truth.

Two measurements, both printed as tables:

1. Near-identical real mail (--corpus DIR): every pair of messages in the
   SpamAssassin mboxes whose decoded, tag-stripped, lower-cased text has
   Jaccard >= 0.8 on word 4-shingles (computed here with Python's email
   package, not with bulkwatch's parser) should share a bulkwatch campaign id
   ("linked"); precision is the share of pairs bulkwatch links whose Jaccard
   is >= 0.5 (and, stricter, >= 0.8). B-cubed precision and recall: a
   message's own text is its component of pairs of Jaccard >= 0.5;
   precision is the share of its campaign that is its own text, recall
   the share of its own text in its campaign, averaged over messages.

   Then the same three sets merged and judged at the times they arrived
   (`--clock arrival`): ham messages flagged bulk.

2. Campaign detection on a mixed stream (--fixtures DIR): the synthetic
   campaigns of fixtures/mbox/campaigns.mbox interleaved (seeded shuffle)
   with real ham and spam from the corpus, replayed at --bulk-threshold.
   Campaign recall: share of campaigns with at least one message flagged
   bulk; message recall: share of messages past the threshold-th of their
   campaign that are flagged bulk; ids per campaign: distinct final campaign
   ids over a campaign's messages; ham flagged: real ham messages flagged bulk;
   ham in spam: real ham whose final campaign also holds spam or a synthetic
   campaign's messages (a legitimate message must never join one).

Usage:
  cargo build --release
  python3 benches/quality.py --bin target/release/bulkwatch \
      --corpus "$BULKWATCH_CORPUS" --fixtures fixtures [--bulk-threshold 5]
  (add --keys 12 to repeat both under twelve random fingerprint keys: the
  figures depend on the key, which each site sets)

Nothing here writes into the repository; the mixed mbox goes to a temp dir.
"""
import argparse, collections, contextlib, email, email.policy, json, mailbox, os, random, re, subprocess, sys, tempfile

TAG = re.compile(r'<[^>]*>')
WORD = re.compile(r'\w+')

# Quoted lines: '> text' and Supercite's 'Tim> text'; and a forwarded or
# replied-to message below an Outlook '-----Original Message-----' line.
# (the name: 1 to 8 letters or digits, one a letter, as bulkwatch's is_quote)
QUOTE = re.compile(r'^\s*(?:>|(?=[A-Za-z0-9]{0,7}[A-Za-z])[A-Za-z0-9]{1,8}>(?=[ \t>]|$)).*$', re.M)
ORIGINAL = re.compile(r'^\s*-----\s?original message\s?-----.*', re.M | re.S | re.I)

def text_of(raw, strip_quotes=False):
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.compat32)
    except Exception:
        return ''
    parts = []
    for p in msg.walk():
        if p.get_content_maintype() != 'text':
            continue
        try:
            payload = p.get_payload(decode=True) or b''
            cs = p.get_content_charset() or 'latin-1'
            try:
                t = payload.decode(cs, errors='replace')
            except LookupError:
                t = payload.decode('latin-1', errors='replace')
        except Exception:
            continue
        if p.get_content_subtype() == 'html':
            t = TAG.sub(' ', t)
        elif strip_quotes:
            cut = ORIGINAL.sub('', QUOTE.sub('', t))
            # As bulkwatch cuts (docs/admin/evasion.md): a cut stands only when it
            # leaves at least 20 words and a third of the text.
            kept, whole = len(WORD.findall(cut)), len(WORD.findall(t))
            if strip_quotes != 'bounded' or (kept >= 20 and 3 * kept >= whole):
                t = cut
        parts.append(t)
    return ' '.join(parts).lower()

def shingles(text, k=4):
    w = WORD.findall(text)
    return {tuple(w[i:i + k]) for i in range(max(0, len(w) - k + 1))}

def mbox_messages(path):
    mb = mailbox.mbox(path, create=False)
    for key in mb.keys():
        yield mb.get_bytes(key)

CONFIG = []

def run_replay(binary, paths, threshold, extra=()):
    out = subprocess.run([binary, 'replay', '--format', 'jsonl', '--bulk-threshold', str(threshold), *CONFIG, *extra, *paths],
                         capture_output=True, check=False)
    if out.returncode not in (0, 1):
        sys.exit('replay failed: ' + out.stderr.decode(errors='replace'))
    return [json.loads(l) for l in out.stdout.decode().splitlines()]

def near_identical(args):
    names = ['sa-spam.mbox', 'sa-easy-ham.mbox', 'sa-hard-ham.mbox']
    paths = [os.path.join(args.corpus, n) for n in names]
    sets, subjects = [], []
    for p in paths:
        for raw in mbox_messages(p):
            sets.append(shingles(text_of(raw, args.strip_quotes)))
            if args.worst:
                try:
                    subjects.append(' '.join(str(email.message_from_bytes(raw).get('Subject', '')).split())[:60])
                except Exception:
                    subjects.append('')
    recs = run_replay(args.bin, paths, args.bulk_threshold)
    assert len(recs) == len(sets), (len(recs), len(sets))
    inv = collections.defaultdict(list)
    for i, s in enumerate(sets):
        for sh in s:
            inv[sh].append(i)
    inter = collections.Counter()
    for ids in inv.values():
        if len(ids) > 200:  # boilerplate shingle shared by many: skip as a candidate source
            continue
        for a in range(len(ids)):
            for b in range(a + 1, len(ids)):
                inter[(ids[a], ids[b])] += 1
    def jac(i, j):
        si, sj = sets[i], sets[j]
        if not si or not sj:
            return 0.0
        return len(si & sj) / len(si | sj)
    truth = [(i, j) for (i, j), c in inter.items() if c > 0 and jac(i, j) >= 0.8]
    camp = [r['campaign'] for r in recs]
    linked_truth = sum(1 for i, j in truth if camp[i] is not None and camp[i] == camp[j])
    groups = collections.defaultdict(list)
    for i, c in enumerate(camp):
        if c is not None:
            groups[c].append(i)
    linked = [(g[a], g[b]) for g in groups.values() for a in range(len(g)) for b in range(a + 1, len(g))]
    ok5 = sum(1 for i, j in linked if jac(i, j) >= 0.5)
    ok8 = sum(1 for i, j in linked if jac(i, j) >= 0.8)
    direct = [(r['nearest'] - 1, r['n'] - 1) for r in recs if r.get('nearest')]
    d5 = sum(1 for i, j in direct if jac(i, j) >= 0.5)
    d8 = sum(1 for i, j in direct if jac(i, j) >= 0.8)
    print('near-identical real pairs (Jaccard >= 0.8, word 4-shingles):', len(truth))
    print('  linked by bulkwatch (same campaign): %d = %.4f' % (linked_truth, linked_truth / max(1, len(truth))))
    print('  pairs bulkwatch links: %d; with Jaccard >= 0.5: %.4f; >= 0.8: %.4f' % (
        len(linked), ok5 / max(1, len(linked)), ok8 / max(1, len(linked))))
    print('  direct links (message -> its closest match): %d; with Jaccard >= 0.5: %.4f; >= 0.8: %.4f' % (
        len(direct), d5 / max(1, len(direct)), d8 / max(1, len(direct))))
    bad = [(i, j, round(jac(i, j), 3)) for i, j in direct if jac(i, j) < 0.5][:10]
    if bad:
        print('  direct links below 0.5 (global index i, j, Jaccard):', bad)
    if args.worst:
        # Where precision goes: the campaigns holding the most pairs below
        # Jaccard 0.5, with their size and a few subjects.
        rows = []
        for c, g in groups.items():
            pairs = [(g[a], g[b]) for a in range(len(g)) for b in range(a + 1, len(g))]
            below = sum(1 for i, j in pairs if jac(i, j) < 0.5)
            if below:
                rows.append((below, len(pairs), len(g), c, g))
        rows.sort(key=lambda r: (-r[0], r[3]))
        print('  campaigns holding pairs below 0.5 (pairs below, of pairs, messages, id, subjects):')
        for below, n, size, c, g in rows[:args.worst]:
            print('    %4d of %4d  %3d  %s  %s' % (below, n, size, c, ' | '.join(subjects[i] for i in g[:3])))
    # B-cubed over messages: the truth of a message is its own text, the
    # messages joined to it by pairs of Jaccard >= 0.5 (connected
    # components); a message without a campaign is a campaign of its own.
    # Precision: the share of a message's campaign that is its own text;
    # recall: the share of its own text that is in its campaign.
    parent = list(range(len(sets)))
    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x
    for (i, j), c in inter.items():
        if c > 0 and jac(i, j) >= 0.5:
            parent[find(i)] = find(j)
    text_of_msg = [find(i) for i in range(len(sets))]
    members = collections.defaultdict(set)
    for i, c in enumerate(camp):
        members[('c', c) if c is not None else ('m', i)].add(i)
    texts = collections.defaultdict(set)
    for i, t in enumerate(text_of_msg):
        texts[t].add(i)
    bp = br = 0.0
    for i, c in enumerate(camp):
        cm = members[('c', c) if c is not None else ('m', i)]
        tm = texts[text_of_msg[i]]
        both = len(cm & tm)
        bp += both / len(cm)
        br += both / len(tm)
    bp, br = bp / max(1, len(sets)), br / max(1, len(sets))
    print('  B-cubed (own text: Jaccard >= 0.5 components): precision %.4f, recall %.4f' % (bp, br))
    missed = [(i, j, round(jac(i, j), 3)) for i, j in truth if not (camp[i] is not None and camp[i] == camp[j])][:10]
    if missed:
        print('  missed pairs (i, j, Jaccard):', missed)
    return {'linked': linked_truth / max(1, len(truth)), 'direct5': d5 / max(1, len(direct)),
            'precision': ok5 / max(1, len(linked)), 'b3_precision': bp, 'b3_recall': br}

def arrival(args):
    """The three corpus sets merged and judged at the times they arrived
    (bulkwatch replay --clock arrival): what the daemon would have flagged."""
    names = ['sa-spam.mbox', 'sa-easy-ham.mbox', 'sa-hard-ham.mbox']
    paths = [os.path.join(args.corpus, n) for n in names]
    recs = run_replay(args.bin, paths, args.bulk_threshold, ('--clock', 'arrival'))
    ham = [r for r in recs if r['mbox'] != 'sa-spam.mbox']
    spam = [r for r in recs if r['mbox'] == 'sa-spam.mbox']
    hf = [r for r in ham if r['level'] == 'bulk']
    dated = [r['time'] for r in recs if r['time'] > 0]  # 0: no date before it in its file
    days = (max(dated) - min(dated)) / 86400 if dated else 0
    print('real corpus at arrival times (%d messages over %.0f days), bulk_threshold %g: '
          'ham flagged bulk %d of %d; spam flagged bulk %d of %d' % (
              len(recs), days, args.bulk_threshold, len(hf), len(ham),
              sum(1 for r in spam if r['level'] == 'bulk'), len(spam)))
    for r in hf[:10]:
        print('  ham flagged:', r['mbox'], r['index'], r['message_id'])
    return {'ham_arrival': len(hf)}

def mixed_stream(args):
    labels = {}
    with open(os.path.join(args.fixtures, 'labels.tsv')) as f:
        next(f)
        for line in f:
            mb, idx, mid, label = line.rstrip('\n').split('\t')
            labels[(mb, int(idx))] = label
    items = []
    for i, raw in enumerate(mbox_messages(os.path.join(args.fixtures, 'mbox', 'campaigns.mbox'))):
        items.append((labels[('campaigns.mbox', i + 1)], raw))
    for name, label in [('sa-easy-ham.mbox', 'ham'), ('sa-hard-ham.mbox', 'ham'), ('sa-spam.mbox', 'spam')]:
        for raw in mbox_messages(os.path.join(args.corpus, name)):
            items.append((label, raw))
    # Interleave: campaigns keep their internal order, positions are shuffled.
    rng = random.Random(args.seed)
    order = list(range(len(items)))
    rng.shuffle(order)
    by_label = collections.defaultdict(list)
    for i, (label, _) in enumerate(items):
        by_label[label].append(i)
    slots = collections.defaultdict(list)
    for pos, i in enumerate(order):
        slots[items[i][0]].append(pos)
    placed = [None] * len(items)
    for label, idxs in by_label.items():
        for pos, i in zip(sorted(slots[label]), idxs):
            placed[pos] = i
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, 'mixed.mbox')
        with open(path, 'wb') as f:
            for i in placed:
                raw = items[i][1]
                f.write(b'From MAILER-DAEMON Thu Jan  1 00:00:00 1970\n')
                for line in raw.split(b'\n'):
                    if re.match(rb'^>*From ', line):
                        line = b'>' + line
                    f.write(line + b'\n')
                f.write(b'\n')
        recs = run_replay(args.bin, [path], args.bulk_threshold)
    assert len(recs) == len(placed), (len(recs), len(placed))
    per = collections.defaultdict(list)
    for r, i in zip(recs, placed):
        per[items[i][0]].append(r)
    ham = per.pop('ham', [])
    spam = per.pop('spam', [])
    print('mixed stream: %d messages, %d campaigns, %d ham, %d spam, bulk_threshold %s' % (
        len(recs), len(per), len(ham), len(spam), args.bulk_threshold))
    print('%-6s %5s %8s %9s %6s' % ('label', 'msgs', 'flagged', 'msgrecall', 'ids'))
    caught, ids_total, past_total, past_flagged = 0, 0, 0, 0
    for label in sorted(per):
        rs = per[label]
        flagged = sum(1 for r in rs if r['level'] == 'bulk')
        past = rs[int(args.bulk_threshold):]
        pf = sum(1 for r in past if r['level'] == 'bulk')
        ids = len({r['campaign'] for r in rs if r['campaign'] is not None})
        caught += flagged > 0
        ids_total += ids
        past_total += len(past)
        past_flagged += pf
        print('%-6s %5d %8d %9.3f %6d' % (label, len(rs), flagged, pf / max(1, len(past)), ids))
    print('campaign recall: %.3f  message recall past threshold: %.3f  ids per campaign: %.2f' % (
        caught / max(1, len(per)), past_flagged / max(1, past_total), ids_total / max(1, len(per))))
    # The Northgate family (c13 to c16): four kits of one brand, each its
    # own text; neighbours share three of four paragraphs. Kits that share
    # a campaign id were chained together.
    family = [l for l in sorted(per) if l in ('c13', 'c14', 'c15', 'c16')]
    fam_ids = {l: {r['campaign'] for r in per[l] if r['campaign'] is not None} for l in family}
    chained = [(a, b) for i, a in enumerate(family) for b in family[i + 1:] if fam_ids[a] & fam_ids[b]]
    if family:
        print('family kits sharing a campaign id: %d of %d pairs %s' % (
            len(chained), len(family) * (len(family) - 1) // 2, ' '.join('%s+%s' % p for p in chained)))
    hf = [r for r in ham if r['level'] == 'bulk']
    print('ham flagged bulk: %d of %d; spam flagged bulk: %d of %d' % (
        len(hf), len(ham), sum(1 for r in spam if r['level'] == 'bulk'), len(spam)))
    for r in hf[:10]:
        print('  ham flagged:', r['message_id'], r['campaign'], r['campaign_size'])
    # Purity: real ham whose campaign also holds spam or a synthetic
    # campaign's messages (by final campaign id): a legitimate message
    # must never join a spam campaign.
    unwanted = {r['campaign'] for r in spam if r['campaign'] is not None}
    for rs in per.values():
        unwanted |= {r['campaign'] for r in rs if r['campaign'] is not None}
    in_spam = [r for r in ham if r['campaign'] is not None and r['campaign'] in unwanted]
    print('ham in a campaign with spam or a synthetic campaign: %d' % len(in_spam))
    for r in in_spam[:10]:
        print('  ham in spam:', r['message_id'], r['campaign'], r['campaign_size'])
    return {'recall': caught / max(1, len(per)), 'msgrecall': past_flagged / max(1, past_total),
            'ids': ids_total / max(1, len(per)), 'ham': len(hf), 'chained': len(chained),
            'ham_in_spam': len(in_spam)}

def key_sweep(args):
    """Both measurements under --keys random fingerprint keys (seeded, so
    reproducible), each a copy of the configuration with another
    fingerprint.hash_key; one line per key, then mean and worst."""
    base = open(args.config or os.path.join(os.path.dirname(__file__), '..', 'config', 'bulkwatch.toml')).read()
    if not re.search(r'(?m)^hash_key = ', base):
        sys.exit('key sweep: the configuration has no hash_key line to replace')
    rng = random.Random(args.key_seed)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for n in range(args.keys):
            key = '%032x' % rng.getrandbits(128)
            path = os.path.join(d, 'key%d.toml' % n)
            with open(path, 'w') as f:
                f.write(re.sub(r'(?m)^hash_key = .*$', 'hash_key = "%s"' % key, base))
            CONFIG[:] = ['--config', path]
            with open(os.devnull, 'w') as quiet, contextlib.redirect_stdout(quiet):
                r = {}
                if args.corpus and os.path.isdir(args.corpus):
                    r.update(near_identical(args))
                    r.update(arrival(args))
                r.update(mixed_stream(args))
            rows.append(r)
            print('key %s: %s' % (key, '  '.join('%s %.*f' % (k, args.places, v) if isinstance(v, float) else '%s %d' % (k, v)
                                                  for k, v in sorted(r.items()))))
    worst = {'linked': min, 'direct5': min, 'recall': min, 'msgrecall': min, 'ids': max, 'ham': max,
             'ham_arrival': max, 'precision': min, 'chained': max, 'ham_in_spam': max,
             'b3_precision': min, 'b3_recall': min}
    for k in sorted(rows[0]):
        vals = [r[k] for r in rows]
        print('%-9s mean %.*f  worst %.*f' % (k, args.places, sum(vals) / len(vals), args.places, worst[k](vals)))

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--bin', default='target/release/bulkwatch')
    ap.add_argument('--corpus', default=os.environ.get('BULKWATCH_CORPUS'),
                    help='directory of the sa-*.mbox files (default: $BULKWATCH_CORPUS)')
    ap.add_argument('--fixtures')
    ap.add_argument('--bulk-threshold', type=float, default=5)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--quotes', choices=['whole', 'strip', 'bounded'], default='whole',
                    help='what the truth does with quoted lines (> ..., Name> ...) and what follows '
                         '-----Original Message----- in text/plain parts: keep them (whole), drop them '
                         '(strip), or drop them only when at least 20 words and a third of the text '
                         'stay, as bulkwatch does so that quoting cannot hide a campaign (bounded)')
    ap.add_argument('--strip-quotes', dest='quotes', action='store_const', const='strip',
                    help='the same as --quotes strip')
    ap.add_argument('--config', help='bulkwatch configuration file to replay with')
    ap.add_argument('--worst', type=int, default=0,
                    help='list the N campaigns that hold the most linked pairs below Jaccard 0.5')
    ap.add_argument('--keys', type=int, default=0,
                    help='repeat both measurements under this many random fingerprint keys and summarize (needs --fixtures)')
    ap.add_argument('--key-seed', type=int, default=1, help='seed of the random keys')
    ap.add_argument('--places', type=int, default=3,
                    help='decimal places of the key sweep\'s figures (4 to see a change of 0.002)')
    args = ap.parse_args()
    args.strip_quotes = {'whole': False, 'strip': True, 'bounded': 'bounded'}[args.quotes]
    if args.keys:
        if not args.fixtures:
            sys.exit('--keys needs --fixtures')
        key_sweep(args)
        return
    if args.config:
        CONFIG.extend(['--config', args.config])
    if args.corpus and os.path.isdir(args.corpus):
        near_identical(args)
        arrival(args)
    if args.fixtures:
        mixed_stream(args)

if __name__ == '__main__':
    main()
