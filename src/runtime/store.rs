//! A watch's children, filed by the job whose name they carry, and the children this
//! controller has just created, held until the watch has shown them or shown that they are
//! gone. In memory only, fed by watch events and by the controller's own creates; no I/O.
//!
//! Ours rather than kube-runtime's reflector `Store`, which keeps every object in one flat
//! map: a pass would scan (and copy) every pod of the scope to find its own.
//!
//! Creates are written through (`created`): the next pass sees a child before the watch shows
//! it (planning without it would create it twice, or take it for a child that vanished). Such
//! an *assumed* child stays until the watch settles it, whether or not the watch was up
//! meanwhile:
//! - an event about the same object (same uid): the watch has it now;
//! - an event of a later resourceVersion that did not show it first (resourceVersions of one
//!   resource are comparable, KEP-5504): it was deleted before the watch could tell, so it
//!   goes and is reported gone, which wakes its job;
//! - a re-list requested after the create that does not list it: gone likewise (the tracker
//!   reports it, as it was in the cache when the re-list began; the child watches list with
//!   kube's default `MostRecent`, a consistent read, never an older cached list). A re-list
//!   already under way when the create answered may predate it, so the child is carried over
//!   (the events after that list will show it) unless the list holds a later resourceVersion;
//! - `ASSUMED_TTL` without a word from the watch.
//!
//! Before this, the controller laid its creates over the cache until the cache held their
//! names: a child created and deleted while its watch was down never showed, so it was
//! planned on for a minute and its job, never woken, recreated nothing.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;
use std::time::Duration;

use kube::runtime::watcher::Event;
use tokio::time::Instant;

use crate::child::Identity;

/// How long a created child is assumed without any word of it from the watch.
pub const ASSUMED_TTL: Duration = Duration::from_secs(60);

/// (namespace, name): one child.
type Place = (String, String);

/// A watch's objects, grouped by the job whose name they carry, so a pass reads its own
/// children without going through everybody's. Fed by the watch's events (`update`) and the
/// controller's creates (`created`); read by passes. Objects without a job label are kept
/// under the empty job name.
pub struct ChildCache<K> {
    state: Arc<RwLock<State<K>>>,
}

impl<K> Clone for ChildCache<K> {
    fn clone(&self) -> Self {
        Self {
            state: self.state.clone(),
        }
    }
}

struct State<K> {
    current: Filing<K>,
    /// A (re-)list under way: what it listed so far, in place of `current` at its end (the
    /// old content serves reads until then, as in kube's reflector).
    listing: Option<Filing<K>>,
    /// The newest resourceVersion the list under way has shown.
    listed_version: Option<u64>,
    /// How many (re-)lists have begun.
    lists: u64,
    /// Children this controller created that the watch has not settled yet.
    assumed: HashMap<Place, Assumed>,
}

/// A child created by this controller, as the create's answer had it.
struct Assumed {
    uid: Option<String>,
    version: Option<u64>,
    /// `State::lists` when it was created: a re-list numbered above began after it.
    lists: u64,
    at: Instant,
}

/// Objects filed by job. Both tables hold the objects themselves (`Arc`s), found by hashing
/// the object's own namespace and name: no copy of a name is kept as a key, which was most of
/// a cached child's cost (~440 bytes a child at 1000 jobs x 2 workers, heaptrack).
struct Filing<K> {
    /// Every object, by (namespace, name).
    by_place: HashTable<Arc<K>>,
    /// Each job's objects, by (namespace, job label).
    by_job: HashTable<Bucket<K>>,
    hasher: RandomState,
}

/// The objects of one job, by name.
struct Bucket<K> {
    namespace: Box<str>,
    job: Box<str>,
    children: HashTable<Arc<K>>,
}

impl<K> Default for Filing<K> {
    fn default() -> Self {
        Self {
            by_place: HashTable::new(),
            by_job: HashTable::new(),
            hasher: RandomState::new(),
        }
    }
}

impl<K> Default for ChildCache<K> {
    fn default() -> Self {
        Self {
            state: Arc::new(RwLock::new(State {
                current: Filing::default(),
                listing: None,
                listed_version: None,
                lists: 0,
                assumed: HashMap::new(),
            })),
        }
    }
}

/// ((namespace, name), job name) of a child.
fn place<K: Identity>(obj: &K) -> (Place, String) {
    let ns = obj.namespace().unwrap_or_default().to_string();
    ((ns, obj.name().to_string()), obj.job_label().to_string())
}

/// The resourceVersion as a number, when it is one (KEP-5504: digits, no leading zero).
fn version<K: Identity>(obj: &K) -> Option<u64> {
    let rv = obj.resource_version()?;
    (!rv.starts_with('0')).then(|| rv.parse().ok()).flatten()
}

