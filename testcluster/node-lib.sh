# shellcheck shell=bash disable=SC2034 # settings, used by the scripts that source this file
# The real node's settings and shared functions (node-up, node-down, node-e2e, images/build).
# Sourced, never run: by the node scripts (first, in place of lib.sh, which it then sources,
# after pointing the control plane's state at the node's: TESTCLUSTER_DIR is always
# <node dir>/control-plane, so the kwok tier of the same checkout is never touched), and by
# `up` when TESTCLUSTER_NODE=1 (after lib.sh). See README.md, "The real node".
if [[ -z ${TC_HERE:-} ]]; then
  _tc_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  export TESTCLUSTER_NODE_DIR=${TESTCLUSTER_NODE_DIR:-$(cd "$_tc_here/.." && pwd)/target/testcluster-node}
  # Gang scheduling is not what this tier tests; its two components would only cost memory.
  export TESTCLUSTER_DIR=$TESTCLUSTER_NODE_DIR/control-plane TESTCLUSTER_NODE=1 TESTCLUSTER_GANG=0
  # shellcheck source=lib.sh
  source "$_tc_here/lib.sh"
fi

# Everything lives in 198.18.0.0/15 (RFC 2544, benchmark testing): never 10.x, 172.16-31.x,
# 192.168.x or a public range. The bridge is ours (not cni0, which another tool may own).
TC_NODE_BRIDGE=tfnode0
TC_NODE_GATEWAY=198.18.0.1
# The bridge's own MAC, set once (locally administered; the gateway's address in its last 4).
TC_NODE_BRIDGE_MAC=02:00:c6:12:00:01
TC_NODE_POD_CIDR=198.18.0.0/24
TC_NODE_SERVICE_CIDR=198.18.1.0/24
TC_NODE_NET=198.18.0.0/15
TC_NODE_NAME=node0
TC_NODE_CLUSTER_DOMAIN=cluster.local
# A second zone CoreDNS serves, for the operator's --cluster-domain (.test: RFC 2606).
TC_NODE_EXTRA_DOMAIN=tfjob.test
# Our own iptables chain (jumped to from OUTPUT and FORWARD): drops whatever would leave the
# machine from or to the node's range.
TC_NODE_GUARD=TFNODE-GUARD
# Per-run state: config, logs, the kubelet's root (pod volumes), pids.
TC_NODE_DIR=${TESTCLUSTER_NODE_DIR:-$TC_ROOT/target/testcluster-node}
# Sockets, runc's and containerd's state, network namespaces: short paths (unix sockets have
# 108 bytes), one node per machine (the bridge and its address are machine-wide).
TC_NODE_RUN=/run/tfjob-testcluster-node
# containerd's root: the imported images, kept per machine (never rebuilt while their inputs
# are unchanged); containers and sandboxes are removed from it by node-down.
TC_NODE_STORE=${TESTCLUSTER_NODE_STORE:-$TC_CACHE/node-store}
TC_NODE_SOCK=$TC_NODE_RUN/containerd.sock

tc_node_require_root() {
  [[ $(id -u) == 0 ]] || tc_die "the real node needs root (a bridge, network namespaces, mounts, iptables, containerd): run $(basename "$0") as root"
}

# The real node's components (containerd, kubelet, kube-proxy, CoreDNS): lib.sh's helpers on
# TC_NODE_DIR.
tc_node_pid() { tc_pid_in "$TC_NODE_DIR" "$@"; }
tc_node_tail() { tc_tail_in "$TC_NODE_DIR" "$@"; }
tc_node_fail() { tc_fail_in "$TC_NODE_DIR" "$@"; }

tc_ctr() { ctr --address "$TC_NODE_SOCK" --namespace k8s.io "$@"; }

# The control plane as the node needs it (read by `up` when TESTCLUSTER_NODE=1): the API
# server on the bridge's address (pods reach it through the `kubernetes` Service), the
# Service range in 198.18.1.0/24, the kubelet's identity and client certificate, the default
# endpoint reconciler, and the controllers real pods and a Deployment need.
tc_node_control_plane_settings() {
  TC_API_ADDRESS=$TC_NODE_GATEWAY
  TC_SERVICE_RANGE=$TC_NODE_SERVICE_CIDR
  TC_EXTRA_TOKENS=$TC_NODE_DIR/pki/tokens.csv
  TC_APISERVER_ARGS=(
    --enable-admission-plugins NodeRestriction
    --endpoint-reconciler-type lease
    --kubelet-client-certificate "$TC_NODE_DIR/pki/apiserver-kubelet-client.crt"
    --kubelet-client-key "$TC_NODE_DIR/pki/apiserver-kubelet-client.key"
    # Else `kubectl logs` looks the node's name up in the machine's resolver.
    --kubelet-preferred-address-types InternalIP
  )
  TC_KCM_ARGS=(
    --controllers "endpoints-controller,endpointslice-controller,deployment-controller,replicaset-controller,root-ca-certificate-publisher-controller"
    --root-ca-file "$TC_DIR/pki/apiserver.crt"
  )
}

# The images testcluster/images/build makes (fixed names; a change of their inputs replaces
# them under the same name). Pods name them with imagePullPolicy IfNotPresent.
TC_IMAGE_PAUSE=docker.io/tfjob-testcluster/pause:1
TC_IMAGE_BUSYBOX=docker.io/tfjob-testcluster/busybox:1
TC_IMAGE_TENSORFLOW=docker.io/tfjob-testcluster/tensorflow:2.21.0
