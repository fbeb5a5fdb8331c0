//! One shared copy of each namespace and job name the children carry: 50k pods of 10k jobs
//! in a few namespaces hold 10k job names and a few namespace names, not 100k strings each.
//! A process-wide set behind a mutex; pure in effect (the same text in, an equal `Arc` out).

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

struct Interner {
    names: HashSet<Arc<str>>,
    /// The set's size after the last sweep: a sweep runs when it has doubled since.
    swept_at: usize,
}

static NAMES: Mutex<Option<Interner>> = Mutex::new(None);

/// The shared copy of `text`.
pub fn intern(text: &str) -> Arc<str> {
    let mut guard = NAMES.lock().unwrap_or_else(|e| e.into_inner());
    let interner = guard.get_or_insert_with(|| Interner {
        names: HashSet::new(),
        swept_at: 0,
    });
    if let Some(shared) = interner.names.get(text) {
        return shared.clone();
    }
    if interner.names.len() >= 2 * interner.swept_at.max(512) {
        // Names nothing holds any more (their jobs are gone) are dropped: the set follows
        // the live jobs, amortised over the inserts.
        interner.names.retain(|name| Arc::strong_count(name) > 1);
        interner.swept_at = interner.names.len();
    }
    let shared: Arc<str> = Arc::from(text);
    interner.names.insert(shared.clone());
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_texts_share_one_copy() {
        let a = intern("intern-test-a");
        let b = intern(&String::from("intern-test-a"));
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &intern("intern-test-b")));
    }

    #[test]
    fn names_nothing_holds_are_swept() {
        for i in 0..5000 {
            drop(intern(&format!("intern-sweep-{i}")));
        }
        let guard = NAMES.lock().unwrap();
        let left = guard.as_ref().map_or(0, |i| i.names.len());
        assert!(left < 2048, "{left} names kept");
    }
}
