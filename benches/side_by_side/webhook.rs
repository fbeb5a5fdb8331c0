//! What Kubeflow's training-operator needs to start out of a cluster. Its webhook's certificate
//! rotator (open-policy-agent/cert-controller, set up in its pkg/cert/cert.go) waits for:
//! - the Secret `training-operator-webhook-cert` in its namespace (`MY_POD_NAMESPACE`), holding
//!   a CA and a serving certificate it accepts (else it writes new ones into the Secret);
//! - the ValidatingWebhookConfiguration `validator.training-operator.kubeflow.org`, into
//!   which it injects the CA (created here with no webhooks: the API server never calls it,
//!   so TFJob creates cost the same in every namespace);
//! - `tls.crt` in `/tmp/k8s-webhook-server/serving-certs`, a directory its code fixes (in a
//!   cluster, the Secret is mounted there), from which its webhook server also loads its pair.
//!
//! The certificates are made here beforehand, as valid as the rotator's own (so it writes
//! nothing and starts at once), and that directory is given to it by an overlay on `/tmp` in a
//! mount namespace of its own (as `testcluster/up` gives Kueue its fixed path under `/etc`): the
//! machine's `/tmp` is never written, and several runs never share it. I/O (openssl, kubectl).

use std::path::Path;
use std::process::Command;

use anyhow::{Context as _, bail};

use super::cluster::Cluster;

const SECRET: &str = "training-operator-webhook-cert";
const WEBHOOK_CONFIGURATION: &str = "validator.training-operator.kubeflow.org";
/// The rotator's CA name (its certificate must name it) and its serving certificate's DNS
/// name: `<--webhook-service-name, default training-operator>.<namespace>.svc`.
const CA_NAME: &str = "training-operator-ca";
const SERVICE: &str = "training-operator";
/// Where its code reads the pair, under the overlay's upper directory.
const CERT_DIR: &str = "tmp-upper/k8s-webhook-server/serving-certs";

/// Makes the certificates under `state`, the Secret in `namespace` and the (cluster-wide)
/// webhook configuration.
pub fn prepare(cluster: &Cluster, namespace: &str, state: &Path) -> anyhow::Result<()> {
    let dir = state.join(CERT_DIR);
    std::fs::create_dir_all(&dir)?;
    std::fs::create_dir_all(state.join("tmp-work"))?;
    let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
    // RSA keys in PKCS#1 ("RSA PRIVATE KEY"): the rotator parses the CA key only that way.
    openssl(&["genrsa", "-traditional", "-out", &file("ca.key"), "2048"])?;
    openssl(&[
        "req",
        "-x509",
        "-new",
        "-key",
        &file("ca.key"),
        "-days",
        "3650",
        "-subj",
        &format!("/O=training-operator/CN={CA_NAME}"),
        "-addext",
        &format!("subjectAltName=DNS:{CA_NAME}"),
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,digitalSignature,keyEncipherment,keyCertSign",
        "-out",
        &file("ca.crt"),
    ])?;
    openssl(&["genrsa", "-traditional", "-out", &file("tls.key"), "2048"])?;
    let dns = format!("{SERVICE}.{namespace}.svc");
    let csr = state.join("tls.csr").to_string_lossy().into_owned();
    openssl(&[
        "req",
        "-new",
        "-key",
        &file("tls.key"),
        "-subj",
        &format!("/CN={dns}"),
        "-out",
        &csr,
    ])?;
    let ext = state.join("tls.ext");
    std::fs::write(
        &ext,
        format!(
            "subjectAltName=DNS:{dns}\nextendedKeyUsage=serverAuth\n\
             keyUsage=critical,digitalSignature,keyEncipherment\n"
        ),
    )?;
    // One year: the rotator renews what expires within 90 days.
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &file("ca.crt"),
        "-CAkey",
        &file("ca.key"),
        "-CAcreateserial",
        "-days",
        "365",
        "-extfile",
        &ext.to_string_lossy(),
        "-out",
        &file("tls.crt"),
    ])?;
    let from = |name: &str| format!("--from-file={}", file(name));
    cluster.kubectl(
        &[
            "-n",
            namespace,
            "create",
            "secret",
            "generic",
            SECRET,
            &from("ca.crt"),
            &from("ca.key"),
            &from("tls.crt"),
            &from("tls.key"),
        ],
        None,
    )?;
    let configuration = format!(
        "apiVersion: admissionregistration.k8s.io/v1\n\
         kind: ValidatingWebhookConfiguration\n\
         metadata:\n  name: {WEBHOOK_CONFIGURATION}\n\
         webhooks: []\n"
    );
    cluster.kubectl(&["apply", "-f", "-"], Some(&configuration))?;
    Ok(())
}

/// The command that runs `bin` with `<state>/tmp-upper` over `/tmp`, in a mount namespace of
/// its own (as root a plain one, else a user namespace mapped to root as well). `unshare`
/// and `sh` exec, so the process started is Kubeflow's own (its pid is what `/proc` reads).
pub fn command(state: &Path, bin: &Path) -> anyhow::Result<Command> {
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private"]);
    if !is_root()? {
        c.args(["--user", "--map-root-user"]);
    }
    c.args([
        "sh",
        "-c",
        r#"mount -t overlay overlay -o "lowerdir=/tmp,upperdir=$1,workdir=$2" /tmp ||
             { echo "side-by-side: cannot overlay /tmp (needs mount namespaces and overlayfs)"; exit 1; }
           shift 2; exec "$@""#,
        "sh",
    ]);
    c.arg(state.join("tmp-upper"))
        .arg(state.join("tmp-work"))
        .arg(bin);
    Ok(c)
}

fn is_root() -> anyhow::Result<bool> {
    let out = Command::new("id")
        .arg("-u")
        .output()
        .context("running id -u")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim() == "0")
}

fn openssl(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .context("running openssl")?;
    if !out.status.success() {
        bail!(
            "openssl {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
