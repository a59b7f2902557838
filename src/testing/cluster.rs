//! An in-memory cluster: answers list queries from a set of objects, pruned to the field
//! masks asked for as the Kubewarden host prunes them, and records the calls.

use std::cell::RefCell;
use std::collections::BTreeSet;

use field_mask::FieldMask;

use serde_json::{Value, json};

use crate::cluster::{Kubernetes, Query};

#[derive(Default)]
pub struct Fixture {
    objects: Vec<Value>,
    /// Answers to return instead of a list (a host that misbehaves).
    overrides: Vec<(Query, Result<Vec<u8>, String>)>,
    calls: RefCell<Vec<(Query, Option<BTreeSet<String>>)>>,
    /// Answer whole objects whatever masks are asked (a host without field masks).
    unmasked: bool,
}

impl Fixture {
    pub fn new(objects: Vec<Value>) -> Self {
        Fixture {
            objects,
            ..Fixture::default()
        }
    }

    /// Makes `query` answer `answer` verbatim.
    pub fn answering(mut self, query: Query, answer: Result<Vec<u8>, String>) -> Self {
        self.overrides.push((query, answer));
        self
    }

    /// The same cluster on a host that ignores field masks.
    pub fn unmasked(&self) -> Self {
        Fixture {
            objects: self.objects.clone(),
            overrides: self.overrides.clone(),
            calls: RefCell::default(),
            unmasked: true,
        }
    }

    pub fn add(&mut self, object: Value) {
        self.objects.push(object);
    }

    /// The queries asked so far, in order.
    pub fn calls(&self) -> Vec<Query> {
        self.calls.borrow().iter().map(|(q, _)| *q).collect()
    }

    /// The field masks asked with each query so far, in order.
    pub fn masks_asked(&self) -> Vec<Option<BTreeSet<String>>> {
        self.calls.borrow().iter().map(|(_, m)| m.clone()).collect()
    }

    /// The list the host would return for `query` with `field_masks`.
    pub fn list_value(&self, query: Query, field_masks: Option<&BTreeSet<String>>) -> Value {
        let mask = FieldMask::new(field_masks);
        let items: Vec<Value> = self
            .objects
            .iter()
            .filter(|o| o["apiVersion"] == query.api_version() && o["kind"] == query.kind())
            .filter(|o| match query.label_selector() {
                Some(label) => o["metadata"]["labels"].get(label).is_some(),
                None => true,
            })
            .map(|o| match &mask {
                Some(mask) => mask.apply(o),
                None => o.clone(),
            })
            .collect();
        json!({
            "apiVersion": query.api_version(),
            "kind": format!("{}List", query.kind()),
            "metadata": {},
            "items": items,
        })
    }
}

impl Kubernetes for Fixture {
    fn list(
        &self,
        query: Query,
        field_masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, String> {
        self.calls.borrow_mut().push((query, field_masks.cloned()));
        if let Some((_, answer)) = self.overrides.iter().find(|(q, _)| *q == query) {
            return answer.clone();
        }
        let field_masks = field_masks.filter(|_| !self.unmasked);
        Ok(serde_json::to_vec(&self.list_value(query, field_masks))
            .expect("a JSON value serialises"))
    }
}
