//! The resource registry: built-in kinds and the ones CRDs add (pure data, no I/O).
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::schema::CompiledSchema;

/// Where objects of a resource are stored: group + plural (all versions share one store).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceId {
    pub group: String,
    pub plural: String,
}

impl ResourceId {
    pub fn new(group: &str, plural: &str) -> Self {
        Self {
            group: group.into(),
            plural: plural.into(),
        }
    }
}

/// How objects read or written through this resource are converted to/from the stored form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Conversion {
    None,
    /// events.k8s.io/v1 Event stored as core/v1 Event.
    EventsV1,
}

/// One `additionalPrinterColumns` entry of a CRD version, kept for `kubectl get`'s tables.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub priority: i32,
    pub format: Option<String>,
    pub description: Option<String>,
}

impl PrinterColumn {
    /// Reads one entry of a CRD version's `additionalPrinterColumns` (type defaults to string).
    pub fn from_crd_column(c: &Value) -> Self {
        PrinterColumn {
            name: c["name"].as_str().unwrap_or("").into(),
            type_: c["type"].as_str().unwrap_or("string").into(),
            json_path: c["jsonPath"].as_str().unwrap_or("").into(),
            priority: c["priority"]
                .as_i64()
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            format: c["format"].as_str().map(String::from),
            description: c["description"].as_str().map(String::from),
        }
    }
}

/// One served resource (a group, its versions and how it behaves).
#[derive(Clone, Debug)]
pub struct ResourceType {
    pub group: String,
    pub versions: Vec<String>,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub has_status: bool,
    /// Further subresources served (`log`, `eviction`, ...), for discovery.
    pub subresources: Vec<String>,
    /// Built-in kind (strategic merge allowed) rather than a custom resource.
    pub builtin: bool,
    pub has_generation: bool,
    /// PUT without metadata.resourceVersion is refused (true for custom resources).
    pub requires_rv_on_update: bool,
    pub storage: ResourceId,
    pub conversion: Conversion,
    /// Printer columns per version (custom resources).
    pub columns: BTreeMap<String, Vec<PrinterColumn>>,
    /// Compiled openAPIV3Schema per version (custom resources).
    pub schemas: BTreeMap<String, Arc<CompiledSchema>>,
    /// The warning every request to a deprecated version gets, by version (custom resources).
    pub deprecations: BTreeMap<String, String>,
}

impl ResourceType {
    pub fn id(&self) -> ResourceId {
        ResourceId::new(&self.group, &self.plural)
    }
    pub fn api_version(&self, version: &str) -> String {
        if self.group.is_empty() {
            version.to_string()
        } else {
            format!("{}/{version}", self.group)
        }
    }
    pub fn preferred_version(&self) -> &str {
        self.versions.first().map(String::as_str).unwrap_or("v1")
    }
    fn builtin(group: &str, plural: &str, kind: &str, namespaced: bool, short: &[&str]) -> Self {
        Self {
            group: group.into(),
            versions: vec!["v1".into()],
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            namespaced,
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: Vec::new(),
            has_status: false,
            subresources: Vec::new(),
            builtin: true,
            has_generation: false,
            requires_rv_on_update: false,
            storage: ResourceId::new(group, plural),
            conversion: Conversion::None,
            columns: BTreeMap::new(),
            schemas: BTreeMap::new(),
            deprecations: BTreeMap::new(),
        }
    }
}

/// The resources a fresh server serves.
pub fn builtins() -> Vec<ResourceType> {
    let mut pods = ResourceType::builtin("", "pods", "Pod", true, &["po"]);
    pods.has_status = true;
    pods.has_generation = true;
    pods.categories = vec!["all".into()];
    pods.subresources = vec!["status".into(), "log".into(), "eviction".into()];
    let mut services = ResourceType::builtin("", "services", "Service", true, &["svc"]);
    services.has_status = true;
    services.categories = vec!["all".into()];
    services.subresources = vec!["status".into()];
    let mut namespaces = ResourceType::builtin("", "namespaces", "Namespace", false, &["ns"]);
    namespaces.has_status = true;
    namespaces.subresources = vec!["status".into(), "finalize".into()];
    let mut nodes = ResourceType::builtin("", "nodes", "Node", false, &["no"]);
    nodes.has_status = true;
    nodes.subresources = vec!["status".into()];
    let mut quotas = ResourceType::builtin("", "resourcequotas", "ResourceQuota", true, &["quota"]);
    quotas.has_status = true;
    quotas.subresources = vec!["status".into()];
    let mut events_v1 = ResourceType::builtin("events.k8s.io", "events", "Event", true, &["ev"]);
    events_v1.storage = ResourceId::new("", "events");
    events_v1.conversion = Conversion::EventsV1;
    let mut crds = ResourceType::builtin(
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        false,
        &["crd", "crds"],
    );
    crds.has_status = true;
    crds.has_generation = true;
    crds.subresources = vec!["status".into()];
    crds.categories = vec!["api-extensions".into()];
    vec![
        pods,
        services,
        ResourceType::builtin("", "events", "Event", true, &["ev"]),
        namespaces,
        ResourceType::builtin("", "configmaps", "ConfigMap", true, &["cm"]),
        ResourceType::builtin("", "serviceaccounts", "ServiceAccount", true, &["sa"]),
        nodes,
        quotas,
        events_v1,
        ResourceType::builtin("coordination.k8s.io", "leases", "Lease", true, &[]),
        crds,
    ]
}

/// Served resources by (group, plural).
#[derive(Clone, Debug, Default)]
pub struct Registry {
    types: BTreeMap<ResourceId, ResourceType>,
}

impl Registry {
    pub fn with_builtins() -> Self {
        let mut r = Self::default();
        for t in builtins() {
            r.insert(t);
        }
        r
    }
    pub fn insert(&mut self, t: ResourceType) {
        self.types.insert(t.id(), t);
    }
    pub fn remove(&mut self, id: &ResourceId) -> Option<ResourceType> {
        self.types.remove(id)
    }
    pub fn get(&self, id: &ResourceId) -> Option<&ResourceType> {
        self.types.get(id)
    }
    /// Where each served resource is stored.
    pub fn storages(&self) -> impl Iterator<Item = &ResourceId> {
        self.types.values().map(|t| &t.storage)
    }
    /// The resource served at `/apis/<group>/<version>/<plural>`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<&ResourceType> {
        self.types
            .get(&ResourceId::new(group, plural))
            .filter(|t| t.versions.iter().any(|v| v == version))
    }
    /// A resource by group and kind (for owner references, tests).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&ResourceType> {
        self.types
            .values()
            .find(|t| t.group == group && t.kind == kind)
    }
    pub fn all(&self) -> impl Iterator<Item = &ResourceType> {
        self.types.values()
    }
    /// The resources served at `group`/`version`.
    pub fn served<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a ResourceType> {
        self.all()
            .filter(move |t| t.group == group && t.versions.iter().any(|v| v == version))
    }
    /// Group name → versions served (preferred first), non-core groups only.
    pub fn groups(&self) -> BTreeMap<String, Vec<String>> {
        let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for t in self.all().filter(|t| !t.group.is_empty()) {
            let vs = out.entry(t.group.clone()).or_default();
            for v in &t.versions {
                if !vs.contains(v) {
                    vs.push(v.clone());
                }
            }
        }
        out
    }
}
