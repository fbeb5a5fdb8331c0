//! The real-node tier: real containers on a real kubelet (`testcluster/node-e2e` starts it,
//! builds and imports the images, and runs this binary one test at a time).
//!
//! - `tf`: real TensorFlow 2.21 processes read the operator's `TF_CONFIG` and train across pods
//!   through its headless Services; each test asserts what TensorFlow itself reports (the
//!   `TFJOB-TEST {json}` lines of `tests/node/tf/train.py`, read with `kubectl logs`), not only
//!   the job's phase. The script reaches the pods through a ConfigMap (`scripts`), so the image
//!   holds only Debian, Python and TensorFlow.
//! - `in_cluster`: the operator as its users run it, `kubectl apply -k config/default` with the
//!   image built from the Dockerfile.
//! - `image`: that image is the Dockerfile's runtime stage; `config/` names it.
//! - `helm`: the Helm chart with that image: taking over from Kubeflow, upgrades, a rollback,
//!   uninstalling and installing again, with jobs running through each.
//! - `killed`: a worker killed mid-training under Never, Always and ExitCode (today's outcome;
//!   OnFailure's in-place restarts are in `recovery`).
//! - `recovery`: whole-job restart (`tfjob-operator.dev/restart-scope: Job`) with real
//!   TensorFlow checkpointing and resuming, against today's outcome; a job stuck pulling its
//!   image, failed by its startup deadline.
//! - `kueue`: a real TensorFlow job queued through Kueue v0.19.2, with the operator as Kueue's
//!   external framework (`--kueue`): admitted, trained, succeeded, its Workload finished.
//! - `policies`: an eviction restarting a synchronous job without charging it, a failure rule
//!   failing a job on its PS's exit code, success waiting for the evaluator, `cleanPodPolicy:
//!   None` keeping the pods at the backoff limit.
//! - `kubelet`: what the real kubelet writes for deleted, killed, OOM-killed and failed
//!   containers (what the simulator should match).
//!
//! Without the real node (`TFJOB_NODE_E2E` unset) every test says it is skipped and returns.

#[path = "node/cluster.rs"]
mod cluster;
#[path = "node/helm.rs"]
mod helm;
#[path = "node/image.rs"]
mod image;
#[path = "node/in_cluster.rs"]
mod in_cluster;
#[path = "node/killed.rs"]
mod killed;
#[path = "node/kubelet.rs"]
mod kubelet;
#[path = "node/kueue.rs"]
mod kueue;
#[path = "node/policies.rs"]
mod policies;
#[path = "node/recovery.rs"]
mod recovery;
#[path = "node/tf.rs"]
mod tf;