/// `a` is strictly older than `b` (false when either is not comparable).
fn older(a: Option<u64>, b: Option<u64>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a < b)
}

/// A place as the tables look it up.
fn pair((ns, name): &Place) -> (&str, &str) {
    (ns, name)
}

impl<K> Bucket<K> {
    fn is(&self, ns: &str, job: &str) -> bool {
        &*self.namespace == ns && &*self.job == job
    }
}

/// Files `obj` in `table` under `hash` (of its namespace and name), replacing the object of its
/// place if there is one.
fn put<K: Identity>(
    table: &mut HashTable<Arc<K>>,
    hash: u64,
    obj: Arc<K>,
    rehash: impl Fn(&Arc<K>) -> u64,
) {
    let place = (obj.namespace().unwrap_or_default(), obj.name());
    match table.entry(hash, |o| at(&**o, place), rehash) {
        Entry::Occupied(mut e) => *e.get_mut() = obj,
        Entry::Vacant(e) => drop(e.insert(obj)),
    }
}

/// Whether `obj` is filed at (namespace, name).
fn at<K: Identity>(obj: &K, (ns, name): (&str, &str)) -> bool {
    obj.name() == name && obj.namespace().unwrap_or_default() == ns
}

impl<K: Identity> Filing<K> {
    /// The hash of a (namespace, name) or (namespace, job) pair: both tables hash the same way.
    fn hash(&self, pair: (&str, &str)) -> u64 {
        self.hasher.hash_one(pair)
    }

    fn hash_of(&self, obj: &K) -> u64 {
        self.hash((obj.namespace().unwrap_or_default(), obj.name()))
    }

    fn bucket(&self, ns: &str, job: &str) -> Option<&Bucket<K>> {
        let hash = self.hash((ns, job));
        self.by_job.find(hash, |b| b.is(ns, job))
    }

    fn file(&mut self, obj: Arc<K>) {
        let (ns, name) = (obj.namespace().unwrap_or_default(), obj.name());
        if let Some(old) = self.get((ns, name))
            && old.job_label() != obj.job_label()
        {
            let old = old.clone();
            self.unfile(&old);
        }
        let hash = self.hash((ns, name));
        let hasher = &self.hasher;
        let rehash = |o: &Arc<K>| hasher.hash_one((o.namespace().unwrap_or_default(), o.name()));
        put(&mut self.by_place, hash, obj.clone(), rehash);
        let job = obj.job_label();
        let job_hash = self.hash((ns, job));
        let rehash_bucket = |b: &Bucket<K>| hasher.hash_one((&*b.namespace, &*b.job));
        let bucket = self
            .by_job
            .entry(job_hash, |b| b.is(ns, job), rehash_bucket)
            .or_insert_with(|| Bucket {
                namespace: ns.into(),
                job: job.into(),
                children: HashTable::new(),
            })
            .into_mut();
        put(&mut bucket.children, hash, obj, rehash);
    }

    fn get(&self, place: (&str, &str)) -> Option<&Arc<K>> {
        self.by_place.find(self.hash(place), |o| at(&**o, place))
    }

    fn remove(&mut self, (ns, name): (&str, &str)) -> Option<Arc<K>> {
        let hash = self.hash((ns, name));
        let found = self
            .by_place
            .find_entry(hash, |o| at(&**o, (ns, name)))
            .ok()?;
        let (obj, _) = found.remove();
        self.unfile(&obj);
        Some(obj)
    }

    /// Takes `obj` out of its job's bucket (the bucket goes when empty).
    fn unfile(&mut self, obj: &K) {
        let ns = obj.namespace().unwrap_or_default();
        let (name, job) = (obj.name(), obj.job_label());
        let hash = self.hash_of(obj);
        let job_hash = self.hash((ns, job));
        let Ok(mut bucket) = self.by_job.find_entry(job_hash, |b| b.is(ns, job)) else {
            return;
        };
        if let Ok(child) = bucket
            .get_mut()
            .children
            .find_entry(hash, |o| at(&**o, (ns, name)))
        {
            child.remove();
        }
        if bucket.get().children.is_empty() {
            bucket.remove();
        }
    }
}

impl<K: Identity> State<K> {
    /// Whether a watch event about `obj` is about an older object than the assumed child of
    /// that name (an update or deletion queued in the watch when ours was created): it must
    /// not replace ours. An event about our own child settles it.
    fn predates_assumed(&mut self, at: &Place, obj: &K, deleted: bool) -> bool {
        let Some(assumed) = self.assumed.get(at) else {
            return false;
        };
        let uid = obj.uid();
        if uid.is_some() && uid == assumed.uid.as_deref() {
            self.assumed.remove(at);
            return false;
        }
        let stale = match (version(obj), assumed.version) {
            (Some(event), Some(ours)) => event < ours,
            // Not comparable: a deletion of another uid is the old object's.
            _ => deleted,
        };
        if !stale {
            self.assumed.remove(at);
        }
        stale
    }

