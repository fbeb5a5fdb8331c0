# shellcheck shell=bash
# The build recipe of the test cluster's binaries. Sourced by `up`; its text is part of the
# cache key, so changing anything here (or go.mod / go.sum, or the Go toolchain) rebuilds.
#
# tc_build OUT_DIR: builds into OUT_DIR (must exist and be empty)
#   etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl: this module
#   (go.mod / go.sum pin k8s.io/kubernetes v1.34.4 and etcd v3.6.4);
#   kwok: `go install sigs.k8s.io/kwok/cmd/kwok@v0.8.0` in its own module graph
#   (kwok v0.8.0 builds against k8s.io v0.36 libraries, which cannot share a graph with
#   k8s.io/kubernetes v1.34.4).

TC_K8S_VERSION=v1.34.4
TC_KWOK_VERSION=v0.8.0

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
  (
    cd "$here" &&
      go build -trimpath -ldflags "$ld" -o "$out/" \
        k8s.io/kubernetes/cmd/kube-apiserver \
        k8s.io/kubernetes/cmd/kube-controller-manager \
        k8s.io/kubernetes/cmd/kube-scheduler \
        k8s.io/kubernetes/cmd/kubectl \
        go.etcd.io/etcd/server/v3 &&
      mv "$out/server" "$out/etcd"
  ) || return 1
  # Outside this module, so go.mod's replaces and requirements do not apply.
  (cd / && GOBIN=$out go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$TC_KWOK_VERSION") || return 1
}
