#!/usr/bin/env bash
# Build an ns-2.35 whose TCP/Linux Illinois module prints what it computes (see README.md).
#
#   validation/ns2/instrumented/build.sh [WORK_DIR]
#
# WORK_DIR (or $QSTP_NS2_WORK; default /tmp/qstp-ns2-instrumented) receives the source tree,
# logs and the binary WORK_DIR/ns-2.35/ns, whose path is the one line printed on stdout.
# Source: $NS2_TARBALL if set, else Debian's ns2_2.35+dfsg.orig.tar.xz from
# `apt-get source --download-only ns2` (a deb-src entry is added if apt has none). Debian's
# patches are not used. Installs libtclcl1-dev libotcl1-dev tcl-dev tk-dev (and ns2, for the
# check) with apt-get when missing. Re-running rebuilds only what changed. Jobs: $NS2_JOBS (2).
# Finally it checks that /usr/bin/ns and the new binary give byte-identical traces.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
work=${1:-${QSTP_NS2_WORK:-/tmp/qstp-ns2-instrumented}}
jobs=${NS2_JOBS:-2}
log() { echo "build.sh: $*" >&2; }
die() { echo "build.sh: error: $*" >&2; exit 1; }
as_root() {
    if [ "$(id -u)" -eq 0 ]; then "$@"
    elif command -v sudo >/dev/null; then sudo "$@"
    else die "need root (or sudo) for: $*"; fi
}

mkdir -p "$work" || die "cannot create work folder $work"
work=$(cd "$work" && pwd)
mkdir -p "$work/logs"

# --- 1. tools and packages --------------------------------------------------------------
for tool in g++ make tar xz python3 cmp sha256sum; do
    command -v "$tool" >/dev/null || die "'$tool' not found (apt-get install build-essential xz-utils python3)"
