#!/bin/bash
# Builds a real Kubernetes control plane for the sandbox from Debian's own packages only:
# kube-apiserver and kube-controller-manager v1.20 compiled from Debian's `kubernetes` source package
# (full upstream tree with vendor/) with Debian's Go 1.19, plus Debian's etcd 3.4.
# Nothing is installed system-wide. Only WORKDIR/bin is kept afterwards (the build tree is ~2.6 GB).
#
#   build-control-plane.sh [WORKDIR]     default WORKDIR: ${ROLLGUARD_CACHE:-~/.cache/rollguard}/k8s
#
# Pitfalls worked around:
#   1. Go module mode fails on this tree ("updates to go.mod needed"): build in GOPATH mode, as 1.20 did.
#   2. Generated OpenAPI code is not in the tarball: run `make generated_files` first (needs rsync).
#   3. The vendored reflect2 1.0.1 crashes kube-apiserver on Go >= 1.18 at the first custom-resource
#      create ("fatal error: fault" in UnsafeIterate): swap in Debian's reflect2 1.0.2 / json-iterator 1.1.12.
set -euo pipefail
W=${1:-${ROLLGUARD_CACHE:-$HOME/.cache/rollguard}/k8s}
if [ -x "$W/bin/kube-apiserver" ] && [ -x "$W/bin/kube-controller-manager" ] && [ -x "$W/bin/etcd" ]; then
  echo "control plane already built in $W/bin"; exit 0
fi
# One build at a time: a second `make` (another worktree, a parallel job) waits for the first and then
# finds the binaries, instead of deleting the first one's source tree under it.
mkdir -p "$W"
exec 9>"$W/.build.lock"
flock 9
if [ -x "$W/bin/kube-apiserver" ] && [ -x "$W/bin/kube-controller-manager" ] && [ -x "$W/bin/etcd" ]; then
  echo "control plane already built in $W/bin"; exit 0
fi
echo "building the control plane into $W/bin (about 4 minutes on 2 cores)..." >&2
mkdir -p "$W"/{apt/lists/partial,apt/cache/archives/partial,apt/parts,debs,root,src,bin,gocache}
cd "$W"
# deb-src stanzas derived from the machine's own apt sources (same archive, source packages)
sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > apt/parts/src.sources
A="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$W/apt/parts -o Dir::State::Lists=$W/apt/lists -o Dir::Cache=$W/apt/cache -o APT::Sandbox::User=root"
apt-get $A -qq update
(cd src && apt-get $A -qq source --download-only kubernetes)
[ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -i Packages | head -1)" ] || apt-get -qq update
(cd debs && apt-get -qq -o APT::Sandbox::User=root download golang-1.19-go golang-1.19-src etcd-server etcd-client rsync libpopt0 \
   golang-github-modern-go-reflect2-dev golang-github-json-iterator-go-dev)
for f in debs/*.deb; do dpkg -x "$f" root; done
mkdir -p root/wrap
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$W/root/usr/lib/x86_64-linux-gnu" "$W/root/usr/bin/rsync" > root/wrap/rsync
chmod +x root/wrap/rsync
rm -rf src/kubernetes-*/; tar xzf src/kubernetes_*.orig.tar.gz -C src
K=$(ls -d "$W"/src/kubernetes-*/ | head -1); K=${K%/}; S=$W/root/usr/share/gocode/src/github.com
for d in modern-go/reflect2 json-iterator/go; do
  rm -f "$K/vendor/github.com/$d/"*.go
  cp $(ls "$S/$d/"*.go | grep -v _test.go) "$K/vendor/github.com/$d/"
done
export GOROOT=$W/root/usr/lib/go-1.19 PATH=$W/root/wrap:$W/root/usr/lib/go-1.19/bin:$PATH GOCACHE=$W/gocache GOPROXY=off GOFLAGS= HOME=$W
(cd "$K" && make generated_files >/dev/null)
mkdir -p "$W/gopath/src/k8s.io" && ln -sfn "$K" "$W/gopath/src/k8s.io/kubernetes"
cd "$W/gopath/src/k8s.io/kubernetes"
V=k8s.io/kubernetes/vendor/k8s.io
LD="-s -w -X $V/component-base/version.gitVersion=v1.20.2 -X $V/component-base/version.gitMajor=1 -X $V/component-base/version.gitMinor=20 -X $V/client-go/pkg/version.gitVersion=v1.20.2"
for c in kube-apiserver kube-controller-manager; do
  GOPATH=$W/gopath GO111MODULE=off CGO_ENABLED=0 go build -ldflags "$LD" -o "$W/bin/$c.tmp" ./cmd/$c
  mv "$W/bin/$c.tmp" "$W/bin/$c"
done
cp "$W/root/usr/bin/etcdctl" "$W/bin/"
cp "$W/root/usr/bin/etcd" "$W/bin/etcd.tmp" && mv "$W/bin/etcd.tmp" "$W/bin/etcd"
cd "$W"
# Keep only the binaries: the build tree, Go toolchain and caches take ~2.6 GB.
chmod -R u+w apt debs root src gopath gocache 2>/dev/null || true
rm -rf apt debs root src gopath gocache
ls -la "$W/bin"
