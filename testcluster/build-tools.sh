# shellcheck shell=bash
# The build recipe of the tools CI runs on the chart and the release workflow: helm 3, helm 4
# and actionlint, each `go install`ed from its own module at a pinned version (outside this
# directory's module, so its go.mod and replaces do not apply; each builds against the
# requirements its own release pinned). Sourced by `tools`; its text is part of the cache key
# (tc_recipe_key in lib.sh), so changing a pin here (or the Go toolchain) rebuilds.
#
# tc_build_tools OUT_DIR: builds into OUT_DIR (must exist and be empty) helm3, helm4 and
# actionlint, stamped with their versions as their own Makefiles stamp a release build.
# Each step's time goes to the build log ("step NAME: N s"; tc_step is build.sh's).

TC_HELM3_VERSION=v3.22.0
TC_HELM4_VERSION=v4.3.1
TC_ACTIONLINT_VERSION=v1.7.12
# Only downloaded, nothing built: its ServiceMonitor CRD (example/prometheus-operator-crd/), for
# the chart's server-side dry runs (tests/e2e/chart.rs). v0.86 is refused by the proxy here.
TC_PROMETHEUS_OPERATOR_VERSION=v0.85.0
# Only downloaded too: Kubeflow's TFJob CRD (manifests/base/crds/), which the chart takes over
# on the real node (tests/node/helm.rs).
TC_TRAINING_OPERATOR_VERSION=v1.9.4

# tc_install_as OUT NAME PACKAGE@VERSION LDFLAGS: `go install` into a directory of its own (both
# helms are called `helm`), then moved to OUT/NAME.
tc_install_as() {
  local out=$1 name=$2 pkg=$3 ld=$4 dir
  dir=$(mktemp -d "$out/.$name.XXXXXX")
  (cd / && GOBIN=$dir go install -trimpath -ldflags "$ld" "$pkg") || return 1
  mv "$dir/$(basename "${pkg%@*}")" "$out/$name" && rmdir "$dir"
}

tc_build_tools() {
  local out=$1 ld3 ld4
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  # helm 3's Makefile also stamps the Kubernetes version its lint and `template` assume: its
  # client-go's minor, as 1.<minor> (v0.37.0 there: 1.37). helm 4 reads it from its build info.
  ld3="-s -w -X helm.sh/helm/v3/internal/version.version=$TC_HELM3_VERSION"
  ld3+=" -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  local pkg
  for pkg in lint/rules chartutil; do
    ld3+=" -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMinor=37"
  done
  ld4="-s -w -X helm.sh/helm/v4/internal/version.version=$TC_HELM4_VERSION"
  ld4+=" -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
  tc_step helm3 tc_install_as "$out" helm3 "helm.sh/helm/v3/cmd/helm@$TC_HELM3_VERSION" "$ld3" || return 1
  tc_step helm4 tc_install_as "$out" helm4 "helm.sh/helm/v4/cmd/helm@$TC_HELM4_VERSION" "$ld4" || return 1
  tc_step actionlint tc_install_as "$out" actionlint \
    "github.com/rhysd/actionlint/cmd/actionlint@$TC_ACTIONLINT_VERSION" \
    "-s -w -X github.com/rhysd/actionlint.version=${TC_ACTIONLINT_VERSION#v}" || return 1
  tc_step prometheus-operator tc_prometheus_operator_crds || return 1
  tc_step training-operator tc_kubeflow_tfjob_crd || return 1
}

# tc_prometheus_operator_crds: the directory of the Prometheus Operator's CRDs in the Go module
# cache (downloaded if missing).
tc_prometheus_operator_crds() {
  local d
  d=$(tc_module_dir "github.com/prometheus-operator/prometheus-operator@$TC_PROMETHEUS_OPERATOR_VERSION")/example/prometheus-operator-crd
  [[ -f $d/monitoring.coreos.com_servicemonitors.yaml ]] || {
    echo "go mod download github.com/prometheus-operator/prometheus-operator@$TC_PROMETHEUS_OPERATOR_VERSION failed" >&2
    return 1
  }
  echo "$d"
}

# tc_kubeflow_tfjob_crd: Kubeflow's TFJob CRD file in the Go module cache (downloaded if missing).
tc_kubeflow_tfjob_crd() {
  local f
  f=$(tc_module_dir "github.com/kubeflow/training-operator@$TC_TRAINING_OPERATOR_VERSION")/manifests/base/crds/kubeflow.org_tfjobs.yaml
  [[ -f $f ]] || {
    echo "go mod download github.com/kubeflow/training-operator@$TC_TRAINING_OPERATOR_VERSION failed" >&2
    return 1
  }
  echo "$f"
}
