#!/usr/bin/env bash
# One-node SLURM cluster on this machine, so CI can run `snakemake --profile slurm` for real.
#
# Installs Debian's munge + slurm-wlm (slurmctld, slurmd, slurm-client), writes a minimal
# slurm.conf (one node, partition `debug`, one fake GPU so `resources: gpu=1` rules are
# schedulable; there is no device behind it, so jobs must fall back to CPU) and starts
# munged, slurmctld and slurmd by hand (CI containers and VMs have no systemd).
# No accounting daemon: sacct does not work here, so the CI profile polls with squeue.
#
# Idempotent: a second run finds the packages, the same configuration and live daemons and
# only re-checks that the node is idle. Every wait is bounded; the script fails, never hangs.
# Needs root (re-executes itself with sudo when available). Tested on Debian 12.
set -euo pipefail

NODE=$(hostname -s)
PARTITION=debug
CONF_DIR=/etc/slurm
WAIT_S=${SETUP_SLURM_WAIT_S:-60}

log() { echo "[setup-slurm] $*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "must run as root (no sudo found)"
  exec sudo -E bash "$0" "$@"
fi
export PATH="$PATH:/usr/sbin:/sbin"

pid_alive() { [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_daemon() {  # stop_daemon PIDFILE NAME: SIGTERM, bounded wait, then SIGKILL
  local pidfile=$1 name=$2 pid i
  if pid_alive "$pidfile"; then
    pid=$(cat "$pidfile"); log "stopping $name (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for i in $(seq 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"   # a stale pidfile blocks apt's prerm scripts later
}

# --- packages ------------------------------------------------------------------
missing=0
for bin in sbatch sinfo srun slurmctld slurmd munged; do
  command -v "$bin" >/dev/null 2>&1 || missing=1
done
if [ "$missing" = 1 ]; then
  log "installing munge and slurm-wlm"
  export DEBIAN_FRONTEND=noninteractive
  timeout 300 apt-get update -q || die "apt-get update failed or timed out"
  timeout 900 apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=120 \
    munge slurm-wlm slurmctld slurmd slurm-client >/dev/null || die "apt-get install failed"
  # policy-rc.d may have refused to start the services; they are started by hand below.
fi

# --- munge -----------------------------------------------------------------------
munge_ok() { timeout 5 munge -n 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; }
if ! munge_ok; then
  [ -s /etc/munge/munge.key ] || mungekey --create --force 2>/dev/null \
    || dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
  chown munge:munge /etc/munge/munge.key; chmod 400 /etc/munge/munge.key
  install -d -o munge -g munge -m 0755 /run/munge
  stop_daemon /run/munge/munged.pid munged
  log "starting munged"
  su -s /bin/sh munge -c /usr/sbin/munged
  for i in $(seq 20); do munge_ok && break; sleep 0.5; done
  munge_ok || die "munged does not answer (see /var/log/munge/munged.log)"
fi

# --- configuration ---------------------------------------------------------------
install -d -o slurm -g slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
# The node advertises at least 2 CPUs and 32 GB (SlurmdParameters=config_overrides), so the
# rules' real-size requests (threads: 2, mem_mb up to 16000) are schedulable on small CI runners;
# nothing enforces them here (proctrack/linuxproc, task/none), just as the GPU is fake.
REAL_CPUS=$(nproc)
CPUS=$(( REAL_CPUS > 2 ? REAL_CPUS : 2 ))
REAL_MEM=$(slurmd -C | sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p')
[ -n "$REAL_MEM" ] || die "slurmd -C did not report RealMemory"
MEM=$(( REAL_MEM * 9 / 10 ))
MEM=$(( MEM > 32000 ? MEM : 32000 ))
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# NodeAddr/ctld address 127.0.0.1: works even where the hostname does not resolve.
cat > "$tmp/slurm.conf" <<CONF
# written by .ci/setup-slurm.sh: one-node test cluster, no accounting, one fake GPU
ClusterName=proofmatch-ci
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=slurm
SlurmdUser=root
SlurmdParameters=config_overrides
AuthType=auth/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
# squeue (the CI profile's status command) sees finished jobs for MinJobAge seconds
MinJobAge=300
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmdSpoolDir=/var/lib/slurm/slurmd
StateSaveLocation=/var/lib/slurm/slurmctld
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM Gres=gpu:fake:1 State=UNKNOWN
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# A GPU with no device: `--gpus=1` is schedulable and sets CUDA_VISIBLE_DEVICES=0.
echo "NodeName=$NODE Name=gpu Type=fake File=/dev/null" > "$tmp/gres.conf"

changed=0
for f in slurm.conf gres.conf; do
  if ! cmp -s "$tmp/$f" "$CONF_DIR/$f"; then
    install -m 0644 "$tmp/$f" "$CONF_DIR/$f"; changed=1
  fi
done

# --- daemons ---------------------------------------------------------------------
if [ "$changed" = 1 ]; then
  log "configuration written to $CONF_DIR; (re)starting the daemons"
  stop_daemon /run/slurmd.pid slurmd
  stop_daemon /run/slurmctld.pid slurmctld
fi
if ! pid_alive /run/slurmctld.pid; then
  log "starting slurmctld"; /usr/sbin/slurmctld
fi
for i in $(seq "$WAIT_S"); do timeout 5 scontrol ping 2>/dev/null | grep -q UP && break; sleep 1; done
timeout 5 scontrol ping 2>/dev/null | grep -q UP || die "slurmctld does not answer (see /var/log/slurm/slurmctld.log)"
if ! pid_alive /run/slurmd.pid; then
  log "starting slurmd"; /usr/sbin/slurmd
fi

# --- wait for the node -------------------------------------------------------------
state=""
for i in $(seq "$WAIT_S"); do
  state=$(timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null | head -n1 || true)
  case "$state" in
    idle|mix|alloc) break ;;
    down|drain|drng|inval|fail)  # e.g. left down by an earlier run: bring it back once
      timeout 5 scontrol update nodename="$NODE" state=resume 2>/dev/null || true ;;
  esac
  sleep 1
done
case "$state" in
  idle|mix|alloc) ;;
  *) die "node $NODE is '$state' after ${WAIT_S}s, not idle (see /var/log/slurm/slurmd.log)" ;;
esac
if [ "$state" = idle ]; then  # a busy node (jobs of an earlier caller) would make srun wait
  timeout 60 srun -N1 -t 1 true || die "srun smoke test failed"
fi
timeout 5 sinfo -o '%P %a %D %t %N %G'
log "cluster ready: partition $PARTITION, node $NODE ($CPUS CPUs, $MEM MB, gres gpu:fake:1)"
