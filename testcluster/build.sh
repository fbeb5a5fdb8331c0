# shellcheck shell=bash
# The build recipe of the test cluster's binaries. Sourced by `up`; its text is part of the
# cache key, so changing anything here (or go.mod / go.sum, or the Go toolchain) rebuilds.
#
# tc_build OUT_DIR: builds into OUT_DIR (must exist and be empty)
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl: this module
#   (go.mod / go.sum pin k8s.io/kubernetes v1.34.4 and etcd v3.6.4);
#   scheduler-plugins-scheduler, scheduler-plugins-controller: sigs.k8s.io/scheduler-plugins
#   v0.34.7's cmd/scheduler and cmd/controller, in this same module (go.mod's
#   `replace k8s.io/kubernetes => v1.34.4` keeps every k8s.io library at the cluster's version;
#   v0.34.7 asks for v1.34.7, whose staging modules the proxy here partly refuses);
#   kwok: `go install sigs.k8s.io/kwok/cmd/kwok@v0.8.0` in its own module graph
#   (kwok v0.8.0 builds against k8s.io v0.36 libraries, which cannot share a graph with
#   k8s.io/kubernetes v1.34.4);
#   and downloads volcano.sh/volcano v1.10.0 into the module cache (only its PodGroup CRD is
#   used, read by `up`; nothing of it is built).
# Each step's time goes to the build log ("step NAME: N s").

TC_K8S_VERSION=v1.34.4
TC_KWOK_VERSION=v0.8.0
# Must match go.mod's requirement (the version `go get -tool` pinned).
TC_SCHEDULER_PLUGINS_VERSION=v0.34.7
# v1.11.0 and later: 403 from the module proxy here.
TC_VOLCANO_VERSION=v1.10.0

# tc_module_dir MODULE@VERSION: its directory in the Go module cache (downloaded if missing).
# Run outside any module, so no go.mod's replaces apply.
tc_module_dir() {
  (cd / && GOFLAGS=-modcacherw GOTOOLCHAIN=local go mod download -json "$1" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
}

# tc_step NAME COMMAND...: runs COMMAND, logging its wall time.
tc_step() {
  local name=$1 t=$(date +%s) rc=0
  shift
  echo "--- step $name: $*"
  "$@" || rc=$?
  echo "--- step $name: $(($(date +%s) - t)) s (exit $rc)"
  return "$rc"
}

tc_build() {
  local out=$1 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  local major=${TC_K8S_VERSION#v} && major=${major%%.*}
  local minor=${TC_K8S_VERSION#v*.} && minor=${minor%%.*}
  local ld="-s -w" pkg
  # The same stamps as kubernetes' hack/lib/version.sh: component-base for /version and
  # `kubectl version`, client-go for the default User-Agent (kube-controller-manager/v1.34.4 ...).
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $pkg.gitVersion=$TC_K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    ld+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  cd "$here" || return 1
  tc_step kubernetes go build -trimpath -ldflags "$ld" -o "$out/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler \
    k8s.io/kubernetes/cmd/kubectl \
    go.etcd.io/etcd/server/v3 || return 1
  mv "$out/server" "$out/etcd" || return 1
  # Stamped v1.34.4 too, the version of the k8s.io libraries inside, not scheduler-plugins'
  # own v0.34.7 (its Makefile's stamp): the scheduler derives its emulation version from this
  # stamp, and 0.34 is below the 1.31 floor. User-Agent: scheduler-plugins-scheduler/v1.34.4 ...
  tc_step scheduler-plugins go build -trimpath -ldflags "$ld" \
    -o "$out/scheduler-plugins/" \
    sigs.k8s.io/scheduler-plugins/cmd/scheduler \
    sigs.k8s.io/scheduler-plugins/cmd/controller || return 1
  mv "$out/scheduler-plugins/scheduler" "$out/scheduler-plugins-scheduler" &&
    mv "$out/scheduler-plugins/controller" "$out/scheduler-plugins-controller" &&
    rmdir "$out/scheduler-plugins" || return 1
  # Outside this module, so go.mod's replaces and requirements do not apply.
  (cd / && GOBIN=$out tc_step kwok go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$TC_KWOK_VERSION") || return 1
  local d
  d=$(tc_module_dir "volcano.sh/volcano@$TC_VOLCANO_VERSION") && [[ -d $d ]] || {
    echo "go mod download volcano.sh/volcano@$TC_VOLCANO_VERSION failed" >&2
    return 1
  }
}
