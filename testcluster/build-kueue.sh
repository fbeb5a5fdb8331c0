# shellcheck shell=bash
# The build recipe of the test cluster's Kueue. Sourced by `up`. Kept apart from build.sh on
# purpose: Kueue has its own module graph (k8s.io v0.36 libraries) and its own cache key (a
# hash of this file and `go version`: lib.sh's tc_recipe_key), so pinning another Kueue
# never rebuilds the control plane's binaries, and a change to build.sh never rebuilds Kueue.
#
# tc_build_kueue OUT_DIR: `go install sigs.k8s.io/kueue/cmd/kueue@$TC_KUEUE_VERSION` into
# OUT_DIR, outside any module: Kueue's own go.mod decides every dependency (it has no
# `replace` directives, so `go install pkg@version` builds exactly its release graph).
# `up` reads Kueue's CRDs from the same module in the Go module cache.

TC_KUEUE_VERSION=v0.19.2

tc_build_kueue() {
  local out=$1
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-modcacherw -buildvcs=false"
  # The version stamp its Makefile sets (else the log says v0.0.0-main); no commit is stamped.
  local ld="-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$TC_KUEUE_VERSION"
  (cd / && GOBIN=$out tc_step kueue go install -trimpath -ldflags "$ld" \
    "sigs.k8s.io/kueue/cmd/kueue@$TC_KUEUE_VERSION") || return 1
}
