//! `host_sim`: the Kubewarden host's answers to a policy's Kubernetes lookups, simulated from
//! an in-memory set of objects. Host-only (tests, the replay-runner's `--cluster-state`, the
//! benchmark, the policy crate's test fixtures); never part of policy.wasm. Its only dependency
//! is `serde_json`, so that the policy crate's tests build it in seconds.
//!
//! * [`ObjectStore`] ([`store`]): the objects, their kinds' scopes, the list [`Order`].
//! * [`ListQuery`], [`GetQuery`], [`Request`] ([`answer`]): `list_resources_all`,
//!   `list_resources_by_namespace` and `get_resource` answered as the host answers them, with
//!   label and field selectors ([`selector`]), the list envelope, the reflector's stripping and
//!   field masks ([`mask`]).
//! * [`AnswerCache`] ([`cache`]): the same answers serialised once per (request, masks).
//!
//! ```
//! use host_sim::{AnswerCache, ListQuery, ObjectStore};
//! use serde_json::json;
//!
//! let store = ObjectStore::new([json!({
//!     "apiVersion": "v1", "kind": "Namespace",
//!     "metadata": {"name": "tenant-a", "labels": {"tier": "gold"}},
//! })])
//! .unwrap();
//! let cache = AnswerCache::new(store);
//! let query = ListQuery::all("v1", "Namespace").with_label_selector("tier in (gold)");
//! let bytes = cache.list(&query, None).unwrap();
//! assert!(bytes.starts_with(br#"{"apiVersion":"v1","items":[{"apiVersion":"v1""#));
//! ```

pub mod answer;
pub mod cache;
pub mod mask;
pub mod selector;
pub mod store;

pub use answer::{GetQuery, ListQuery, QueryError, Request, not_found_message};
pub use cache::AnswerCache;
pub use mask::{FieldMask, LAST_APPLIED_ANNOTATION, strip_for_list};
pub use store::{CLUSTER_SCOPED_KINDS, ObjectProblem, ObjectStore, Order, StoreError};
