//! A kubeconfig pointing at the simulator (plain HTTP, no auth), for kubectl (writes a file).
use std::path::Path;

/// The kubeconfig YAML for a server at `url`.
pub fn kubeconfig_yaml(url: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: tfjob-sim\n  cluster:\n    server: {url}\n\
contexts:\n- name: tfjob-sim\n  context:\n    cluster: tfjob-sim\n    user: tfjob-sim\n    namespace: default\n\
current-context: tfjob-sim\nusers:\n- name: tfjob-sim\n  user: {{}}\npreferences: {{}}\n"
    )
}

/// Write the kubeconfig for `url` to `path`.
pub fn write_kubeconfig(path: &Path, url: &str) -> std::io::Result<()> {
    std::fs::write(path, kubeconfig_yaml(url))
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_the_server_and_current_context() {
        let y = super::kubeconfig_yaml("http://127.0.0.1:1234");
        assert!(y.contains("server: http://127.0.0.1:1234"));
        assert!(y.contains("current-context: tfjob-sim"));
    }
}
