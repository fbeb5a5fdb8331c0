# shellcheck shell=bash
# The build recipe of Kubeflow's training-operator, the operator the side-by-side benchmark
# (benches/side_by_side.rs) compares us with. Sourced by `kubeflow-build`. Like Kueue's, it has a
# module graph of its own (k8s.io v0.36 libraries) and a cache key of its own (a hash of this
# file and `go version`: lib.sh's tc_recipe_key), so it never rebuilds the control plane
# nor the reverse. Nothing of Kubeflow is in this repository: the binary is built from the Go
# module proxy at the pinned version, and its ClusterRole is read from the same module in the
# Go module cache at run time.
#
# tc_build_kubeflow OUT_DIR: `go install
# github.com/kubeflow/training-operator/cmd/training-operator.v1@$TC_KUBEFLOW_VERSION` into
# OUT_DIR, outside any module: its own go.mod (no `replace` directives) decides every
# dependency, so this builds exactly its release's graph. The binary is renamed
# `training-operator`.

TC_KUBEFLOW_VERSION=v1.9.4
TC_KUBEFLOW_MODULE=github.com/kubeflow/training-operator

tc_build_kubeflow() {
  local out=$1
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  (cd / && GOBIN=$out tc_step training-operator go install -trimpath -ldflags "-s -w" \
    "$TC_KUBEFLOW_MODULE/cmd/training-operator.v1@$TC_KUBEFLOW_VERSION") || return 1
  mv "$out/training-operator.v1" "$out/training-operator"
}
