//! Where the schema check is in the document, spelled both ways: the API server's for unknown
//! fields, validation's for the rest. Pure.

use crate::crd::ReplicaType;

/// A place in the document, in the two spellings: the API server's for unknown fields
/// (`spec.tfReplicaSpecs.Worker.x`) and ours for the rest (`spec.tfReplicaSpecs[Worker].x`).
#[derive(Clone, Debug, Default)]
pub(super) struct At {
    pub(super) api: String,
    pub(super) ours: String,
}

impl At {
    pub(super) fn field(&self, name: &str) -> At {
        At {
            api: join(&self.api, name),
            ours: join(&self.ours, name),
        }
    }

    /// A key of a map (`additionalProperties`); replica types are named canonically, as
    /// validation names them.
    pub(super) fn key(&self, key: &str) -> At {
        let shown = match self.api.as_str() {
            "spec.tfReplicaSpecs" => ReplicaType::parse(key).map_or(key, |t| t.as_str()),
            _ => key,
        };
        At {
            api: join(&self.api, key),
            ours: format!("{}[{shown}]", self.ours),
        }
    }

    pub(super) fn index(&self, i: usize) -> At {
        At {
            api: format!("{}[{i}]", self.api),
            ours: format!("{}[{i}]", self.ours),
        }
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}
