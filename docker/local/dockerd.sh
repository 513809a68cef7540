#!/usr/bin/env bash
# A Docker engine for `make compose-test` on a development machine (Debian's docker.io):
# started only when none answers, in the background, listening on its unix socket only
# (never on TCP), with `--iptables=false` (no firewall rules on a shared machine: containers
# then reach no network beyond their own, which the builds get around with `--network host`).
# overlay2 storage, vfs where overlay2 cannot run. Its log: ${TMPDIR:-/tmp}/ragas-ops-dockerd.log.
set -euo pipefail
client=/usr/bin/docker
[ -x "$client" ] || client="$(command -v docker || true)"
[ -n "$client" ] || { echo "no Docker client: apt-get install docker.io debootstrap" >&2; exit 1; }
if "$client" info >/dev/null 2>&1; then
    echo "dockerd: already running"
    exit 0
fi
command -v dockerd >/dev/null || { echo "no dockerd: apt-get install docker.io debootstrap" >&2; exit 1; }
log="${TMPDIR:-/tmp}/ragas-ops-dockerd.log"
for driver in overlay2 vfs; do
    nohup dockerd --iptables=false --storage-driver="$driver" -H unix:///var/run/docker.sock \
        >>"$log" 2>&1 </dev/null &
    pid=$!
    for _ in $(seq 60); do
        if "$client" info >/dev/null 2>&1; then
            echo "dockerd: started (pid $pid, storage $driver, log $log)"
            exit 0
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    echo "dockerd: could not start with $driver storage (see $log)" >&2
done
exit 1
