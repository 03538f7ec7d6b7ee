#!/usr/bin/env bash
# Stop the cluster tests/cluster/slurm-up.sh STATE_DIR started: cancel its jobs, then stop
# exactly the daemons whose PID files it left in STATE_DIR (never by name, never others).
set -uo pipefail
[ $# -eq 1 ] || { echo "usage: $0 STATE_DIR" >&2; exit 2; }
DIR=$(cd "$1" && pwd) || exit 1
export SLURM_CONF="$DIR/slurm.conf"

[ -f "$SLURM_CONF" ] && squeue -h -o %i 2>/dev/null | xargs -r scancel 2>/dev/null

stop() {  # stop PID from file $1 if it is still the daemon $2 (a PID may have been reused)
  local file="$DIR/$1" pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  if [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]; then
    kill "$pid"
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    [ -d "/proc/$pid" ] && kill -9 "$pid"
  fi
  rm -f "$file"
}

stop slurmd.pid slurmd
stop slurmctld.pid slurmctld
stop munged.pid munged
# configless slurmd linked /run/slurm/conf to its cache in STATE_DIR: drop the link if it is ours
case "$(readlink /run/slurm/conf 2>/dev/null)" in "$DIR"/*) rm -f /run/slurm/conf ;; esac
echo "cluster in $DIR stopped"
