// PLACEHOLDER: replaced by the owner's version on merge
//! CRD schemas: structural check, defaulting, pruning, validation (placeholder: accepts all; pure).
use serde_json::Value;

#[derive(Clone, Debug)]
pub struct CompiledSchema {
    _schema: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub field: String,
    pub message: String,
    pub reason: String,
}

impl CompiledSchema {
    pub fn compile(open_api_v3_schema: &Value) -> Result<Self, Vec<Cause>> {
        Ok(Self {
            _schema: open_api_v3_schema.clone(),
        })
    }
    pub fn admit(&self, _obj: &mut Value, _old: Option<&Value>) -> Result<(), Vec<Cause>> {
        Ok(())
    }
}
