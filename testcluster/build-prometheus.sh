# shellcheck shell=bash
# The build recipe of Prometheus and promtool, for the monitoring checks
# (testcluster/monitoring-e2e). Sourced; its text is part of the cache key (lib.sh's
# tc_recipe_key), so changing anything here (or the Go toolchain) rebuilds, into a
# cache directory of its own: a Prometheus pin never rebuilds the control plane, nor the reverse.
#
# tc_build_prometheus OUT_DIR: `go install` of github.com/prometheus/prometheus's cmd/prometheus
# and cmd/promtool at $TC_PROMETHEUS_VERSION into OUT_DIR, outside any module (its own go.mod
# decides every dependency; it has no `replace` directives). Tagged `remove_all_sd`: every
# service discovery but file and HTTP is left out (the tests scrape a static target), which
# drops the cloud SDKs and client-go from the build. No `builtinassets`: the web UI's assets
# are built by npm and not in the module; the HTTP API, all the tests use, needs none.

# Go module v0.316.0 is Prometheus 3.16.0 (the module's VERSION file).
TC_PROMETHEUS_VERSION=v0.316.0

tc_build_prometheus() {
  local out=$1 m=github.com/prometheus/prometheus
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  # The version stamps of Prometheus's own release build (.promu.yml), shown by --version and
  # in prometheus_build_info.
  local ld="-s -w -X github.com/prometheus/common/version.Version=3.16.0"
  ld+=" -X github.com/prometheus/common/version.Revision=$TC_PROMETHEUS_VERSION"
  (cd / && GOBIN=$out tc_step prometheus go install -trimpath -tags remove_all_sd -ldflags "$ld" \
    "$m/cmd/prometheus@$TC_PROMETHEUS_VERSION" "$m/cmd/promtool@$TC_PROMETHEUS_VERSION") || return 1
}
