//! The in-process cache of authenticated sessions, shared by the services that change users,
//! roles and parties so they can drop what they changed at once.
use crate::model::Principal;
use atrium_kernel::Id;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Principals by session id, each served for at most `ttl` before the database is asked
/// again — so a revocation on another instance is seen within `ttl`.
pub struct SessionCache {
    ttl: std::time::Duration,
    map: Mutex<HashMap<String, (Instant, Arc<Principal>)>>,
}

impl SessionCache {
    const MAX_ENTRIES: usize = 100_000;

    /// An empty cache serving each principal for at most `ttl`.
    pub fn new(ttl: std::time::Duration) -> Self {
        SessionCache { ttl, map: Mutex::new(HashMap::new()) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (Instant, Arc<Principal>)>> {
        self.map.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn get(&self, sid: &str) -> Option<Arc<Principal>> {
        if self.ttl.is_zero() {
            return None;
        }
        let map = self.lock();
        map.get(sid).filter(|(at, _)| at.elapsed() < self.ttl).map(|(_, p)| p.clone())
    }

    pub(crate) fn put(&self, sid: &str, p: Arc<Principal>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut map = self.lock();
        if map.len() >= Self::MAX_ENTRIES {
            let ttl = self.ttl;
            map.retain(|_, (at, _)| at.elapsed() < ttl);
            if map.len() >= Self::MAX_ENTRIES {
                map.clear();
            }
        }
        map.insert(sid.to_owned(), (Instant::now(), p));
    }

    /// Drops the cached principals of one user (after its access changed).
    pub fn forget_user(&self, user_id: Id) {
        self.lock().retain(|_, (_, p)| p.user.id != user_id);
    }

    pub(crate) fn forget(&self, sid: &str) {
        self.lock().remove(sid);
    }

    /// Drops every cached principal (after a role or a party changed).
    pub fn clear(&self) {
        self.lock().clear();
    }
}
