#!/usr/bin/env bash
# Start a one-node SLURM cluster (Debian's slurmctld, slurmd, munge) without systemd.
#   tests/cluster/slurm-up.sh STATE_DIR     install when missing, configure, start, wait until idle
#   tests/cluster/slurm-up.sh --install     only install the Debian packages (root, apt-get)
# Everything lives in STATE_DIR: slurm.conf, spool, logs, PID files of the daemons this script
# started (tests/cluster/slurm-down.sh STATE_DIR stops exactly those). Clients find the cluster
# through `export SLURM_CONF=STATE_DIR/slurm.conf`. Needs root (slurmd runs jobs as any user).
set -euo pipefail

PACKAGES=(slurmctld slurmd slurm-client munge)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing ${missing[*]}"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

[ "$(id -u)" = 0 ] || { echo "slurm-up.sh: must run as root" >&2; exit 2; }
if [ "${1:-}" = "--install" ]; then install_packages; exit 0; fi
[ $# -eq 1 ] || { echo "usage: $0 STATE_DIR | --install" >&2; exit 2; }

start=$(date +%s.%N)
install_packages
mkdir -p "$1"
DIR=$(cd "$1" && pwd)
NODE=$(hostname -s)
mkdir -p "$DIR/state" "$DIR/spool"

# slurmctld must resolve its own host name.
getent hosts "$NODE" >/dev/null || echo "127.0.0.1 $NODE" >> /etc/hosts

# munge: without systemd nobody creates its runtime dir; reuse a running munged if any.
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  install -d -o munge -g munge -m 0755 /run/munge
  [ -s /etc/munge/munge.key ] || runuser -u munge -- mungekey --create
  runuser -u munge -- munged --force
  for _ in $(seq 50); do munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break; sleep 0.1; done
  cp /run/munge/munged.pid "$DIR/munged.pid"
fi

# The node as slurmd sees it (CPUs, sockets, RealMemory): a larger RealMemory drains the node.
HW=$(slurmd -C | head -n1 | sed 's/^NodeName=[^ ]* //')
cat > "$DIR/slurm.conf" <<EOF
# Written by tests/cluster/slurm-up.sh: one node, no cgroups, no accounting database.
ClusterName=adbench
SlurmctldHost=$NODE
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# every finished job, with state and node, for the test's cross-check
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
MailProg=/bin/true
# configless: slurmd caches this file and links /run/slurm/conf to it, where srun inside a job
# finds it (the Snakemake jobstep plugin drops SLURM_CONF from the job step's environment)
SlurmctldParameters=enable_configless
ReturnToService=2
# squeue keeps finished jobs this long (the test reads them all back after the run); the
# Snakemake plugin polls with squeue only when MinJobAge >= 3 x its first status interval
MinJobAge=3600
SchedulerParameters=bf_interval=1
NodeName=$NODE $HW State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

export SLURM_CONF="$DIR/slurm.conf"
slurmctld -i
slurmd --conf-server "$NODE"
for _ in $(seq 300); do
  state=$(sinfo -h -n "$NODE" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  sleep 0.1
done
[ "$state" = idle ] || { echo "node $NODE is '$state', not idle; see $DIR/*.log" >&2; exit 1; }
echo "SLURM_CONF=$SLURM_CONF"
awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "cluster up in %.1f s\n", b - a }'
