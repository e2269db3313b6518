#!/bin/sh
# build.sh builds the Kubernetes control plane the k8stest harness runs
# (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) from the Go
# module proxy into one directory, once: a directory that already holds all
# four binaries is left alone.
#
# k8s.io/kubernetes cannot be `go install`ed: its go.mod replaces the k8s.io
# staging modules with ./staging paths. A throwaway wrapper module requires it
# and replaces each staging module with its published tag instead (etcd's
# server module the same way with its sibling modules).
#
# usage: build.sh OUTDIR
set -eu

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
ETCD_VERSION=v3.7.3

out=${1:?usage: build.sh OUTDIR}
GO=${GO:-go}

have_all() {
	for b in kube-apiserver kube-controller-manager kube-scheduler etcd; do
		[ -x "$out/$b" ] || return 1
	done
}
if have_all; then
	exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/k8s" "$work/etcd" "$work/bin"

export CGO_ENABLED=0 GOFLAGS=-mod=mod GOWORK=off

# The wrapper for the Kubernetes commands: every `k8s.io/x => ./staging/...`
# replace of k8s.io/kubernetes's go.mod becomes `k8s.io/x => k8s.io/x v0.N.M`.
echo "k8stest: building Kubernetes $K8S_VERSION control plane into $out (about 10 minutes cold)"
gomod=$(cd "$work/k8s" && $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')
{
	echo "module autoinfer.local/k8sbuild"
	echo
	echo "go 1.26"
	echo
	echo "require k8s.io/kubernetes $K8S_VERSION"
	echo
	grep -E '^[[:space:]]*k8s\.io/[a-z0-9-]+ => \./staging/' "$gomod" |
		awk -v v="$STAGING_VERSION" '{print "replace " $1 " => " $1 " " v}'
} > "$work/k8s/go.mod"

ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags="$ldflags -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
done
for cmd in kube-apiserver kube-controller-manager kube-scheduler; do
	echo "k8stest: go build $cmd"
	(cd "$work/k8s" && $GO build -trimpath -ldflags "$ldflags" -o "$work/bin/$cmd" "k8s.io/kubernetes/cmd/$cmd")
done

# etcd: the server module's siblings replaced with their published tags.
cat > "$work/etcd/go.mod" <<MOD
module autoinfer.local/etcdbuild

go 1.26

require go.etcd.io/etcd/server/v3 $ETCD_VERSION

replace go.etcd.io/etcd/api/v3 => go.etcd.io/etcd/api/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/pkg/v3 => go.etcd.io/etcd/client/pkg/v3 $ETCD_VERSION
replace go.etcd.io/etcd/client/v3 => go.etcd.io/etcd/client/v3 $ETCD_VERSION
replace go.etcd.io/etcd/pkg/v3 => go.etcd.io/etcd/pkg/v3 $ETCD_VERSION
MOD
echo "k8stest: go build etcd"
(cd "$work/etcd" && $GO build -trimpath -ldflags "-s -w" -o "$work/bin/etcd" go.etcd.io/etcd/server/v3)

# Move into place only when all four built, so a half build never counts.
for b in kube-apiserver kube-controller-manager kube-scheduler etcd; do
	mv "$work/bin/$b" "$out/$b"
done
echo "k8stest: control plane ready in $out"
