#!/usr/bin/env bash
# Checks the Debian package that `cargo deb` built.
#
#   tests/deb/check.sh contents PACKAGE.deb   what it holds: paths, modes,
#                                             conffiles, maintainer scripts
#   tests/deb/check.sh install PACKAGE.deb    installs it (root, dpkg; on a
#                                             CI machine: it changes the
#                                             system), checks what the
#                                             maintainer scripts did, purges
#                                             it and checks they cleaned up
#
# Exits non-zero at the first failed check, naming it.
set -euo pipefail

CONF=/etc/bulkwatch/bulkwatch.toml
PUBLIC_KEY=62756c6b77617463682d66702d763121

fail() { echo "deb check: FAIL: $*" >&2; exit 1; }
ok() { echo "deb check: ok: $*"; }

# "MODE OWNER PATH" of each entry, from dpkg-deb -c.
listing() { dpkg-deb -c "$1" | awk '{ print $1, $2, $6 }'; }

check_contents() {
    local deb=$1 list tmp
    list=$(listing "$deb")
    expect() {
        grep -qxF -- "$1" <<<"$list" || fail "no '$1' in the package:"$'\n'"$list"
        ok "$1"
    }
    expect "-rwxr-xr-x 0/0 ./usr/bin/bulkwatch"
    expect "-rw-r----- 0/0 ./etc/bulkwatch/bulkwatch.toml"
    expect "-rwxr-xr-x 0/0 ./etc/init.d/bulkwatch"
    grep -qE '^-rw-r--r-- 0/0 \./(usr/)?lib/systemd/system/bulkwatch\.service$' <<<"$list" \
        || fail "no systemd unit in the package"
    ok "the systemd unit"
    local page
    for page in man/*.8; do
        expect "-rw-r--r-- 0/0 ./usr/share/man/man8/$(basename "$page").gz"
    done
    expect "-rw-r--r-- 0/0 ./usr/share/man/man5/bulkwatch.toml.5.gz"
    expect "-rw-r--r-- 0/0 ./usr/share/doc/bulkwatch/README.md"
    expect "-rw-r--r-- 0/0 ./usr/share/doc/bulkwatch/copyright"
    expect "-rw-r--r-- 0/0 ./usr/share/doc/bulkwatch/changelog.Debian.gz"
    expect "-rw-r--r-- 0/0 ./usr/share/bulkwatch/sieve/report-spam.sieve"
    expect "-rw-r--r-- 0/0 ./usr/share/bulkwatch/sieve/report-ham.sieve"
    expect "-rwxr-xr-x 0/0 ./usr/lib/bulkwatch/sieve-pipe/bulkwatch-report"
    # Nothing of the build leaks in (a target/ path, the sources): every
    # file is under one of the package's places.
    if grep -v '^d' <<<"$list" \
        | grep -vE ' \./(usr/bin|usr/share/man|usr/share/doc/bulkwatch|usr/share/bulkwatch/sieve|usr/lib/bulkwatch/sieve-pipe|etc/bulkwatch|etc/init\.d|usr/share/lintian/overrides|(usr/)?lib/systemd/system)/'; then
        fail "unexpected paths in the package (above)"
    fi
    ok "no other paths"

    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    dpkg-deb -e "$deb" "$tmp"
    [ "$(sort "$tmp/conffiles")" = "/etc/bulkwatch/bulkwatch.toml
/etc/init.d/bulkwatch" ] \
        || fail "conffiles is not exactly $CONF and the init script: $(cat "$tmp/conffiles")"
    ok "conffiles: $CONF, /etc/init.d/bulkwatch"
    # The synopsis whole (under 80 characters, not cut by the packager),
    # and the long description starting with its first sentence.
    local synopsis long
    synopsis=$(dpkg-deb -f "$deb" Description | sed -n 1p)
    long=$(dpkg-deb -f "$deb" Description | sed -n 2p)
    [ "${#synopsis}" -lt 80 ] || fail "the synopsis has ${#synopsis} characters: $synopsis"
    grep -qE 'campaigns$' <<<"$synopsis" || fail "the synopsis is cut: '$synopsis'"
    grep -qE '^ bulkwatch is a Postfix milter' <<<"$long" \
        || fail "the long description starts elsewhere: '$long'"
    ok "synopsis '$synopsis', and the long description after it"
    sh -n "$tmp/prerm" || fail "prerm is not valid sh"
    grep -q 'start-stop-daemon --stop' "$tmp/prerm" || fail "prerm does not stop the daemon without systemd"
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./etc/init.d/bulkwatch > "$tmp/init"
    sh -n "$tmp/init" || fail "the init script is not valid sh"
    grep -q '^### BEGIN INIT INFO' "$tmp/init" || fail "the init script has no LSB header"
    grep -q 'update-rc.d bulkwatch defaults' "$tmp/postinst" || fail "postinst does not register the init script"
    ok "init script, prerm"
    grep -q '^Depends:.*adduser' "$tmp/control" || fail "Depends lacks adduser"
    # debian/changelog's entry is this version (bump both together).
    local version
    version=$(dpkg-deb -f "$deb" Version)
    dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/share/doc/bulkwatch/changelog.Debian.gz \
        | gzip -dc | sed -n 1p | grep -qF "bulkwatch ($version)" \
        || fail "debian/changelog's first entry is not version $version"
    ok "version $version, as debian/changelog says"
    ok "depends on adduser"
    for s in postinst postrm; do
        [ -x "$tmp/$s" ] || fail "no executable $s"
        sh -n "$tmp/$s" || fail "$s is not valid sh"
        ! grep -q '#DEBHELPER#' "$tmp/$s" || fail "$s still holds #DEBHELPER#"
    done
    grep -q 'deb-systemd-helper' "$tmp/postinst" || fail "postinst does not enable the unit"
    # The key is made before the unit's snippet starts the service.
    [ "$(grep -n 'bulkwatch keygen' "$tmp/postinst" | cut -d: -f1)" -lt \
      "$(grep -n 'deb-systemd-helper' "$tmp/postinst" | sed -n 1p | cut -d: -f1)" ] \
        || fail "postinst starts the service before it makes the key"
    ok "maintainer scripts"
}

# The pid of the daemon the init script started, if it runs.
daemon_pid() {
    local pid
    pid=$(cat /run/bulkwatch.pid 2>/dev/null) || return 1
    gone "$pid" && return 1
    echo "$pid"
}

# Whether process $1 has ended (a zombie not yet reaped has).
gone() { [ ! -d "/proc/$1" ] || grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }

key_of() { sed -n 's/^hash_key = "\(.*\)"$/\1/p' "$CONF"; }

check_install() {
    local deb=$1 out key
    [ "$(id -u)" -eq 0 ] || fail "install needs root"
    if dpkg-query -W -f='${Status}' bulkwatch 2>/dev/null | grep -q installed; then
        fail "bulkwatch is installed already; this check installs and purges its own"
    fi

    out=$(dpkg -i "$deb" 2>&1) || fail "dpkg -i: $out"
    echo "$out"
    key=$(key_of)
    grep -qxE '[0-9a-f]{32}' <<<"$key" || fail "no key in $CONF: '$key'"
    [ "$key" != "$PUBLIC_KEY" ] || fail "the public key was kept"
    ok "first install made a secret key"
    grep -qF 'smtpd_milters = inet:127.0.0.1:7357' <<<"$out" || fail "no Postfix lines printed"
    for line in 'non_smtpd_milters = $smtpd_milters' 'milter_protocol = 6' \
        'milter_default_action = accept' 'milter_connect_timeout = 10s' \
        'milter_command_timeout = 10s' 'milter_content_timeout = 30s'; do
        grep -qF "$line" <<<"$out" || fail "not printed: $line"
    done
    grep -qF 'see POSTFIX in bulkwatch(8)' <<<"$out" || fail "no pointer to bulkwatch(8)"
    ok "the Postfix lines were printed"
    # Without systemd the init script is registered and started; where the
    # init system refuses (a container's policy-rc.d), dpkg's output says
    # the daemon is not running and how to start it.
    [ -L /etc/rc2.d/S01bulkwatch ] || ls /etc/rc2.d/S*bulkwatch >/dev/null 2>&1 \
        || fail "the init script is not linked for runlevel 2"
    if [ ! -d /run/systemd/system ]; then
        if daemon_pid >/dev/null; then
            ok "the init system started the daemon"
            /etc/init.d/bulkwatch stop >/dev/null || fail "init script stop"
        else
            grep -qF 'bulkwatch: the daemon is NOT running' <<<"$out" \
                && grep -qF 'service bulkwatch start' <<<"$out" \
                || fail "not started, and dpkg's output does not say so: $out"
            ok "dpkg's output says the daemon is not running and how to start it"
        fi
    fi
    getent passwd bulkwatch >/dev/null || fail "no user bulkwatch"
    [ "$(stat -c '%U:%G %a' "$CONF")" = "root:bulkwatch 640" ] \
        || fail "$CONF is $(stat -c '%U:%G %a' "$CONF")"
    [ "$(stat -c '%U:%G' /var/lib/bulkwatch)" = "bulkwatch:bulkwatch" ] \
        || fail "/var/lib/bulkwatch is $(stat -c '%U:%G' /var/lib/bulkwatch)"
    ok "user, config mode and state directory"
    # Without a FILE, check-config reads the installed file, as serve does.
    out=$(/usr/bin/bulkwatch check-config 2>&1) || fail "check-config: $out"
    grep -qF "# $CONF: OK" <<<"$out" || fail "check-config did not read $CONF: $out"
    ! grep -q 'warning' <<<"$out" || fail "check-config warned: $out"
    runuser -u bulkwatch -- /usr/bin/bulkwatch check-config --quiet "$CONF" \
        || fail "the service user cannot read $CONF"
    ok "check-config reads $CONF, as root and as the service user"
    # serve without --config, as the service user in its state directory,
    # runs on the installed file. In a network namespace of its own: it
    # listens where that file says (127.0.0.1:7357 and :9357), which this
    # machine may be using.
    local st=0
    out=$(cd /var/lib/bulkwatch && unshare -n sh -c 'ip link set lo up &&
        exec runuser -u bulkwatch -- timeout --preserve-status -s TERM 3 /usr/bin/bulkwatch serve' 2>&1) || st=$?
    [ "$st" -eq 0 ] || fail "serve exited $st: $out"
    grep -qF "config=$CONF" <<<"$out" || fail "serve did not read $CONF: $out"
    grep -q 'stopped' <<<"$out" || fail "serve did not stop cleanly: $out"
    [ -f /var/lib/bulkwatch/state/state.bin ] || fail "no snapshot in /var/lib/bulkwatch/state"
    ok "serve without --config runs on $CONF as bulkwatch, state in /var/lib/bulkwatch/state"

    # The init script, as on a host without systemd (in a network namespace
    # of its own, as above): start waits for the daemon's readiness, status
    # sees it, it runs as bulkwatch; stop stops it; a start refused by the
    # daemon fails at once, saying why.
    local pid
    out=$(unshare -n sh -c 'ip link set lo up && exec /etc/init.d/bulkwatch start' 2>&1) \
        || fail "init script start: $out"
    pid=$(daemon_pid) || fail "init script start: no daemon running: $out"
    [ "$(ps -o user= -p "$pid")" = bulkwatch ] || fail "the daemon runs as $(ps -o user= -p "$pid")"
    /etc/init.d/bulkwatch status >/dev/null || fail "init script status: not running"
    /etc/init.d/bulkwatch reload >/dev/null || fail "init script reload"
    /etc/init.d/bulkwatch stop >/dev/null || fail "init script stop"
    ! daemon_pid >/dev/null || fail "init script stop left pid $(daemon_pid) running"
    ! /etc/init.d/bulkwatch status >/dev/null || fail "status says running after stop"
    cp -p "$CONF" "$CONF.keep"
    echo 'this is = not toml' >> "$CONF"
    out=$(unshare -n sh -c 'ip link set lo up && exec /etc/init.d/bulkwatch start' 2>&1) \
        && fail "a broken file started: $out"
    grep -q 'TOML parse error' <<<"$out" || fail "a refused start does not say why: $out"
    mv "$CONF.keep" "$CONF"
    ok "init script: start (as bulkwatch), status, reload, stop; a bad file refused, said"
    out=$(unshare -n sh -c 'ip link set lo up && exec /etc/init.d/bulkwatch start' 2>&1) \
        || fail "init script start: $out"
    pid=$(daemon_pid) || fail "no daemon after the second start: $out"

    # An upgrade (here: the same version again) keeps the key.
    dpkg -i "$deb" >/dev/null 2>&1 || fail "reinstall"
    [ "$(key_of)" = "$key" ] || fail "reinstall changed the key"
    [ "$(stat -c '%U:%G %a' "$CONF")" = "root:bulkwatch 640" ] || fail "reinstall changed the mode"
    ok "reinstall keeps the key and the mode"

    pid=$(daemon_pid) || fail "the daemon did not survive the reinstall"
    dpkg --purge bulkwatch >/dev/null 2>&1 || fail "dpkg --purge"
    gone "$pid" || fail "the daemon (pid $pid) outlived the purge"
    ok "the purge stopped the daemon (no systemd; the init system refused to)"
    ! getent passwd bulkwatch >/dev/null || fail "user bulkwatch left after purge"
    ! getent group bulkwatch >/dev/null || fail "group bulkwatch left after purge"
    [ ! -e /var/lib/bulkwatch ] || fail "/var/lib/bulkwatch left after purge"
    [ ! -e /etc/bulkwatch ] || fail "/etc/bulkwatch left after purge"
    ! dpkg-statoverride --list "$CONF" >/dev/null || fail "statoverride left after purge"
    ok "purge removed the user, the state, the config and the statoverride"

    # A file already there with a key of the admin's is never replaced.
    install -d /etc/bulkwatch
    sed "s/^hash_key = .*/hash_key = \"000102030405060708090a0b0c0d0e0f\"/" \
        config/bulkwatch.toml > "$CONF"
    dpkg -i --force-confold "$deb" >/dev/null 2>&1 || fail "install over an edited file"
    [ "$(key_of)" = 000102030405060708090a0b0c0d0e0f ] || fail "an edited key was replaced"
    dpkg --purge bulkwatch >/dev/null 2>&1 || fail "second purge"
    ok "an edited key is kept"
}

case "${1:-}" in
    contents) check_contents "$2" ;;
    install) check_install "$2" ;;
    *) echo "usage: $0 contents|install PACKAGE.deb" >&2; exit 2 ;;
esac
