#!/bin/bash
# Installs a real Prometheus server for the tests of the `prometheus` check, from Debian's own package
# (`prometheus`, 2.42 on bookworm), the way build-control-plane.sh gets etcd: the .deb is downloaded and
# unpacked, nothing is installed system-wide and no service is started. Only WORKDIR/bin/prometheus
# (and promtool) is kept. Idempotent: instant when already there.
#
#   install-prometheus.sh [WORKDIR]     default WORKDIR: ${ROLLGUARD_CACHE:-~/.cache/rollguard}/prometheus
#
# The tests start their own server on a free loopback port (tests/helpers/servers.py).
set -euo pipefail
W=${1:-${ROLLGUARD_CACHE:-$HOME/.cache/rollguard}/prometheus}
if [ -x "$W/bin/prometheus" ]; then
  echo "prometheus already installed in $W/bin"; exit 0
fi
echo "installing Debian's prometheus into $W/bin..." >&2
mkdir -p "$W"/{debs,root,bin}
cd "$W"
[ -n "$(ls /var/lib/apt/lists/ 2>/dev/null | grep -i Packages | head -1)" ] || apt-get -qq update
(cd debs && apt-get -qq -o APT::Sandbox::User=root download prometheus)
for f in debs/*.deb; do dpkg -x "$f" root; done
cp root/usr/bin/prometheus bin/prometheus.tmp && mv bin/prometheus.tmp bin/prometheus
cp root/usr/bin/promtool bin/promtool 2>/dev/null || true
rm -rf debs root
"$W/bin/prometheus" --version 2>&1 | head -1
