//! An in-memory cluster: answers the policy's lookups from a set of objects as the Kubewarden
//! host answers them (`host_sim`: selectors, the list envelope, field masks), and records the
//! calls.

use std::cell::RefCell;
use std::collections::BTreeSet;

use host_sim::{ListQuery, ObjectStore, Order};
use serde_json::Value;

use tenant_reservation_policy::cluster::permissions::User;
use tenant_reservation_policy::cluster::{Access, Kubernetes, Lookup, Permission, Source};

/// A pool summary's (apiVersion, kind).
const POOL_RESERVATION: (&str, &str) = ("reservations.cozystack.io/v1alpha1", "PoolReservation");

#[derive(Clone)]
pub struct Fixture {
    store: ObjectStore,
    /// Answers to return instead of a list, for every lookup of a source (a host that
    /// misbehaves).
    overrides: Vec<(Source, Result<Vec<u8>, String>)>,
    calls: RefCell<Vec<(Lookup, BTreeSet<String>)>>,
    /// Answer whole objects whatever masks are asked (a host without field masks).
    unmasked: bool,
    /// Permission checks: `Ok(denied)` names the permissions (`list helmreleases`) the
    /// API server denies, with its reason; `Err` makes every check fail so. Default: all
    /// allowed (a policy-server with the RBAC of deploy/).
    permissions: Result<Vec<(String, String)>, String>,
    checks: RefCell<Vec<(User, Permission)>>,
    /// The pool summaries read, by the namespace asked.
    summary_reads: RefCell<Vec<String>>,
}

impl Default for Fixture {
    fn default() -> Self {
        Fixture::new(Vec::new())
    }
}

/// The host's list request for `lookup`.
pub fn list_query(lookup: &Lookup) -> ListQuery {
    ListQuery::new(
        lookup.resource(),
        lookup.namespace(),
        lookup.label_selector(),
        lookup.field_selector(),
    )
}

impl Fixture {
    /// A cluster of `objects`, listed in the order given.
    ///
    /// # Panics
    /// When the objects are not a cluster (an object without a name, two with the same one):
    /// a fixture's own mistake.
    pub fn new(objects: Vec<Value>) -> Self {
        Fixture::from_store(
            ObjectStore::new(objects)
                .unwrap_or_else(|e| panic!("the fixture is not a cluster: {e}"))
                .with_order(Order::AsGiven),
        )
    }

    /// A cluster of the objects of `store` (a cluster-state file, a `kubectl get -o json`
    /// dump), listed in the store's order.
    pub fn from_store(store: ObjectStore) -> Self {
        Fixture {
            store,
            overrides: Vec::new(),
            calls: RefCell::default(),
            unmasked: false,
            permissions: Ok(Vec::new()),
            checks: RefCell::default(),
            summary_reads: RefCell::default(),
        }
    }

    /// The same cluster, with the API server denying policy-server `verb resource` (as in
    /// `list helmreleases`), for `reason`.
    pub fn denying(mut self, permission: &str, reason: &str) -> Self {
        if let Ok(denied) = &mut self.permissions {
            denied.push((permission.to_string(), reason.to_string()));
        }
        self
    }

    /// The same cluster, with every permission check failing with `error`.
    pub fn failing_checks(mut self, error: &str) -> Self {
        self.permissions = Err(error.to_string());
        self
    }

    /// The permission checks asked so far, in order: (user, `verb resource.group`).
    pub fn checks(&self) -> Vec<(String, String)> {
        self.checks
            .borrow()
            .iter()
            .map(|(user, p)| (user.name.clone(), p.to_string()))
            .collect()
    }

    /// Makes every lookup of `source` answer `answer` verbatim.
    pub fn answering(mut self, source: Source, answer: Result<Vec<u8>, String>) -> Self {
        self.overrides.push((source, answer));
        self
    }

    /// The same cluster on a host that ignores field masks.
    pub fn unmasked(&self) -> Self {
        Fixture {
            calls: RefCell::default(),
            unmasked: true,
            ..self.clone()
        }
    }

    /// # Panics
    /// When `object` cannot join the cluster (see [`Fixture::new`]).
    pub fn add(&mut self, object: Value) {
        self.store
            .insert(object)
            .unwrap_or_else(|e| panic!("the fixture is not a cluster: {e}"));
    }

    /// The lookups asked so far, in order.
    pub fn calls(&self) -> Vec<Lookup> {
        self.calls.borrow().iter().map(|(l, _)| l.clone()).collect()
    }

    /// What the lookups asked so far read, in order.
    pub fn sources(&self) -> Vec<Source> {
        self.calls
            .borrow()
            .iter()
            .map(|(l, _)| l.source())
            .collect()
    }

    /// The field masks asked with each lookup so far, in order.
    pub fn masks_asked(&self) -> Vec<BTreeSet<String>> {
        self.calls.borrow().iter().map(|(_, m)| m.clone()).collect()
    }

    /// Forgets the calls recorded so far.
    /// The pool summaries read, by the namespace asked, in order.
    pub fn summary_reads(&self) -> Vec<String> {
        self.summary_reads.borrow().clone()
    }

    pub fn forget_calls(&self) {
        self.calls.borrow_mut().clear();
    }

    /// The list the host would return for `lookup` with `field_masks` (`None`: whole objects).
    ///
    /// # Panics
    /// When the lookup's selectors are not ones the simulated host understands.
    pub fn list_value(&self, lookup: &Lookup, field_masks: Option<&BTreeSet<String>>) -> Value {
        self.store
            .list(&list_query(lookup), field_masks)
            .unwrap_or_else(|e| panic!("{}: {e}", lookup.describe()))
    }
}

impl Kubernetes for Fixture {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String> {
        self.calls
            .borrow_mut()
            .push((lookup.clone(), field_masks.clone()));
        if let Some((_, answer)) = self.overrides.iter().find(|(s, _)| *s == lookup.source()) {
            return answer.clone();
        }
        let field_masks = Some(field_masks).filter(|_| !self.unmasked);
        let answer = self
            .store
            .list(&list_query(lookup), field_masks)
            .map_err(|e| e.to_string())?;
        Ok(serde_json::to_vec(&answer).expect("a JSON value serialises"))
    }

    /// The `PoolReservation` named after `namespace` in it, as a GET answers; the host's
    /// error when there is none.
    fn pool_summary(&self, namespace: &str) -> Result<Vec<u8>, String> {
        self.summary_reads.borrow_mut().push(namespace.to_string());
        let query = ListQuery::new(
            POOL_RESERVATION,
            Some(namespace),
            None,
            Some(format!("metadata.name={namespace}")),
        );
        let list = self.store.list(&query, None).map_err(|e| e.to_string())?;
        match list["items"].get(0) {
            Some(object) => Ok(serde_json::to_vec(object).expect("a JSON value serialises")),
            None => Err(format!(
                "Cannot find {}/{} named '{namespace}' inside of namespace 'Some(\"{namespace}\")'",
                POOL_RESERVATION.0, POOL_RESERVATION.1
            )),
        }
    }

    fn can_i(&self, user: &User, permission: &Permission) -> Result<Access, String> {
        self.checks.borrow_mut().push((user.clone(), *permission));
        let denied = self.permissions.as_ref().map_err(Clone::clone)?;
        let asked = format!("{} {}", permission.verb, permission.resource);
        Ok(match denied.iter().find(|(p, _)| *p == asked) {
            Some((_, reason)) => Access {
                allowed: false,
                reason: reason.clone(),
            },
            None => Access {
                allowed: true,
                reason: String::new(),
            },
        })
    }
}
