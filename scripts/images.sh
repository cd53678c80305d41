#!/bin/sh
# Build the two images from the Dockerfile itself, without a Docker daemon:
# buildah (Debian's) with chroot isolation and overlay storage (vfs, which
# copies the whole tree at each step, took 10 GB for one build), in a
# storage of its own that never touches the user's. The Dockerfile's debian:12 and
# debian:12-slim bases are produced here with mmdebstrap from this machine's
# own apt sources, as Debian's official images are (debuerreotype: the
# minbase variant; slim drops docs, man pages and locales).
#
#   scripts/images.sh [--push REGISTRY] [--tag TAG] [--cert-dir DIR | --insecure]
#                     [--pause PAUSE_C --push-pause REGISTRY] [--also NAME=DOCKERFILE]...
#
# Prints one line per image: name, uncompressed size, compressed size (the
# sum of its gzip layers: what a registry stores and a node pulls). With
# --push, both images go to REGISTRY/mldiagnostics-{webhook,operator}:TAG
# (--cert-dir: a certs.d folder of CAs to trust; --insecure: plain HTTP).
# --pause: also build the Kubernetes pause image (containerd's sandbox
# image) from its C source, as build/pause does (static, FROM scratch, user
# 65535), for a node that reaches no public registry; pushed as
# REGISTRY/pause:3.10.2. --also: one more image, NAME:TAG, from that
# Dockerfile (its folder the context) on the same local bases, pushed with
# the others (the end-to-end tier's Python image).
# Environment: MLD_IMAGES_STORE (default ~/.cache/mldiagnostics-images) holds
# buildah's storage and the bases; a warm store rebuilds only what changed.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STORE=${MLD_IMAGES_STORE:-$HOME/.cache/mldiagnostics-images}
TAG=$(sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' \
  "$ROOT/charts/mldiagnostics-injection-webhook/Chart.yaml")
PUSH="" TLS="--tls-verify=true" PAUSE="" PAUSE_PUSH="" ALSO=""
PAUSE_TAG=3.10.2
while [ $# -gt 0 ]; do
  case $1 in
    --push) PUSH=$2; shift 2 ;;
    --tag) TAG=$2; shift 2 ;;
    --insecure) TLS="--tls-verify=false"; shift ;;
    --cert-dir) TLS="--cert-dir=$2"; shift 2 ;;
    --pause) PAUSE=$2; shift 2 ;;
    --push-pause) PAUSE_PUSH=$2; shift 2 ;;
    --also) ALSO="$ALSO $2"; shift 2 ;;
    *) echo "images.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in buildah mmdebstrap; do
  command -v $tool >/dev/null || { echo "images.sh: needs $tool (scripts/deps.sh images)" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "images.sh: needs root (buildah's chroot isolation, mmdebstrap)" >&2; exit 1; }
mkdir -p "$STORE/bases"
B="buildah --root $STORE/storage --runroot $STORE/run --storage-driver ${MLD_IMAGES_DRIVER:-overlay}"

