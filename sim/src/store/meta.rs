//! Object metadata helpers: timestamps, uids, generated names, label access (pure but for the
//! clock and a process-wide pseudo-random counter).
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

static RNG: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);

/// SplitMix64 over a shared counter: unique, well-spread values without a rand dependency.
pub fn random_u64() -> u64 {
    let mut z = RNG.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed);
    z = z.wrapping_add(jiff::Timestamp::now().as_nanosecond() as u64 & 0xffff);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// An RFC 4122 version-4 style uid.
pub fn new_uid() -> String {
    let (a, b) = (random_u64(), random_u64());
    let h = format!("{a:016x}{b:016x}");
    format!(
        "{}-{}-4{}-a{}-{}",
        &h[0..8],
        &h[8..12],
        &h[13..16],
        &h[17..20],
        &h[20..32]
    )
}

/// The 5-character suffix the real server appends to `generateName` (same alphabet).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
            r /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

/// `metav1.Time` format (second precision).
pub fn format_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// `metav1.MicroTime` format.
pub fn format_micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

pub fn now_string() -> String {
    format_time(jiff::Timestamp::now())
}

pub fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

pub fn namespace(obj: &Value) -> &str {
    obj["metadata"]["namespace"].as_str().unwrap_or("")
}

pub fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or("")
}

pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    obj["metadata"]["labels"].as_object()
}

pub fn resource_version(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap_or("")
}

pub fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    obj["metadata"]["deletionTimestamp"].is_string()
}

/// Owner uids from `metadata.ownerReferences`.
pub fn owner_uids(obj: &Value) -> Vec<&str> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|a| a.iter().filter_map(|r| r["uid"].as_str()).collect())
        .unwrap_or_default()
}

/// The object without metadata and status: what `generation` tracks.
pub fn spec_part(obj: &Value) -> Value {
    let mut v = obj.clone();
    if let Some(m) = v.as_object_mut() {
        for k in ["metadata", "status", "apiVersion", "kind"] {
            m.remove(k);
        }
    }
    v
}

/// Metadata-level equality ignoring the fields the server owns (for no-op update detection).
pub fn same_content(a: &Value, b: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v["metadata"].as_object_mut() {
            m.remove("resourceVersion");
            m.remove("managedFields");
        }
        v
    };
    strip(a) == strip(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_and_suffixes_are_well_formed_and_distinct() {
        let (a, b) = (new_uid(), new_uid());
        assert_ne!(a, b);
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
        let s = name_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }

    #[test]
    fn spec_part_ignores_metadata_and_status() {
        let a = serde_json::json!({"metadata": {"labels": {"a": "1"}}, "spec": {"x": 1}, "status": {"y": 1}});
        let b = serde_json::json!({"metadata": {}, "spec": {"x": 1}, "status": {"y": 2}});
        assert_eq!(spec_part(&a), spec_part(&b));
    }
}
