//! The host's side of every call, modelled as policy-server serves `list_resources_all` and
//! `list_resources_by_namespace` (see the README's Performance section and policy-evaluator's
//! `callback_handler/kubernetes`):
//!
//! - **one reflector per exact key** (apiVersion, kind, namespace, label selector, field
//!   selector, field masks), opened on the key's first call and never evicted;
//! - **opening one** (the cold call) waits for the initial LIST: the API server applies the
//!   namespace and the selectors and sends full objects ([`ApiServer::list`], untimed: the API
//!   server's work, not the host's), which the host decodes and, object by object, strips
//!   (`managedFields`, last-applied) and prunes to the masks before storing them ([`strip_for_list`],
//!   [`FieldMask`], timed). The network round trips of the LIST (one per 500 objects) are not
//!   modelled: [`RequestStats::list_pages`] counts them;
//! - **every call** deep-clones the reflector's objects into a new list and serialises it with
//!   `serde_json` (timed): the bytes handed to the guest.
//!
//! Items are listed in (namespace, name) order, not in the reflector's hash order, so that host
//! calls stay deterministic.

mod api_server;
#[cfg(test)]
mod tests;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use host_sim::{FieldMask, ListQuery, QueryError, strip_for_list};
use replay_runner::{Answer, Answerer, KubernetesCall};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tenant_reservation_policy::cluster::{Kubernetes, Lookup, Source};

pub use api_server::{ApiServer, PAGE_SIZE};

/// What a reflector's key reads, for the reflector counts: the policy's own [`Source`] of the
/// lookup that lists it (the schemas are the definitions' list with other masks: another
/// reflector); `None` for a list no lookup makes.
pub fn source_of(query: &ListQuery, masks: Option<&BTreeSet<String>>) -> Option<Source> {
    let schemas = masks.is_some_and(|m| m.contains("spec.application.openAPISchema"));
    match (query.kind.as_str(), query.field_selector.is_some()) {
        ("ApplicationDefinition", _) if schemas => Some(Source::Schema),
        ("ApplicationDefinition", _) => Some(Source::Definitions),
        ("HelmRelease", true) => Some(Source::Tenant),
        ("HelmRelease", false) if query.namespace.is_some() => Some(Source::Applications),
        ("VirtualMachineClusterInstancetype", _) => Some(Source::InstanceTypes),
        _ => None,
    }
}

/// How the report names what a list reads.
pub fn source_name(source: Option<Source>) -> &'static str {
    match source {
        Some(Source::Definitions) => "definitions (all, no schemas)",
        Some(Source::Schema) => "the definitions' schemas (all)",
        Some(Source::Tenant) => "a tenant above (by name)",
        Some(Source::Applications) => "a namespace's applications",
        Some(Source::InstanceTypes) => "instance types (all)",
        None => "other",
    }
}

/// One reflector: its objects as stored (stripped and pruned once, when the LIST came in).
struct Reflector {
    api_version: String,
    list_kind: String,
    items: Vec<Arc<Value>>,
}

/// What one reflector cost to open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Opened {
    pub objects: usize,
    /// Bytes of the initial LIST as the API server sends them (whole objects, JSON).
    pub list_bytes: usize,
    pub list_pages: usize,
    /// Bytes of what the reflector keeps (pruned objects, as JSON).
    pub held_bytes: usize,
}

/// The host's work for one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestStats {
    pub calls: usize,
    pub answer_bytes: usize,
    /// Time the host spent: opening reflectors (decoding, stripping, pruning) and, on every
    /// call, cloning and serialising.
    pub host: Duration,
    /// The part of `host` spent opening reflectors.
    pub opening: Duration,
    /// Time the simulated API server took to produce the initial LISTs (not the host's work:
    /// left out of `host`, and out of the bench's cold figures).
    pub api: Duration,
    /// Reflectors this request opened.
    pub opened: usize,
    /// What the API server sent for them.
    pub list_bytes: usize,
    pub list_pages: usize,
    /// The keys asked and the answers' sizes, in order, hashed: equal for equal calls.
    pub fingerprint: u64,
    /// Answer bytes by what each call read.
    pub by_source: BTreeMap<Option<Source>, (usize, usize)>,
}