done
missing=()
for pkg in libtclcl1-dev libotcl1-dev tcl-dev tk-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ -x /usr/bin/ns ] || missing+=(ns2)
if [ ${#missing[@]} -gt 0 ]; then
    log "installing ${missing[*]}"
    as_root apt-get install -y "${missing[@]}" >"$work/logs/apt-install.log" 2>&1 \
        || { tail -20 "$work/logs/apt-install.log" >&2; die "apt-get install ${missing[*]} failed (log: $work/logs/apt-install.log)"; }
fi

# --- 2. the source tarball --------------------------------------------------------------
have_deb_src() {
    grep -qsE '^[[:space:]]*deb-src[[:space:]]|^Types:.*deb-src' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources
}
fetch_source() {
    local dl=$work/download
    mkdir -p "$dl"
    if ! have_deb_src; then
        local codename
        codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
        [ -n "$codename" ] || die "no deb-src entry in apt's sources and no VERSION_CODENAME in /etc/os-release; set NS2_TARBALL"
        log "adding /etc/apt/sources.list.d/qstp-ns2-src.sources (deb-src, Debian $codename)"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$codename" | as_root tee /etc/apt/sources.list.d/qstp-ns2-src.sources >/dev/null
        as_root apt-get update >"$work/logs/apt-update.log" 2>&1 || die "apt-get update failed (log: $work/logs/apt-update.log)"
    fi
    # Debian's debian.tar.xz may be gone from the mirror (404): only the orig tarball is needed.
    local attempt
    for attempt in 1 2; do
        (cd "$dl" && apt-get source --download-only ns2) >"$work/logs/apt-source.log" 2>&1 || true
        ls "$dl"/ns2_2.35*.orig.tar.* >/dev/null 2>&1 && break
        if [ "$attempt" = 1 ]; then
            log "apt-get source found nothing; running apt-get update"
            as_root apt-get update >"$work/logs/apt-update.log" 2>&1 || true
        fi
    done
    tarball=$(ls "$dl"/ns2_2.35*.orig.tar.* 2>/dev/null | head -1 || true)
    [ -n "$tarball" ] || { tail -8 "$work/logs/apt-source.log" >&2; die "apt-get source --download-only ns2 gave no ns2_2.35*.orig.tar.*; set NS2_TARBALL"; }
    local dsc
    dsc=$(ls "$dl"/ns2_2.35*.dsc 2>/dev/null | head -1 || true)
    if [ -n "$dsc" ]; then
        local want
        want=$(awk -v f="$(basename "$tarball")" '/^Checksums-Sha256:/{s=1;next} /^[^ ]/{s=0} s && $3==f {print $1}' "$dsc")
        [ -z "$want" ] || [ "$(sha256sum <"$tarball" | cut -d' ' -f1)" = "$want" ] \
            || die "$tarball does not match the checksum in $dsc"
    fi
}
if [ -n "${NS2_TARBALL:-}" ]; then
    tarball=$NS2_TARBALL
    [ -f "$tarball" ] || die "NS2_TARBALL=$tarball: no such file"
else
    tarball=$(ls "$work"/download/ns2_2.35*.orig.tar.* 2>/dev/null | head -1 || true)
    [ -n "$tarball" ] || fetch_source
fi
log "source: $tarball"

# --- 3. unpack (again only if the tarball changed) --------------------------------------
ns=$work/ns-2.35
sum=$(sha256sum <"$tarball" | cut -d' ' -f1)
if [ "$(cat "$work/unpacked.sha256" 2>/dev/null || true)" != "$sum" ]; then
    log "unpacking into $ns"
    rm -rf "$ns" "$work/unpack" "$work/unpacked.sha256" "$work/configured"
    mkdir -p "$work/unpack"
    tar -xf "$tarball" -C "$work/unpack" || die "cannot unpack $tarball"
    [ -d "$work/unpack/ns-2.35/tcp/linux/src" ] || die "$tarball has no ns-2.35/tcp/linux/src"
    mv "$work/unpack/ns-2.35" "$ns" && rmdir "$work/unpack"
    echo "$sum" >"$work/unpacked.sha256"
fi

# --- 4. a prefix of symlinks laid out the way ns-2's configure looks for tcl/tk/otcl/tclcl
prefix=$work/prefix
multiarch=$(gcc -print-multiarch 2>/dev/null || dpkg-architecture -qDEB_HOST_MULTIARCH)
link() {  # link TARGET NAME
    [ -e "$1" ] || die "$1 not found (is ${2##*/}'s -dev package installed?)"
    ln -sfn "$1" "$2"
}
mkdir -p "$prefix/include" "$prefix/lib" "$prefix/bin"
for d in /usr/include/tcl8.6/tcl-private/generic /usr/include/tcl8.6/tcl-private/unix \
         /usr/include/tcl8.6/tk-private/generic /usr/include/tclcl; do
    [ -d "$d" ] || die "$d missing (tcl-dev, tk-dev, libtclcl1-dev)"
    for h in "$d"/*.h; do link "$h" "$prefix/include/${h##*/}"; done
done
link /usr/include/otcl.h "$prefix/include/otcl.h"
for l in libtcl8.6.so libtk8.6.so libotcl.so libtclcl.so; do
    link "/usr/lib/$multiarch/$l" "$prefix/lib/$l"
done
link /usr/share/tcltk/tcl8.6 "$prefix/lib/tcl8.6"
link /usr/share/tcltk/tk8.6 "$prefix/lib/tk8.6"
link /usr/bin/tcl2c++ "$prefix/bin/tcl2c++"
link /usr/bin/tcl2c++ "$prefix/tcl2c++"

# --- 5. configure (once), portability edits, instrumentation -----------------------------
python3 "$here/instrument.py" portability "$ns" || die "portability edit failed"
cfg=(--with-tcl="$prefix" --with-tcl-ver=8.6 --with-tk="$prefix" --with-tk-ver=8.6
     --with-otcl="$prefix" --with-tclcl="$prefix")
if [ ! -f "$ns/Makefile" ] || [ "$(cat "$work/configured" 2>/dev/null || true)" != "${cfg[*]}" ]; then
    log "configure (log: $work/logs/configure.log)"
    (cd "$ns" && nice -n 10 ./configure "${cfg[@]}") >"$work/logs/configure.log" 2>&1 \
        || { tail -20 "$work/logs/configure.log" >&2; die "configure failed (log: $work/logs/configure.log)"; }
    echo "${cfg[*]}" >"$work/configured"
fi
python3 "$here/instrument.py" autoconf "$ns" || die "autoconf.h edit failed"
python3 "$here/instrument.py" illinois "$ns" || die "Illinois instrumentation failed"

# --- 6. make ----------------------------------------------------------------------------
log "make ns -j$jobs (log: $work/logs/make.log; a first build takes a few minutes)"
(cd "$ns" && nice -n 10 make -j"$jobs" ns CPP="g++ -std=gnu++98 -fpermissive" \
    CCOPT="-O2 -Wno-write-strings -DUSE_INTERP_RESULT -DUSE_INTERP_ERRORLINE") \
    >"$work/logs/make.log" 2>&1 \
    || { grep -m5 -B2 -A3 'error' "$work/logs/make.log" >&2 || tail -20 "$work/logs/make.log" >&2
         die "make failed (log: $work/logs/make.log)"; }
[ -x "$ns/ns" ] || die "make succeeded but $ns/ns is missing"

# --- 7. the instrumentation must change nothing: same traces as Debian's ns --------------
check=$work/check
rm -rf "$check" && mkdir -p "$check/system" "$check/instrumented"
args=("$repo/validation/ns2/hstcp_dumbbell.tcl" illinois 2 10 1 0 cw.tr q.tr)
(cd "$check/system" && nice -n 10 /usr/bin/ns "${args[@]}" >out.txt 2>err.txt) \
    || die "/usr/bin/ns failed on the check run (see $check/system/err.txt)"
(cd "$check/instrumented" && nice -n 10 "$ns/ns" "${args[@]}" >out.txt 2>err.txt) \
    || die "$ns/ns failed on the check run (see $check/instrumented/err.txt)"
# stdout: only the JSON result (the other lines print heap addresses, different every run)
for d in system instrumented; do grep '^{' "$check/$d/out.txt" >"$check/$d/result.json" || true; done
for f in cw.tr q.tr result.json; do
    [ -s "$check/system/$f" ] || die "check run wrote no $f"
    cmp -s "$check/system/$f" "$check/instrumented/$f" \
        || die "$f differs between /usr/bin/ns and $ns/ns (in $check): the instrumented build does not reproduce Debian's"
done
for k in ACKED UPD; do
    grep -q "^$k " "$check/instrumented/err.txt" || die "no $k lines from $ns/ns: instrumentation not active"
done
log "check passed: cw.tr, q.tr and the JSON result identical to /usr/bin/ns ($(wc -l <"$check/instrumented/err.txt") instrumentation lines)"
echo "$ns/ns"
