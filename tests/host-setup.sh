#!/usr/bin/env bash
# Prepares a Debian/Ubuntu host (as root) for bundler's test suite: Docker's engine,
# debootstrap (the tests build their base images locally; no registry is reachable), a
# local image registry, chromium (the diagnostics' HTML report is checked in a real
# headless browser), Podman (the engine tests run on it too; the suite starts its own
# `podman system service`; catatonit is its --init) and Slurm with munge (the job tests start
# their own loopback cluster; no daemon of these packages is started here). Starts dockerd
# when no engine answers. Safe to run twice.
set -euo pipefail

missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
[ -x /usr/bin/docker-registry ] || missing+=(docker-registry)
python3 -c "import ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)
command -v chromium >/dev/null 2>&1 || missing+=(chromium fonts-liberation)
command -v podman >/dev/null 2>&1 || missing+=(podman)
[ -x /usr/libexec/podman/catatonit ] || [ -x /usr/bin/catatonit ] || missing+=(catatonit)
command -v slurmctld >/dev/null 2>&1 || missing+=(slurmctld)
command -v slurmd >/dev/null 2>&1 || missing+=(slurmd)
command -v sbatch >/dev/null 2>&1 || missing+=(slurm-client)
command -v munged >/dev/null 2>&1 || missing+=(munge)
if [ ${#missing[@]} -gt 0 ]; then
  echo "host-setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ! docker info >/dev/null 2>&1; then
  echo "host-setup: starting dockerd"
  nohup dockerd >/var/log/bundler-test-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
fi
docker info --format 'host-setup: Docker engine {{.ServerVersion}} answers' \
  || { echo "host-setup: dockerd did not start; see /var/log/bundler-test-dockerd.log" >&2; exit 1; }
