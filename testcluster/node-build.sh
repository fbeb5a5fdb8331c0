# shellcheck shell=bash
# The build recipe of the real node's binaries (testcluster/node-up). Sourced, never run. Its
# own cache key (below) leaves the control plane's key (build.sh, go.mod, go.sum) untouched.
#
# tc_node_build OUT_DIR: builds into OUT_DIR (must exist and be empty)
#   kubelet, kube-proxy: Kubernetes v1.34.4, module realnode/ (the control plane's go.mod with
#     the same pins and replaces, plus kubelet's and kube-proxy's own dependencies: building
#     them in the control plane's module would change its go.sum and so its cache key);
#   coredns: CoreDNS v1.15.0, module realnode/coredns/ (a main.go with only the plugins bind,
#     ready, errors, log and kubernetes: no `forward`, so no query ever leaves the machine).
# Each step's time goes to the build log ("step NAME: N s").

TC_NODE_K8S_VERSION=v1.34.4
# shellcheck disable=SC2034 # named in node-up's messages
TC_NODE_COREDNS_VERSION=v1.15.0

# The node binaries' cache directory for the current pins.
tc_node_cache_key() {
  local here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  {
    cat "$here/node-build.sh" "$here/realnode/go.mod" "$here/realnode/go.sum" \
      "$here/realnode/coredns/go.mod" "$here/realnode/coredns/go.sum" "$here/realnode/coredns/main.go"
    GOTOOLCHAIN=local go version
  } | sha256sum | cut -c1-16
}

# tc_node_step NAME COMMAND...: runs COMMAND, logging its wall time.
tc_node_step() {
  local name=$1 t rc=0
  t=$(date +%s)
  shift
  echo "--- step $name: $*"
  "$@" || rc=$?
  echo "--- step $name: $(($(date +%s) - t)) s (exit $rc)"
  return "$rc"
}

tc_node_build() {
  local out=$1 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  local major=${TC_NODE_K8S_VERSION#v} && major=${major%%.*}
  local minor=${TC_NODE_K8S_VERSION#v*.} && minor=${minor%%.*}
  local ld="-s -w" pkg
  # The same stamps as the control plane (build.sh): /version, the node's kubeletVersion and
  # the User-Agents read v1.34.4.
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$TC_NODE_K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  (cd "$here/realnode" && tc_node_step kubelet-kube-proxy go build -trimpath -ldflags "$ld" -o "$out/" \
    k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy) || return 1
  (cd "$here/realnode/coredns" && tc_node_step coredns go build -trimpath -ldflags "-s -w" -o "$out/coredns" .) || return 1
}
