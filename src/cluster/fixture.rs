//! An in-memory cluster: answers list queries from a set of objects, counting the calls.

use std::cell::RefCell;

use serde_json::{Value, json};

use super::{Kubernetes, Query};

#[derive(Default)]
pub struct Fixture {
    objects: Vec<Value>,
    /// Answers to return instead of a list (a host that misbehaves).
    overrides: Vec<(Query, Result<Vec<u8>, String>)>,
    calls: RefCell<Vec<Query>>,
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

    pub fn add(&mut self, object: Value) {
        self.objects.push(object);
    }

    /// The queries asked so far, in order.
    pub fn calls(&self) -> Vec<Query> {
        self.calls.borrow().clone()
    }

    /// The list the host would return for `query`.
    pub fn list_value(&self, query: Query) -> Value {
        let items: Vec<&Value> = self
            .objects
            .iter()
            .filter(|o| o["apiVersion"] == query.api_version() && o["kind"] == query.kind())
            .filter(|o| match query.label_selector() {
                Some(label) => o["metadata"]["labels"].get(label).is_some(),
                None => true,
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
    fn list(&self, query: Query) -> Result<Vec<u8>, String> {
        self.calls.borrow_mut().push(query);
        if let Some((_, answer)) = self.overrides.iter().find(|(q, _)| *q == query) {
            return answer.clone();
        }
        Ok(serde_json::to_vec(&self.list_value(query)).expect("a JSON value serialises"))
    }
}