/// The reflectors of one policy-server replica, over its lifetime.
#[derive(Clone, Debug, Default)]
pub struct Reflectors {
    pub count: usize,
    pub by_source: BTreeMap<Option<Source>, usize>,
    pub objects: usize,
    pub list_bytes: usize,
    pub list_pages: usize,
    pub held_bytes: usize,
}

type ByMasks = Vec<(Option<BTreeSet<String>>, Reflector)>;

/// One policy-server replica's host: its reflectors, opened on demand from the API server.
pub struct HostModel {
    api: Arc<ApiServer>,
    reflectors: HashMap<ListQuery, ByMasks>,
    lifetime: Reflectors,
    /// The current request.
    pub request: RequestStats,
    /// The answers of the current request, when asked for ([`HostModel::record`]).
    recorded: Option<Vec<Arc<Vec<u8>>>>,
}

/// policy-evaluator's answer: kube's `ObjectList` (apiVersion, items, kind, empty list
/// metadata).
#[derive(Serialize)]
struct ObjectList<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    items: Vec<Value>,
    kind: &'a str,
    metadata: Empty,
}

#[derive(Serialize, Deserialize, Default)]
struct Empty {}

impl HostModel {
    /// A replica just started: no reflector yet.
    pub fn new(api: Arc<ApiServer>) -> HostModel {
        HostModel {
            api,
            reflectors: HashMap::new(),
            lifetime: Reflectors::default(),
            request: RequestStats::default(),
            recorded: None,
        }
    }

    /// Starts counting a new request.
    pub fn begin_request(&mut self) {
        self.request = RequestStats::default();
        if let Some(r) = &mut self.recorded {
            r.clear();
        }
    }

    /// Keeps the answers of the requests from now on (for the floor), or stops keeping them.
    pub fn record(&mut self, on: bool) {
        self.recorded = on.then(Vec::new);
    }

    pub fn recorded(&self) -> Vec<Arc<Vec<u8>>> {
        self.recorded.clone().unwrap_or_default()
    }

    pub fn reflectors(&self) -> &Reflectors {
        &self.lifetime
    }

    /// The answer to a list call with `masks`, as policy-server gives it.
    pub fn serve(
        &mut self,
        query: &ListQuery,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<Vec<u8>, QueryError> {
        let start = Instant::now();
        let mut untimed = Duration::ZERO;
        let known = self
            .reflectors
            .get(query)
            .and_then(|by| by.iter().position(|(m, _)| m.as_ref() == masks));
        let position = match known {
            Some(p) => p,
            None => {
                let opening = Instant::now();
                let (reflector, opened, api_time) = self.open(query, masks)?;
                untimed += api_time;
                self.request.api += api_time;
                self.request.opening += opening.elapsed() - api_time;
                self.request.opened += 1;
                self.request.list_bytes += opened.list_bytes;
                self.request.list_pages += opened.list_pages;
                let l = &mut self.lifetime;
                l.count += 1;
                *l.by_source.entry(source_of(query, masks)).or_default() += 1;
                l.objects += opened.objects;
                l.list_bytes += opened.list_bytes;
                l.list_pages += opened.list_pages;
                l.held_bytes += opened.held_bytes;
                let by = self.reflectors.entry(query.clone()).or_default();
                by.push((masks.cloned(), reflector));
                by.len() - 1
            }
        };
        let reflector = &self.reflectors[query][position].1;
        // Every call: the store's objects deep-cloned into a new list, serialised whole.
        let list = ObjectList {
            api_version: &reflector.api_version,
            items: reflector.items.iter().map(|o| Value::clone(o)).collect(),
            kind: &reflector.list_kind,
            metadata: Empty {},
        };
        let bytes = serde_json::to_vec(&list).expect("a list serialises");
        drop(list);
        self.request.host += start.elapsed() - untimed;
        self.request.calls += 1;
        self.request.answer_bytes += bytes.len();
        let source = self
            .request
            .by_source
            .entry(source_of(query, masks))
            .or_default();
        source.0 += 1;
        source.1 += bytes.len();
        let mut h = DefaultHasher::new();
        (query, masks, bytes.len()).hash(&mut h);
        self.request.fingerprint = self.request.fingerprint.rotate_left(7) ^ h.finish();
        if let Some(r) = &mut self.recorded {
            r.push(Arc::new(bytes.clone()));
        }
        Ok(bytes)
    }

    /// Opens the reflector of (`query`, `masks`): the initial LIST, each object stripped and
    /// pruned. Also returns the time the API server took to produce the LIST (not the host's).
    fn open(
        &self,
        query: &ListQuery,
        masks: Option<&BTreeSet<String>>,
    ) -> Result<(Reflector, Opened, Duration), QueryError> {
        let api_start = Instant::now();
        let sent = self.api.list(query)?;
        let pages = sent.len().div_ceil(PAGE_SIZE).max(1);
        let wire = serde_json::to_vec(&sent).expect("objects serialise");
        drop(sent);
        let api_time = api_start.elapsed();
        // The host: decode the LIST, then modify_object each object before storing it.
        let decoded: Vec<Value> = serde_json::from_slice(&wire).expect("the LIST is JSON");
        let mask = FieldMask::new(masks);
        let items: Vec<Arc<Value>> = decoded
            .into_iter()
            .map(|mut object| {
                strip_for_list(&mut object);
                Arc::new(match &mask {
                    Some(m) => m.apply(&object),
                    None => object,
                })
            })
            .collect();
        let held_start = Instant::now();
        let held_bytes: usize = items
            .iter()
            .map(|o| serde_json::to_vec(&**o).map_or(0, |b| b.len()))
            .sum();
        let untimed = api_time + held_start.elapsed();
        let opened = Opened {
            objects: items.len(),
            list_bytes: wire.len(),
            list_pages: pages,
            held_bytes,
        };
        Ok((
            Reflector {
                api_version: query.api_version.clone(),
                list_kind: format!("{}List", query.kind),
                items,
            },
            opened,
            untimed,
        ))
    }
}

pub type SharedHost = Arc<Mutex<HostModel>>;

pub fn lock(host: &SharedHost) -> MutexGuard<'_, HostModel> {
    host.lock().unwrap_or_else(|p| p.into_inner())
}

