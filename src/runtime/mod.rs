//! Our forks of kube-runtime pieces, each saying in its doc why it exists: what is kept of a
//! child (`cache`) and where, with the controller's own creates (`store`), the last state of pods a
//! disruption deleted (`departed`), how a watch lists (`listing`), whether the TFJob watch has listed yet
//! (`first_list`), what watch events mean (`triggers`) and where they go (`watches`), the PodGroup
//! caches (`podgroups`), the event recorder (`recorder`) and leader election (`leader`).
//! Below the controller: they know TFJobs and labels (`crd`), never the pass.

pub mod cache;
pub mod departed;
pub mod first_list;
pub mod leader;
pub mod listing;
pub mod podgroups;
pub mod publisher;
pub mod recorder;
pub mod store;
pub mod triggers;
pub mod watches;
