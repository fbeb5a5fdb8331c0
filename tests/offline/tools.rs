//! The tools the chart's and the release workflow's tests run: helm 3, helm 4 and actionlint,
//! built from Go modules once per machine by `testcluster/tools` (the first test to ask waits
//! for the build, a few minutes; later runs find them cached). `TFJOB_HELM3`, `TFJOB_HELM4` and
//! `TFJOB_ACTIONLINT` name other binaries. Runs a program; no test of its own.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The directory `testcluster/tools` builds into.
fn built() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let out = Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/tools"))
            .output()
            .expect("run testcluster/tools (it builds helm and actionlint with Go)");
        assert!(
            out.status.success(),
            "testcluster/tools could not build helm and actionlint:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
    })
}

/// The binary NAME (helm3, helm4, actionlint): $TFJOB_<NAME> or the built one.
pub fn tool(name: &str) -> PathBuf {
    let var = format!("TFJOB_{}", name.to_uppercase());
    std::env::var_os(&var)
        .map(PathBuf::from)
        .unwrap_or_else(|| built().join(name))
}
