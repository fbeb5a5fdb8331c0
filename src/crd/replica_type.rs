//! The five TensorFlow replica types and their spellings (the `tfReplicaSpecs` keys, the
//! lower-case form of names, labels and TF_CONFIG). Pure.

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The five TensorFlow replica types, in Kubeflow's canonical spelling.
#[derive(
    Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, JsonSchema,
)]
pub enum ReplicaType {
    Chief,
    Master,
    #[serde(rename = "PS")]
    Ps,
    Worker,
    Evaluator,
}

impl ReplicaType {
    pub const ALL: [ReplicaType; 5] = [
        Self::Chief,
        Self::Master,
        Self::Ps,
        Self::Worker,
        Self::Evaluator,
    ];

    /// Kubeflow's canonical key: `Chief`, `Master`, `PS`, `Worker`, `Evaluator`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chief => "Chief",
            Self::Master => "Master",
            Self::Ps => "PS",
            Self::Worker => "Worker",
            Self::Evaluator => "Evaluator",
        }
    }

    /// The lower-cased form used in child names, labels and TF_CONFIG.
    pub fn lower(self) -> &'static str {
        match self {
            Self::Chief => "chief",
            Self::Master => "master",
            Self::Ps => "ps",
            Self::Worker => "worker",
            Self::Evaluator => "evaluator",
        }
    }

    /// Case-insensitive parse of a `tfReplicaSpecs` key (`worker`, `PS`, `MASTER`...).
    pub fn parse(key: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(key))
    }

    /// Chief and Master are the same role under two names.
    pub fn is_chief(self) -> bool {
        matches!(self, Self::Chief | Self::Master)
    }
}

impl fmt::Display for ReplicaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
