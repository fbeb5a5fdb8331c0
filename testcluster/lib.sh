# shellcheck shell=bash
# Shared by up, down, operator-kubeconfig, node and selftest. Sourced, never run.

TC_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TC_ROOT=$(cd "$TC_HERE/.." && pwd)
TC_DIR=${TESTCLUSTER_DIR:-$TC_ROOT/target/testcluster}
TC_CACHE=${TESTCLUSTER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-testcluster}
# Gang scheduling (scheduler-plugins' scheduler and PodGroup controller, the PodGroup CRDs of
# scheduler-plugins and Volcano): on unless TESTCLUSTER_GANG=0.
TC_GANG=${TESTCLUSTER_GANG:-1}
# The scheduler-plugins scheduler's name (its profile's schedulerName): Kubeflow's default.
TC_GANG_SCHEDULER=scheduler-plugins-scheduler
# Kueue's controller manager with its CRDs and the kubeflow.org/tfjob integration: on unless
# TESTCLUSTER_KUEUE=0.
TC_KUEUE=${TESTCLUSTER_KUEUE:-1}
# Which side runs the TFJob's half of Kueue's job reconciler (kueue.sh): Kueue's built-in
# integration (`builtin`), or the operator as Kueue's external framework (`external`, the
# operator run with --kueue).
TC_KUEUE_MODE=${TESTCLUSTER_KUEUE_MODE:-builtin}
# Components in start order (binary name = component name); `down` stops them in reverse.
TC_COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler)
[[ $TC_GANG == 1 ]] && TC_COMPONENTS+=(scheduler-plugins-scheduler scheduler-plugins-controller)
# The real node (node-up) sets TESTCLUSTER_NODE=1: no kwok then (its node would take the pods),
# and no Kueue unless asked for (node-e2e asks for it, in the external mode, for tests/node/kueue.rs).
TC_NODE=${TESTCLUSTER_NODE:-0}
[[ $TC_NODE == 1 ]] && TC_KUEUE=${TESTCLUSTER_KUEUE:-0}
[[ $TC_KUEUE == 1 ]] && TC_COMPONENTS+=(kueue)
[[ $TC_NODE == 1 ]] || TC_COMPONENTS+=(kwok)
# What the real node changes in `up` (node-lib.sh, tc_node_control_plane_settings): where the
# API server listens, the Service range, more tokens and flags.
TC_API_ADDRESS=127.0.0.1
TC_SERVICE_RANGE=198.19.1.0/24
TC_EXTRA_TOKENS=""
TC_APISERVER_ARGS=()
TC_KCM_ARGS=()

tc_log() { printf 'testcluster: %s\n' "$*" >&2; }
tc_die() {
  printf 'testcluster: error: %s\n' "$*" >&2
  exit 1
}

# tc_pid_in DIR NAME: the pid recorded under DIR/run of a component, if that process is still
# alive. The control plane's components live under TC_DIR, the real node's under TC_NODE_DIR.
tc_pid_in() {
  local f=$1/run/$2.pid pid
  [[ -f $f ]] || return 1
  pid=$(<"$f")
  [[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

# tc_wait_gone TENTHS PID...: waits until none of the PIDs runs, at most TENTHS tenths of a
# second; fails if one still does.
tc_wait_gone() {
  local tenths=$1 pid alive
  shift
  for _ in $(seq 1 "$tenths"); do
    alive=0
    for pid in "$@"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    ((alive)) || return 0
    sleep 0.1
  done
  return 1
}

# tc_tail_in DIR NAME [LINES]: the last lines of a component's log, indented, for errors.
tc_tail_in() {
  local f=$1/logs/$2.log
  if [[ -s $f ]]; then
    printf '  --- last lines of %s ---\n' "$f" >&2
    tail -n "${3:-25}" "$f" | sed 's/^/  | /' >&2
  else
    printf '  (no log at %s)\n' "$f" >&2
  fi
}

# tc_fail_in DIR NAME MESSAGE: report a component's failure with its log, and exit 1.
tc_fail_in() {
  printf 'testcluster: error: %s: %s\n' "$2" "$3" >&2
  tc_tail_in "$1" "$2"
  exit 1
}

# The control plane's: tc_pid NAME, tc_tail NAME [LINES], tc_fail NAME MESSAGE.
tc_pid() { tc_pid_in "$TC_DIR" "$@"; }
tc_tail() { tc_tail_in "$TC_DIR" "$@"; }
tc_fail() { tc_fail_in "$TC_DIR" "$@"; }

[[ $TC_GANG == 0 || $TC_GANG == 1 ]] || tc_die "TESTCLUSTER_GANG must be 0 or 1, not '$TC_GANG'"
[[ $TC_KUEUE == 0 || $TC_KUEUE == 1 ]] || tc_die "TESTCLUSTER_KUEUE must be 0 or 1, not '$TC_KUEUE'"
[[ $TC_KUEUE_MODE == builtin || $TC_KUEUE_MODE == external ]] ||
  tc_die "TESTCLUSTER_KUEUE_MODE must be builtin or external, not '$TC_KUEUE_MODE'"

tc_kubectl() {
  local k
  k=$(tc_bin_dir)/kubectl
  [[ -x $k ]] || tc_die "kubectl not built yet: run testcluster/up"
  "$k" --kubeconfig "$TC_DIR/admin.kubeconfig" "$@"
}

# The binaries' cache directory for the current pins (go.mod, go.sum, build.sh, toolchain).
tc_cache_key() {
  {
    cat "$TC_HERE/go.mod" "$TC_HERE/go.sum" "$TC_HERE/build.sh"
    GOTOOLCHAIN=local go version
  } | sha256sum | cut -c1-16
}

# A tool built from Go modules by a recipe of its own (build-<name>.sh, which pins its version)
# has a cache directory of its own, keyed by that recipe and the toolchain: a new pin rebuilds
# that tool alone, never the control plane, nor the reverse.
tc_recipe_key() {
  {
    cat "$TC_HERE/$1"
    GOTOOLCHAIN=local go version
  } | sha256sum | cut -c1-16
}

# tc_recipe_bin_dir NAME RECIPE: where the binaries NAME's recipe builds are kept.
tc_recipe_bin_dir() {
  echo "$TC_CACHE/$1-$(tc_recipe_key "$2")/bin"
}

# Kueue (testcluster/up), helm 3 and 4 with actionlint (testcluster/tools), Prometheus and
# promtool (testcluster/monitoring-e2e), Kubeflow's training-operator (the side-by-side
# benchmark's other operator, testcluster/kubeflow-build).
tc_kueue_bin_dir() { tc_recipe_bin_dir kueue build-kueue.sh; }
tc_tools_bin_dir() { tc_recipe_bin_dir tools build-tools.sh; }
tc_prometheus_bin_dir() { tc_recipe_bin_dir prometheus build-prometheus.sh; }
tc_kubeflow_bin_dir() { tc_recipe_bin_dir kubeflow build-kubeflow.sh; }

tc_bin_dir() {
  if [[ -f $TC_DIR/bin-dir ]]; then
    cat "$TC_DIR/bin-dir"
  else
    echo "$TC_CACHE/$(tc_cache_key)/bin"
  fi
}
