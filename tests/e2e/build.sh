#!/bin/sh
# Build the end-to-end tier's upstream components from their Go modules and
# cache the binaries outside build/, keyed by each module's go.mod + go.sum
# + own .go files (and this script): a warm run finds them and builds nothing.
#
#   tests/e2e/build.sh [MODULE...]     default: every module under tests/e2e/
#   prints the bin directory of each module, one "NAME DIR" line each
#
# Modules (each its own go.mod, so one's pins never reach another's build):
#   kube         etcd, kube-apiserver, kube-controller-manager, kubectl,
#                kubelet, kube-proxy
#   controllers  helm, JobSet, LeaderWorkerSet
#   kuberay      the KubeRay operator (its controller-runtime line is older)
#   kubeflow     Kubeflow Trainer v2's controller manager (TrainJob)
#   trainingoperator  the Kubeflow training-operator v1 (PyTorchJob; an
#                older controller-runtime line again)
#   containerd   containerd, its runc shim, ctr (the node's runtime)
#   cni          the bridge, host-local, loopback and portmap CNI plugins
#   registry     the Distribution registry (the tier's OCI registry)
#   coredns      CoreDNS (the cluster's DNS on the real node)
#   crds         nothing built: cert-manager's CRDs (its controller does not
#                build from the module proxy)
# Cache: $MLD_E2E_CACHE (default ~/.cache/mldiagnostics-e2e); build log and
# seconds taken in each entry (build.log, build.seconds).
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${MLD_E2E_CACHE:-$HOME/.cache/mldiagnostics-e2e}
GO=${GO:-$(command -v go)}
# Debian's golang-go is too old for these modules: take the machine's Go.
case "$($GO version)" in *go1.2[6-9]*|*go1.[3-9]*) ;; *)
  [ -x /usr/local/go/bin/go ] && GO=/usr/local/go/bin/go ;; esac
case "$($GO version 2>/dev/null)" in *go1.2[6-9]*|*go1.[3-9]*) ;; *)
  echo "e2e build: needs Go >= 1.26 (the machine's /usr/local/go); found: $($GO version 2>&1)" >&2
  exit 1 ;; esac
export GOFLAGS=-mod=readonly CGO_ENABLED=0 GOTOOLCHAIN=local
mkdir -p "$CACHE"

key() {  # module dir -> short hash of what decides its binaries
  # (its own Go source too: a tool may be a main of the module's own)
  cat "$1/go.mod" "$1/go.sum" $(find "$1" -name '*.go' | LC_ALL=C sort) "$HERE/build.sh" |
    sha256sum | cut -c1-16
}

kube_ldflags() {  # hack/lib/version.sh's stamps for the version in go.mod
  v=$(sed -n 's/^[[:space:]]*k8s.io\/kubernetes \(v[0-9.]*\).*/\1/p' "$HERE/kube/go.mod" | head -1)
  major=$(echo "$v" | cut -d. -f1 | tr -d v); minor=$(echo "$v" | cut -d. -f2)
  f="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f="$f -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    f="$f -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  echo "$f"
}

helm_ldflags() {  # helm's Makefile: its version, and the Kubernetes version it assumes
  m="$HERE/controllers/go.mod"
  v=$(sed -n 's/^[[:space:]]*helm.sh\/helm\/v3 \(v[0-9.]*\).*/\1/p' "$m" | head -1)
  cg=$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$m" | head -1)
  f="-s -w -X helm.sh/helm/v3/internal/version.version=$v"
  f="$f -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    f="$f -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$cg"
  done
  echo "$f"
}

mod_version() {  # module dir, required module path -> its version in go.mod
  sed -n "s|^[[:space:]]*\(require \)\{0,1\}$2 \(v[0-9][^ ]*\).*|\2|p" "$1/go.mod" | head -1
}

build_module() {  # name -> builds into $CACHE/name-key, prints the bin dir
  name=$1; dir="$HERE/$name"
  out="$CACHE/$name-$(key "$dir")"
  if [ -f "$out/.complete" ]; then echo "$name $out/bin"; return 0; fi
  rm -rf "$out"; mkdir -p "$out/bin"
  start=$(date +%s)
  case $name in
    kube) flags=$(kube_ldflags); tags="selinux,notest" ;;
    controllers) flags=$(helm_ldflags); tags="" ;;
    containerd)  # containerd's Makefile stamps its version (the Node's containerRuntimeVersion)
      v=$(mod_version "$dir" github.com/containerd/containerd/v2)
      flags="-s -w -X github.com/containerd/containerd/v2/version.Version=${v#v}"
      tags="no_btrfs" ;;
    registry)
      v=$(mod_version "$dir" github.com/distribution/distribution/v3)
      flags="-s -w -X github.com/distribution/distribution/v3/version.version=$v"; tags="" ;;
    *)    flags="-s -w"; tags="" ;;
  esac
  echo "e2e build: $name (go.sum $(key "$dir")) -> $out" >&2
  # The modules of the tools and those the module's own code requires
  # directly (a main of its own wraps upstream's packages), or, with no
  # tools, the require lines, with the module cache folder that holds their
  # YAML (CRDs, webhook manifests): "PATH DIR" lines in modules.txt.
  (cd "$dir" && if grep -q '^tool' go.mod; then
     $GO build -p "${GO_BUILD_P:-2}" -trimpath -tags "$tags" -ldflags "$flags" \
       -o "$out/bin/" tool &&
     direct=$(awk '/^require \(/{r=1; next} r && /^\)/{r=0}
                   r && !/indirect/{print $1}' go.mod) &&
     { $GO list -f '{{if not .Module.Main}}{{.Module.Path}} {{.Module.Dir}}{{end}}' tool &&
       { [ -z "$direct" ] || $GO list -m -f '{{.Path}} {{.Dir}}' $direct; }
     } > "$out/modules.raw" && sed '/^$/d' "$out/modules.raw" | sort -u > "$out/modules.txt" &&
     rm "$out/modules.raw"
   else
     reqs=$(awk '/^require [^(]/{print $2}' go.mod)
     $GO mod download $reqs && $GO list -m -f '{{.Path}} {{.Dir}}' $reqs > "$out/modules.txt"
   fi) >"$out/build.log" 2>&1 || {
    echo "e2e build: $name failed; last lines of $out/build.log:" >&2
    tail -30 "$out/build.log" >&2; return 1; }
  # A /vN module path names its binary after the element before it.
  [ -f "$out/bin/server" ] && mv "$out/bin/server" "$out/bin/etcd"
  [ -f "$out/bin/cmd" ] && mv "$out/bin/cmd" "$out/bin/lws"
  echo $(( $(date +%s) - start )) > "$out/build.seconds"
  touch "$out/.complete"
  # Older entries of this module are dead weight once a new one is built.
  for old in "$CACHE/$name"-*; do [ "$old" = "$out" ] || rm -rf "$old"; done
  echo "$name $out/bin"
}

mods=${*:-kube controllers kuberay kubeflow trainingoperator containerd cni registry coredns crds}
for m in $mods; do build_module "$m"; done