    /// Assumed children the watch has passed (`seen`) without showing, or kept past their
    /// TTL: they are gone from the cache, and returned to be reported.
    fn settle(&mut self, seen: Option<u64>, now: Instant) -> Vec<Arc<K>> {
        let settled: Vec<Place> = self
            .assumed
            .iter()
            .filter(|(_, a)| older(a.version, seen) || a.at + ASSUMED_TTL <= now)
            .map(|(at, _)| at.clone())
            .collect();
        settled
            .into_iter()
            .filter_map(|at| {
                self.assumed.remove(&at);
                self.current.remove(pair(&at))
            })
            .collect()
    }

    /// The end of a (re-)list: its content replaces the cache. Assumed children it lists are
    /// settled; those it lacks are gone if the list began after their create (the tracker
    /// reports them) or holds a later resourceVersion (returned to be reported), else carried
    /// over.
    fn list_done(&mut self) -> Vec<Arc<K>> {
        let Some(mut listing) = self.listing.take() else {
            return Vec::new();
        };
        let newest = self.listed_version.take();
        let mut gone = Vec::new();
        for (at, a) in std::mem::take(&mut self.assumed) {
            let Some(ours) = self.current.get(pair(&at)).cloned() else {
                continue;
            };
            let listed = listing
                .get(pair(&at))
                .map(|o| (o.uid().map(str::to_string), version(&**o)));
            // Created while this list was under way: the list may predate it.
            let during = a.lists == self.lists;
            let keep = match &listed {
                Some((uid, v)) => *uid != a.uid && during && !older(a.version, *v),
                None => during && !older(a.version, newest),
            };
            if keep {
                listing.file(ours);
                self.assumed.insert(at, a);
            } else if listed.is_none() && during {
                // Not in the tracker's snapshot of the cache at the list's start.
                gone.push(ours);
            }
        }
        self.current = listing;
        gone
    }
}

impl<K: Identity> ChildCache<K> {
    fn read(&self) -> RwLockReadGuard<'_, State<K>> {
        // A panic while holding the lock cannot leave the maps half-updated in a way that
        // matters more than losing the cache; keep serving.
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State<K>> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies one watch event, received at `now`, as kube's reflector does to its store.
    /// Returns the assumed children it showed to be gone without naming them (to be
    /// reported as gone).
    pub fn update(&self, event: &Event<K>, now: Instant) -> Vec<Arc<K>>
    where
        K: Clone,
    {
        let mut state = self.write();
        match event {
            Event::Apply(obj) | Event::Delete(obj) => {
                let deleted = matches!(event, Event::Delete(_));
                let (at, _) = place(obj);
                if !state.predates_assumed(&at, obj, deleted) {
                    match deleted {
                        true => drop(state.current.remove(pair(&at))),
                        false => state.current.file(Arc::new(obj.clone())),
                    }
                }
                state.settle(version(obj), now)
            }
            Event::Init => {
                state.lists += 1;
                state.listing = Some(Filing::default());
                state.listed_version = None;
                Vec::new()
            }
            Event::InitApply(obj) => {
                let seen = version(obj);
                let state = &mut *state;
                if let Some(listing) = &mut state.listing {
                    listing.file(Arc::new(obj.clone()));
                    state.listed_version = state.listed_version.max(seen);
                }
                Vec::new()
            }
            Event::InitDone => {
                let mut gone = state.list_done();
                gone.extend(state.settle(None, now));
                gone
            }
        }
    }

    /// Files a child this controller created at `now`, as the API server answered the
    /// create, unless the watch has shown it (or a newer object of its name) already.
    pub fn created(&self, obj: K, now: Instant) {
        let mut state = self.write();
        let (at, _) = place(&obj);
        if let Some(seen) = state.current.get(pair(&at))
            && (seen.uid() == obj.uid() || older(version(&obj), version(&**seen)))
        {
            return;
        }
        let assumed = Assumed {
            uid: obj.uid().map(str::to_string),
            version: version(&obj),
            lists: state.lists,
            at: now,
        };
        state.assumed.insert(at, assumed);
        state.current.file(Arc::new(obj));
    }

    /// The objects carrying job `job`'s name in `namespace`, in no order.
    pub fn of_job(&self, namespace: &str, job: &str) -> Vec<Arc<K>> {
        self.read()
            .current
            .bucket(namespace, job)
            .map(|b| b.children.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Every object (for the start of a re-list, to tell which ones it no longer has).
    pub fn all(&self) -> Vec<Arc<K>> {
        self.read().current.by_place.iter().cloned().collect()
    }

    /// How many objects the cache holds.
    pub fn len(&self) -> usize {
        self.read().current.by_place.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
