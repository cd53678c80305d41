#!/bin/sh
# Install the Debian packages a target needs, only those that are missing.
# Usage: scripts/deps.sh test|run|bench|fuzz|images
set -eu
common="cmake make gcc pkg-config libc6-dev libmicrohttpd-dev libgnutls28-dev libssl-dev
 libcurl4-openssl-dev libjansson-dev libyaml-dev libnghttp2-dev openssl curl ca-certificates python3"
# The end-to-end tier's node (runc under containerd, kube-proxy's nft, the
# CNI plugins' iptables) and `make images` (daemonless builds, local bases).
node="runc nftables iptables conntrack"
images="buildah mmdebstrap"
case "${1:-test}" in
  test)  pkgs="$common libcriterion-dev python3-grpcio python3-grpc-tools python3-jsonpatch
               python3-yaml clang-format python3-venv iproute2 util-linux $node $images" ;;
  images) pkgs="$images" ;;
  run)   pkgs="$common" ;;
  bench) pkgs="$common wrk nginx-light golang-go" ;;
  fuzz)  pkgs="$common clang libclang-rt-14-dev" ;;
  *) echo "deps.sh: unknown target $1" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing:$missing"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q --no-install-recommends $missing >/dev/null 2>&1 || {
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q --no-install-recommends $missing
}
