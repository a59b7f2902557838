//! The API server the host's reflectors LIST from: the cluster's objects, indexed by namespace
//! as its watch cache is, selectors applied, objects whole.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow};
use host_sim::{ListQuery, ObjectStore, QueryError};
use serde_json::Value;

/// The API server's objects, indexed as its watch cache is: by namespace.
pub struct ApiServer {
    pub(super) namespaces: BTreeMap<String, ObjectStore>,
    pub(super) cluster_scoped: ObjectStore,
}

/// A page of an initial LIST.
pub const PAGE_SIZE: usize = 500;

impl ApiServer {
    pub fn new(objects: Vec<Value>) -> Result<ApiServer> {
        let mut by_namespace: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        let mut cluster_scoped = Vec::new();
        for object in objects {
            match object["metadata"]["namespace"].as_str() {
                Some(ns) => by_namespace.entry(ns.to_string()).or_default().push(object),
                None => cluster_scoped.push(object),
            }
        }
        let namespaces = by_namespace
            .into_iter()
            .map(|(ns, objects)| Ok((ns, ObjectStore::new(objects)?)))
            .collect::<Result<_, host_sim::StoreError>>()
            .map_err(|e| anyhow!("the generated cluster: {e}"))?;
        Ok(ApiServer {
            namespaces,
            cluster_scoped: ObjectStore::new(cluster_scoped)
                .map_err(|e| anyhow!("the generated cluster: {e}"))?,
        })
    }

    /// The objects the API server sends for `query`'s LIST: selectors applied, objects whole.
    pub fn list(&self, query: &ListQuery) -> Result<Vec<Value>, QueryError> {
        let items = |store: &ObjectStore| -> Result<Vec<Value>, QueryError> {
            match store.list(query, None)? {
                Value::Object(mut list) => match list.remove("items") {
                    Some(Value::Array(items)) => Ok(items),
                    _ => Ok(Vec::new()),
                },
                _ => Ok(Vec::new()),
            }
        };
        let (api_version, kind) = (&query.api_version, &query.kind);
        let cluster_wide = host_sim::CLUSTER_SCOPED_KINDS.contains(&kind.as_str())
            || self
                .cluster_scoped
                .objects()
                .any(|o| o["apiVersion"] == **api_version && o["kind"] == **kind);
        if cluster_wide {
            return items(&self.cluster_scoped);
        }
        match &query.namespace {
            Some(ns) => match self.namespaces.get(ns) {
                Some(store) => items(store),
                None => Ok(Vec::new()),
            },
            None => {
                let mut all = Vec::new();
                for store in self.namespaces.values() {
                    all.extend(items(store)?);
                }
                Ok(all)
            }
        }
    }
}
