#!/bin/sh
# Assemble a minimal root filesystem for the runtime images: the shared-
# library closure the given binaries load (ldd of each, plus the libraries
# they dlopen, given by soname), the programs the pods run besides them
# (the chart's preStop hook runs /bin/sleep), the copyright file of every
# package those files come from, the CA bundle, and a passwd/group with
# the nonroot user 65532. No shell, no package manager: everything else a
# Debian image holds is left out. Runs in the Dockerfile's runtime stage and
# in tests/integration/test_dockerfile.py, which runs the result in a chroot.
#
#   scripts/rootfs.sh DEST --for BINARY... [--with PROGRAM...] [--dlopen SONAME...]
#
# --for: only the binary's libraries (the Dockerfile copies the binary
# itself); --with: the program too, at its own path.
#
# Merged /usr (Debian 12): every file lands under DEST/usr, and DEST/bin,
# /lib, /lib64 and /sbin are the links into it that Debian has.
set -eu
usage="usage: rootfs.sh DEST --for BINARY... [--with PROGRAM...] [--dlopen SONAME...]"
[ $# -ge 3 ] || { echo "$usage" >&2; exit 2; }
DEST=$1; shift
fors="" withs="" sonames="" list=""
for a in "$@"; do
  case $a in
    --for|--with|--dlopen) list=$a ;;
    *) case $list in
         --for) fors="$fors $a" ;; --with) withs="$withs $a" ;; --dlopen) sonames="$sonames $a" ;;
         *) echo "$usage" >&2; exit 2 ;;
       esac ;;
  esac
done

mkdir -p "$DEST/usr/bin" "$DEST/usr/lib" "$DEST/usr/lib64" "$DEST/usr/sbin" \
  "$DEST/etc/ssl/certs" "$DEST/tmp" "$DEST/home/nonroot" "$DEST/usr/share/doc"
for l in bin lib lib64 sbin; do [ -e "$DEST/$l" ] || ln -s "usr/$l" "$DEST/$l"; done
chmod 1777 "$DEST/tmp"
chown 65532:65532 "$DEST/home/nonroot"

place() {  # a path as a program sees it -> copied under DEST (real file + link)
  real=$(readlink -f "$1")
  case $real in /usr/*) at=$real ;; *) at=/usr$real ;; esac
  [ -e "$DEST$at" ] || { mkdir -p "$DEST$(dirname "$at")"; cp -p "$real" "$DEST$at"; }
  case $1 in /usr/*) seen=$1 ;; *) seen=/usr$1 ;; esac
  if [ "$seen" != "$at" ] && [ ! -L "$DEST$seen" ] && [ ! -e "$DEST$seen" ]; then
    mkdir -p "$DEST$(dirname "$seen")"
    ln -s "$at" "$DEST$seen"
  fi
  echo "$real" >> "$DEST/.files"
}

libs() {  # an ELF file -> every library ldd resolves for it
  ldd "$1" 2>/dev/null | sed -n 's/.*=> \(\/[^ ]*\).*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p' |
    while read -r lib; do place "$lib"; done
}

: > "$DEST/.files"
for p in $fors $withs; do
  [ -x "$p" ] || { echo "rootfs.sh: $p is not an executable" >&2; exit 1; }
  libs "$p"
done
for p in $withs; do place "$(readlink -f "$p")"; done
for so in $sonames; do
  path=$(/sbin/ldconfig -p | sed -n "s/^[[:space:]]*$so (libc6,x86-64[^)]*) => //p" | head -1)
  [ -n "$path" ] || { echo "rootfs.sh: $so is not installed" >&2; exit 1; }
  place "$path"
  libs "$path"
done

# The copyright file of each package a copied file belongs to.
sort -u "$DEST/.files" | while read -r f; do
  dpkg -S "$f" 2>/dev/null || dpkg -S "${f#/usr}" 2>/dev/null || true
done | sed 's/:.*//; s/, /\n/g' | sed 's/:.*//' | sort -u | while read -r pkg; do
  if [ -f "/usr/share/doc/$pkg/copyright" ]; then
    mkdir -p "$DEST/usr/share/doc/$pkg"
    cp "/usr/share/doc/$pkg/copyright" "$DEST/usr/share/doc/$pkg/"
  fi
done
rm -f "$DEST/.files"

[ -f /etc/ssl/certs/ca-certificates.crt ] &&
  cp /etc/ssl/certs/ca-certificates.crt "$DEST/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  > "$DEST/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$DEST/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' > "$DEST/etc/nsswitch.conf"
/sbin/ldconfig -r "$DEST"
