//! Serialised answers, computed once per (request, field masks) and then served as the same
//! bytes: a benchmark or a test that asks the same lists thousands of times pays for pruning
//! and serialising each distinct answer once.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, RwLock};

use crate::answer::{GetQuery, ListQuery, QueryError, Request};
use crate::store::ObjectStore;

/// The answers of the same mask set, by request.
type ByMasks = Vec<(Option<BTreeSet<String>>, Arc<Vec<u8>>)>;

/// An [`ObjectStore`] whose answers are kept serialised (JSON, `serde_json::to_vec`) by
/// (request, field masks). Errors are not kept. Shareable between threads.
#[derive(Debug, Default)]
pub struct AnswerCache {
    store: ObjectStore,
    answers: RwLock<HashMap<Request, ByMasks>>,
}

impl AnswerCache {
    pub fn new(store: ObjectStore) -> Self {
        AnswerCache {
            store,
            answers: RwLock::default(),
        }
    }

    pub fn store(&self) -> &ObjectStore {
        &self.store
    }

    /// The serialised answer to `request` with `field_masks` (ignored for a get, as the host
    /// ignores them).
    pub fn answer(
        &self,
        request: &Request,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Arc<Vec<u8>>, QueryError> {
        let field_masks = match request {
            Request::List(_) => field_masks,
            Request::Get(_) => None,
        };
        let cached = |by_masks: &ByMasks| {
            by_masks
                .iter()
                .find(|(m, _)| m.as_ref() == field_masks)
                .map(|(_, bytes)| bytes.clone())
        };
        if let Some(bytes) = self.read().get(request).and_then(cached) {
            return Ok(bytes);
        }
        let value = self.store.answer(request, field_masks)?;
        let bytes = Arc::new(serde_json::to_vec(&value).expect("a JSON value always serialises"));
        let mut answers = self.answers.write().unwrap_or_else(|p| p.into_inner());
        let by_masks = answers.entry(request.clone()).or_default();
        // Another thread may have answered meanwhile: serve its bytes, the same ones.
        if let Some(bytes) = cached(by_masks) {
            return Ok(bytes);
        }
        by_masks.push((field_masks.cloned(), bytes.clone()));
        Ok(bytes)
    }

    /// [`Self::answer`] to a list request.
    pub fn list(
        &self,
        query: &ListQuery,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Arc<Vec<u8>>, QueryError> {
        self.answer(&Request::List(query.clone()), field_masks)
    }

    /// [`Self::answer`] to a get request.
    pub fn get(&self, query: &GetQuery) -> Result<Arc<Vec<u8>>, QueryError> {
        self.answer(&Request::Get(query.clone()), None)
    }

    /// How many distinct answers are kept.
    pub fn len(&self) -> usize {
        self.read().values().map(Vec::len).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<Request, ByMasks>> {
        self.answers.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serves_the_same_bytes_per_request_and_masks() {
        let store = ObjectStore::new([json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "x"}, "data": {"k": "v", "l": "w"}
        })])
        .unwrap();
        let cache = AnswerCache::new(store);
        let query = ListQuery::all("v1", "ConfigMap");
        let masks: BTreeSet<String> = ["data.k".to_string()].into();
        let whole = cache.list(&query, None).unwrap();
        let masked = cache.list(&query, Some(&masks)).unwrap();
        assert!(Arc::ptr_eq(&whole, &cache.list(&query, None).unwrap()));
        assert!(Arc::ptr_eq(
            &masked,
            &cache.list(&query, Some(&masks)).unwrap()
        ));
        assert_eq!(
            *whole,
            serde_json::to_vec(&cache.store().list(&query, None).unwrap()).unwrap()
        );
        let masked: serde_json::Value = serde_json::from_slice(&masked).unwrap();
        assert_eq!(masked["items"][0]["data"], json!({"k": "v"}));
        // Masks do not apply to a get, so they do not make another answer.
        let get = GetQuery::new("v1", "ConfigMap", "a", Some("x"));
        let got = cache.get(&get).unwrap();
        assert!(Arc::ptr_eq(
            &got,
            &cache.answer(&Request::Get(get), Some(&masks)).unwrap()
        ));
        assert_eq!(cache.len(), 3);
        // Errors are answered, not kept.
        let missing = GetQuery::new("v1", "ConfigMap", "b", Some("x"));
        assert!(matches!(cache.get(&missing), Err(QueryError::Api(_))));
        assert_eq!(cache.len(), 3);
    }
}
