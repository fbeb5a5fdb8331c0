# shellcheck shell=bash
# Kueue's Configuration and process, for `up` (first start) and `kueue-mode` (a restart in
# the other mode, as a user upgrading Kueue would). Sourced after lib.sh; never run.
#
# Two modes (TESTCLUSTER_KUEUE_MODE, lib.sh's TC_KUEUE_MODE):
#   builtin   Kueue's own TFJob integration: integrations.frameworks [kubeflow.org/tfjob]
#   external  the operator as Kueue's external framework (`tfjob-operator run --kueue`):
#             frameworks [batch/job] (kubeflow.org/tfjob left out) and
#             externalFrameworks [TFJob.v1.kubeflow.org]
# Everything else is the same in both.

# tc_kueue_config MODE [SETTINGS]: writes $TC_DIR/kueue-config.yaml for MODE, with the ports in
# $TC_DIR/kueue/ports (KUEUE_HEALTH_PORT, KUEUE_WEBHOOK_PORT). SETTINGS, a file of top-level
# Configuration fields (the switch test writes docs/kueue.md's runbook snippet there), stands
# in for MODE's `integrations` and `manageJobsWithoutQueueName`.
tc_kueue_config() {
  local mode=$1 settings=${2:-} integrations
  # shellcheck source=/dev/null
  source "$TC_DIR/kueue/ports"
  case $mode in
    builtin)
      integrations='  frameworks:
  - kubeflow.org/tfjob'
      ;;
    external)
      integrations='  frameworks:
  - batch/job
  externalFrameworks:
  - TFJob.v1.kubeflow.org'
      ;;
    *) tc_die "Kueue mode must be builtin or external, not '$mode'" ;;
  esac
  integrations="manageJobsWithoutQueueName: false
integrations:
$integrations"
  if [[ -n $settings ]]; then
    integrations=$(cat "$settings") || tc_die "cannot read Kueue settings $settings"
  fi
  # Settings (defaults: apis/config/v1beta2/defaults.go of Kueue): no leader election (one
  # replica); every listener on 127.0.0.1 (health probes, webhooks) or off (metrics; the
  # visibility API server of feature VisibilityOnDemand, which would listen on :8082); jobs
  # without the queue label are left alone (manageJobsWithoutQueueName false, the default),
  # so other tests' TFJobs never meet Kueue. waitForPodsReady is on in v0.19 by default (30 min
  # to start); here a job that lost its pods gets 20 s to recover (recoveryTimeout) before
  # Kueue evicts it, and admission is not blocked while another job starts.
  cat >"$TC_DIR/kueue-config.yaml" <<EOF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
health:
  healthProbeBindAddress: 127.0.0.1:$KUEUE_HEALTH_PORT
metrics:
  bindAddress: "0"
webhook:
  host: 127.0.0.1
  port: $KUEUE_WEBHOOK_PORT
  certDir: $TC_DIR/kueue/certs
waitForPodsReady:
  blockAdmission: false
  recoveryTimeout: 20s
featureGates:
  VisibilityOnDemand: false
$integrations
EOF
  echo "$mode" >"$TC_DIR/kueue/mode"
}

# tc_kueue_start: starts Kueue with $TC_DIR/kueue-config.yaml, in a mount namespace of its
# own where /etc/kueue/metrics/certs exists (see README.md, "Kueue"); its pid in run/kueue.pid.
# (Without kueue-mode's lock, fd 8: Kueue would hold it for as long as it runs.)
tc_kueue_start() {
  # As root a plain mount namespace; otherwise a user namespace as well (mapped to root).
  local ns_flags=(--mount --propagation private)
  (($(id -u) == 0)) || ns_flags+=(--user --map-root-user)
  # (the script's $0 is "sh", its $1 and $2 the overlay's directories, then Kueue's command)
  # shellcheck disable=SC2016
  setsid env KUBECONFIG="$TC_DIR/pki/kueue.kubeconfig" unshare "${ns_flags[@]}" \
    sh -c 'mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc ||
             { echo "testcluster: cannot overlay /etc for /etc/kueue/metrics/certs (needs mount namespaces and overlayfs)"; exit 1; }
           shift 2; exec "$@"' \
    sh "$TC_DIR/kueue/etc-upper" "$TC_DIR/kueue/etc-work" \
    "$(tc_kueue_bin_dir)/kueue" --config "$TC_DIR/kueue-config.yaml" \
    >>"$TC_DIR/logs/kueue.log" 2>&1 </dev/null 8>&- &
  echo $! >"$TC_DIR/run/kueue.pid"
}

# tc_kueue_ready SECONDS: waits until Kueue answers /readyz (it then runs its controllers).
tc_kueue_ready() {
  local deadline=$(($(date +%s) + $1))
  # shellcheck source=/dev/null
  source "$TC_DIR/kueue/ports"
  until curl -fsS --max-time 1 "http://127.0.0.1:$KUEUE_HEALTH_PORT/readyz" >/dev/null 2>&1; do
    tc_pid kueue >/dev/null || tc_fail kueue "exited during start-up"
    (($(date +%s) < deadline)) || tc_fail kueue "not ready after $1 s"
    sleep 0.1
  done
}
