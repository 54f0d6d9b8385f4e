//! The blobs' sizes, learnt before the runs and kept up to date by the
//! sessions' writes, for the engines a request costs a round trip:
//! an overwrite writes as many bytes as the blob has (as kvtest's does)
//! without asking the server first, as an application that knows what it
//! stores would; a delete says whether there was a blob.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::Result;

/// Every blob's size by key, shared by an engine's sessions; empty until
/// an engine's survey (or its first write session) fills it. `V` is the
/// size's type: u64 for a store whose objects may pass 4 GB.
pub(crate) struct KnownSizes<V = u32>(Mutex<Option<HashMap<u32, V>>>);

impl<V> Default for KnownSizes<V> {
    fn default() -> Self {
        KnownSizes(Mutex::new(None))
    }
}

impl<V: Copy> KnownSizes<V> {
    /// Fills the table by `list` unless it already is.
    pub fn ensure(&self, list: impl FnOnce() -> Result<HashMap<u32, V>>) -> Result<()> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.is_none() {
            *slot = Some(list()?);
        }
        Ok(())
    }

    /// Replaces the table with a fresh listing's.
    pub fn set(&self, sizes: HashMap<u32, V>) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(sizes);
    }

    pub fn get(&self, key: u32) -> Option<V> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).as_ref()?.get(&key).copied()
    }

    pub fn insert(&self, key: u32, size: V) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert_with(HashMap::new).insert(key, size);
    }

    pub fn remove(&self, key: u32) -> bool {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).as_mut().is_some_and(|m| m.remove(&key).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_listed_once_and_follows_the_writes() {
        let sizes = KnownSizes::default();
        assert_eq!(sizes.get(1), None, "nothing is known before a listing");
        sizes.ensure(|| Ok(HashMap::from([(1, 10), (2, 20)]))).unwrap();
        sizes.ensure(|| panic!("a filled table is not listed again")).unwrap();
        assert_eq!(sizes.get(2), Some(20));
        sizes.insert(3, 30);
        assert!(sizes.remove(1) && !sizes.remove(1), "a delete says whether there was a blob");
        assert_eq!((sizes.get(1), sizes.get(3)), (None, Some(30)));
        sizes.set(HashMap::from([(7, 70)]));
        assert_eq!((sizes.get(2), sizes.get(7)), (None, Some(70)), "a fresh listing replaces the table");
    }
}