base() {  # name variant [extra mmdebstrap args] -> localhost/NAME, built once
  name=$1 variant=$2; shift 2
  $B inspect --type image "localhost/$name" >/dev/null 2>&1 && return 0
  tar="$STORE/bases/$(echo "$name" | tr ':/' '--').tar"
  echo "images: base $name (mmdebstrap --variant=$variant bookworm)" >&2
  # This machine's apt sources (deb822), so the bases come from where its
  # own packages come from.
  cat /etc/apt/sources.list.d/*.sources 2>/dev/null | mmdebstrap --quiet \
    --variant="$variant" --format=tar "$@" \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$tar" -
  ctr=$($B from scratch)
  $B add "$ctr" "$tar" / >/dev/null
  $B config --cmd bash --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  $B commit --quiet --rm "$ctr" "localhost/$name" >/dev/null
  rm -f "$tar"
}

# debuerreotype's slimify: what Debian's -slim images leave out.
SLIM="--dpkgopt=path-exclude=/usr/share/doc/* --dpkgopt=path-include=/usr/share/doc/*/copyright
 --dpkgopt=path-exclude=/usr/share/man/* --dpkgopt=path-exclude=/usr/share/info/*
 --dpkgopt=path-exclude=/usr/share/locale/* --dpkgopt=path-include=/usr/share/locale/locale.alias
 --dpkgopt=path-exclude=/usr/share/lintian/* --dpkgopt=path-exclude=/usr/share/linda/*
 --dpkgopt=path-exclude=/usr/share/groff/* --dpkgopt=path-exclude=/usr/share/omf/*"
base debian:12 minbase
# shellcheck disable=SC2086
base debian:12-slim minbase $SLIM

for target in webhook operator; do
  $B build --quiet --isolation chroot --layers --pull=never \
    --build-arg DEBIAN=localhost/debian:12 --build-arg DEBIAN_SLIM=localhost/debian:12-slim \
    --target "$target" -t "localhost/mldiagnostics-$target:$TAG" -f "$ROOT/Dockerfile" "$ROOT" >/dev/null
done

for target in webhook operator; do
  img="localhost/mldiagnostics-$target:$TAG"
  # Both sizes from the image as a registry holds it (an OCI layout): the
  # gzip layers as stored and pulled, and the same layers unpacked.
  lay="$STORE/layout-$target"
  rm -rf "$lay"
  $B push --quiet --compression-format gzip "$img" "oci:$lay" >/dev/null
  sizes=$(/usr/bin/python3 - "$lay" <<'EOF'
import gzip, json, os, sys
lay = sys.argv[1]
def path(d):
    return os.path.join(lay, "blobs", *d["digest"].split(":"))
idx = json.load(open(os.path.join(lay, "index.json")))
man = json.load(open(path(idx["manifests"][0])))
gz = sum(l["size"] for l in man["layers"])
raw = 0
for l in man["layers"]:
    with gzip.open(path(l)) as f:
        while True:
            b = f.read(1 << 20)
            if not b:
                break
            raw += len(b)
print(raw, gz)
EOF
)
  rm -rf "$lay"
  raw=${sizes% *} gz=${sizes#* }
  printf 'images: %-40s %6.1f MB uncompressed  %6.1f MB compressed\n' "$img" \
    "$(echo "$raw" | awk '{print $1/1e6}')" "$(echo "$gz" | awk '{print $1/1e6}')"
  if [ -n "$PUSH" ]; then
    $B push --quiet "$TLS" "$img" "docker://$PUSH/mldiagnostics-$target:$TAG" >/dev/null
    echo "images: pushed $PUSH/mldiagnostics-$target:$TAG"
  fi
done

for also in $ALSO; do
  name=${also%%=*} file=${also#*=}
  $B build --quiet --isolation chroot --layers --pull=never \
    --build-arg DEBIAN_SLIM=localhost/debian:12-slim \
    -t "localhost/$name:$TAG" -f "$file" "$(dirname "$file")" >/dev/null
  if [ -n "$PUSH" ]; then
    $B push --quiet "$TLS" "localhost/$name:$TAG" "docker://$PUSH/$name:$TAG" >/dev/null
    echo "images: pushed $PUSH/$name:$TAG"
  fi
done

if [ -n "$PAUSE" ]; then
  img="localhost/pause:$PAUSE_TAG"
  if ! $B inspect --type image "$img" >/dev/null 2>&1; then
    dir=$(mktemp -d)
    gcc -Os -Wall -Werror -static -DVERSION="v$PAUSE_TAG-mld" -o "$dir/pause" "$PAUSE"
    ctr=$($B from scratch)
    $B copy "$ctr" "$dir/pause" /pause >/dev/null
    $B config --user 65535:65535 --entrypoint '["/pause"]' "$ctr"
    $B commit --quiet --rm "$ctr" "$img" >/dev/null
    rm -rf "$dir"
  fi
  if [ -n "$PAUSE_PUSH" ]; then
    $B push --quiet "$TLS" "$img" "docker://$PAUSE_PUSH/pause:$PAUSE_TAG" >/dev/null
    echo "images: pushed $PAUSE_PUSH/pause:$PAUSE_TAG"
  fi
fi
