#!/usr/bin/env python3
"""The linking rule's constants that rest on pairs of the corpus, checked
on halves of it under a key they were not tuned with.

Each constant of src/engine/link.rs and src/engine/index/mod.rs whose
documentation cites pairs of the SpamAssassin corpus (found under the
default fingerprint key, on the whole corpus) is built once at the value
it rejects; the shipped build and each such build replay each half of
the corpus (every other message of each mbox) under another key. A
constant holds on a half when its rejected value joins more ham there than
the shipped value does: the reason it was chosen reappears on mail and
under a key it was not chosen on.

Counted per run: ham joined (a ham message that joined a campaign an
earlier message started) and ham with spam (a ham message whose campaign
id is also a spam message's).

Usage (from the repository root; builds into --target, the dev profile):
  python3 benches/heldout_constants.py --corpus "$BULKWATCH_CORPUS"

Nothing is written into the repository: the halves, the configuration and
the variants' worktrees go to a temporary directory.
"""
import argparse, collections, json, os, re, shutil, subprocess, sys, tempfile

# (name, file, pattern of the definition, the value the docs say was refused)
VARIANTS = [
    ('MAX_PROBED_MISSES', 'src/engine/link.rs', r'(pub const MAX_PROBED_MISSES: u32 = )\d+;', '2'),
    ('MIN_PROBED', 'src/engine/link.rs', r'(pub const MIN_PROBED: f64 = )[\d.]+;', '64.0'),
    ('MIN_GROWTH', 'src/engine/link.rs', r'(pub const MIN_GROWTH: f64 = )[\d.]+;', '0.917'),
    ('MIN_CONTAINED', 'src/engine/link.rs', r'(pub const MIN_CONTAINED: f64 = )[\d.]+;', '24.0'),
    ('MIN_QUOTED', 'src/engine/link.rs', r'(pub const MIN_QUOTED: f64 = )[\d.]+;', '40.0'),
    ('MIN_QUOTED_SHARE', 'src/engine/link.rs', r'(pub const MIN_QUOTED_SHARE: f64 = )[\d.]+;', '0.0'),
    ('MIN_PROBED_BANDS', 'src/engine/index/mod.rs', r'(pub const MIN_PROBED_BANDS: u32 = )\d+;', '1'),
]
MBOXES = ['sa-easy-ham.mbox', 'sa-spam.mbox', 'sa-hard-ham.mbox']
HELD_OUT_KEY = '5f0c1a9e8d7b6a5f4e3d2c1b0a998877'


def split_mbox(path, out0, out1):
    """Every other message of an mboxrd file (whose bodies quote their
    From lines) into two files."""
    data = open(path, 'rb').read()
    starts = [m.start() for m in re.finditer(rb'(?m)^From ', data)]
    starts.append(len(data))
    with open(out0, 'wb') as a, open(out1, 'wb') as b:
        for i in range(len(starts) - 1):
            (a if i % 2 == 0 else b).write(data[starts[i]:starts[i + 1]])


def build(repo, target, name=None, rel=None, pattern=None, value=None):
    """The bulkwatch binary of `repo` at HEAD, with one constant changed."""
    work = tempfile.mkdtemp(prefix='heldout-')
    subprocess.run(['git', '-C', repo, 'worktree', 'add', '-q', '--detach', work], check=True)
    try:
        if name:
            path = os.path.join(work, rel)
            src = open(path).read()
            new, n = re.subn(pattern, lambda m: m.group(1) + value + ';', src)
            if n != 1:
                sys.exit('%s: the definition was not found once in %s' % (name, rel))
            open(path, 'w').write(new)
        env = dict(os.environ, CARGO_TARGET_DIR=target)
        subprocess.run(['cargo', 'build', '-q', '--bin', 'bulkwatch'], cwd=work, env=env, check=True)
        out = os.path.join(target, 'bin-%s' % (name or 'shipped'))
        shutil.copy(os.path.join(target, 'debug', 'bulkwatch'), out)
        return out
    finally:
        subprocess.run(['git', '-C', repo, 'worktree', 'remove', '--force', work], check=True)


def measure(binary, config, files):
    out = subprocess.run([binary, 'replay', '--config', config, '--format', 'jsonl'] + files,
                         capture_output=True, check=False).stdout.decode()
    recs = [json.loads(l) for l in out.splitlines() if l.startswith('{')]
    seen, spam_ids = set(), set()
    for r in recs:
        if 'spam' in r['mbox'] and r.get('campaign'):
            spam_ids.add(r['campaign'])
    joined = with_spam = 0
    for r in recs:
        c = r.get('campaign')
        ham = 'ham' in r['mbox']
        if ham and c and c in seen:
            joined += 1
        if ham and c and c in spam_ids:
            with_spam += 1
        if c:
            seen.add(c)
    return joined, with_spam, len(recs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--corpus', required=True)
    ap.add_argument('--target', default=os.path.join(tempfile.gettempdir(), 'heldout-target'))
    ap.add_argument('--key', default=HELD_OUT_KEY)
    args = ap.parse_args()
    repo = os.getcwd()
    with tempfile.TemporaryDirectory() as d:
        halves = ([], [])
        for m in MBOXES:
            a, b = os.path.join(d, '0-' + m), os.path.join(d, '1-' + m)
            split_mbox(os.path.join(args.corpus, m), a, b)
            halves[0].append(a)
            halves[1].append(b)
        config = os.path.join(d, 'held-out.toml')
        with open(config, 'w') as f:
            f.write('[fingerprint]\nhash_key = "%s"\n\n[store]\nbackend = "memory"\n' % args.key)
        shipped = build(repo, args.target)
        base = [measure(shipped, config, h) for h in halves]
        print('%-18s %-8s %s' % ('constant', 'rejected', '  '.join(
            'half %d: ham joined, with spam (shipped -> rejected)' % i for i in range(2))))
        for name, rel, pattern, value in VARIANTS:
            binary = build(repo, args.target, name, rel, pattern, value)
            cells, holds = [], []
            for i, h in enumerate(halves):
                j, s, _ = measure(binary, config, h)
                cells.append('%d,%d -> %d,%d' % (base[i][0], base[i][1], j, s))
                holds.append(j > base[i][0] or s > base[i][1])
            if all(holds):
                verdict = 'holds on both halves'
            elif any(holds):
                verdict = 'holds on half %d only' % holds.index(True)
            else:
                verdict = 'not reproduced'
            print('%-18s %-8s %s   %s' % (name, value, '   '.join(cells), verdict))


if __name__ == '__main__':
    main()