/// The guest's host calls answered by a [`HostModel`].
pub struct Served(pub SharedHost);

impl Answerer for Served {
    fn answer(&mut self, call: &KubernetesCall) -> Answer {
        let Some((query, masks)) = call.request.list_query() else {
            return Answer::Violation {
                guest_message: "the bench serves lists only".into(),
                violation: format!("a get the bench does not model: {:?}", call.request),
            };
        };
        match lock(&self.0).serve(&query, masks) {
            Ok(bytes) => Answer::Success(bytes),
            Err(QueryError::Api(message)) => Answer::Error(message),
            Err(QueryError::Unanswerable(message)) => Answer::Violation {
                guest_message: format!("Callback evaluation failure: {message}"),
                violation: format!("cannot answer {:?}: {message}", call.request),
            },
        }
    }

    fn begin_evaluation(&mut self) {
        lock(&self.0).begin_request();
    }
}

/// The native policy's view: each answer asked of a host model once, then served as the same
/// bytes (the native comparison times the policy, not the host; the sweep counts keys).
pub struct Frozen {
    host: RefCell<HostModel>,
    answers: RefCell<HashMap<ReflectorKey, Arc<Vec<u8>>>>,
}

/// What policy-server keys a reflector by: the list asked and its field masks.
type ReflectorKey = (ListQuery, BTreeSet<String>);

impl Frozen {
    pub fn new(host: HostModel) -> Frozen {
        Frozen {
            host: RefCell::new(host),
            answers: RefCell::default(),
        }
    }

    pub fn reflectors(&self) -> Reflectors {
        self.host.borrow().reflectors().clone()
    }
}

impl Kubernetes for Frozen {
    fn list(&self, lookup: &Lookup, field_masks: &BTreeSet<String>) -> Result<Vec<u8>, String> {
        let query = test_kit::list_query(lookup);
        let key = (query, field_masks.clone());
        if let Some(bytes) = self.answers.borrow().get(&key) {
            return Ok(bytes.to_vec());
        }
        let bytes = self
            .host
            .borrow_mut()
            .serve(&key.0, Some(field_masks))
            .map_err(|e| e.to_string())?;
        self.answers
            .borrow_mut()
            .insert(key, Arc::new(bytes.clone()));
        Ok(bytes)
    }
}
