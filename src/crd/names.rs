//! Names of a job's children, shared by validation (which checks they fit) and the
//! controller (which creates them). Pure.

use super::spec::ReplicaType;

/// `<job>-<t>-<i>`, the name of both the pod and the service of a replica.
pub fn child_name(job: &str, t: ReplicaType, index: i32) -> String {
    format!("{job}-{}-{index}", t.lower())
}
