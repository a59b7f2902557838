//! Which tenants and namespaces a request reads, so that its cost follows the pools it
//! checks rather than the cluster.
//!
//! 1. [`Context::tenants_above`]: the Tenants that own the namespace written to and each
//!    namespace above it, read one by one by name (a namespace's owner is known from its
//!    name: [`owner_of`]). They say which tenant roots each key's pool.
//! 2. [`Context::load_pools`]: from each pool root down, the applications and child Tenants
//!    of every namespace the pools hold, one namespace at a time, descending through the
//!    tenants that leave some key in question unbounded (those that bound every such key are
//!    carved out: their namespaces are not read).
//!
//! The engine pays for every distinct list once, cold: policy-server and kwctl open a
//! reflector (an initial LIST, then a WATCH that must sync) per list, 30-55 ms each against a
//! real API server. A list of every application costs the cluster instead: cold, about 0.3 ms
//! per HelmRelease (35 s at 100,000 applications); warm, its parse on every request (about 3 s
//! at 100,000). So a request lists up to [`NAMESPACE_LISTS`] namespaces one by one, which keeps
//! the cost of pools of up to about 1,300 applications following the pool, cold and warm; only
//! a pool of more namespaces takes the rest from one list of every application of the cluster
//! ([`Lookup::AllApplications`], read once): one reflector more instead of hundreds. The walk
//! switches as soon as the namespaces it has listed and those it knows it still needs would
//! pass the cap, so a pool that is plainly large does not first pay for the cap's worth of
//! lists. The choice depends only on what the request has read, so the lookups' sequence stays
//! a function of the request and the cluster.

use std::collections::{BTreeMap, BTreeSet, HashSet, VecDeque};
use std::rc::Rc;

use serde_json::Value;

use super::{Context, ContextError};
use crate::cluster::{self, Application, Lookup};
use crate::keys::TENANT_KIND;
use crate::pool::{Tenancy, Tenant, is_tenant_name, owner_of, stored_tenant};

/// How many namespaces a request lists one by one (`list_resources_by_namespace`) before it
/// reads the rest from one list of every application. 64 reflectors open cold in about 2.3 s
/// at the measured 30-40 ms each, inside the 3 s a cold write into a 1,000-application pool
/// (50 namespaces) may take; 8, the first cap, sent such a pool to the cluster-wide list,
/// whose cost grows with the cluster (README, "Performance in the real engine").
pub const NAMESPACE_LISTS: usize = 64;

/// Every application of the cluster, filed by namespace.
pub(super) type Broad = BTreeMap<String, Rc<Listing>>;

/// One namespace as listed: its applications and the Tenants living in it.
#[derive(Debug, Default)]
pub struct Listing {
    /// Every application of the namespace, its Tenants included, as listed.
    pub applications: Vec<Application>,
    /// Its child tenants, placed as the tenant chart places them.
    pub tenants: Vec<Tenant>,
    /// A warning for each Tenant release of the namespace that cannot be placed.
    pub unplaced: Vec<String>,
}

impl Context<'_> {
    /// The tenants that own `namespace` and each namespace above it, as far up as they exist.
    pub(crate) fn tenants_above(&self, namespace: &str) -> Result<Tenancy, ContextError> {
        self.tenant_prefix()?;
        let mut tenants = Vec::new();
        let mut current = namespace.to_string();
        // Each step up is a shorter name, and tenant-root is the top.
        while let Some((parent, name)) = owner_of(&current) {
            let Some(tenant) = self.owner(&current, &parent, &name)? else {
                break;
            };
            tenants.push(tenant);
            if parent == current {
                break;
            }
            current = parent;
        }
        Ok(Tenancy::new(tenants))
    }

    /// The Tenant `name` in `parent` that owns `owned`, read by its release's name.
    fn owner(&self, owned: &str, parent: &str, name: &str) -> Result<Option<Tenant>, ContextError> {
        if let Some(known) = self.owners.borrow().get(owned) {
            return known.clone();
        }
        if self.whole.get() {
            let listing = self.listing(parent)?;
            return Ok(listing.tenants.iter().find(|t| t.owns == owned).cloned());
        }
        let read = || {
            let prefix = self.tenant_prefix()?;
            let lookup = Lookup::Tenant {
                namespace: parent.to_string(),
                release: format!("{prefix}{name}"),
            };
            let answer = cluster::list(self.k8s, &lookup, self.application_masks())
                .map_err(ContextError::Tenants)?;
            let listed = cluster::parse_applications(&answer, |kind| self.release_prefix(kind))
                .map_err(ContextError::Tenants)?;
            Ok(listed
                .iter()
                .find(|a| {
                    *a.kind == *TENANT_KIND
                        && a.prefixed
                        && a.name == name
                        && *a.namespace == *parent
                })
                .map(|a| self.tenant(a)))
        };
        let owner = read();
        self.owners
            .borrow_mut()
            .insert(owned.to_string(), owner.clone());
        owner
    }

    /// A stored Tenant application as the tree needs it.
    fn tenant(&self, app: &Application) -> Tenant {
        let values = app.values.as_ref().map_or("{}", |v| v.get());
        let parsed = serde_json::from_str::<Value>(values)
            .map_err(|e| format!("{}: spec.values is not valid JSON: {e}", app.label()));
        stored_tenant(
            &app.name,
            &app.namespace,
            parsed.as_ref(),
            &self.settings.quota_key_aliases,
        )
    }

    /// Adds to `tenancy` every tenant below `roots` that the pools of `keys` rooted there
    /// reach, listing each namespace on the way: a root's namespace, then those of the child
    /// tenants that leave some key of `keys` unbounded, and so on down.
    pub(crate) fn load_pools(
        &self,
        tenancy: &mut Tenancy,
        roots: &[&str],
        keys: &BTreeSet<&str>,
    ) -> Result<(), ContextError> {
        let mut queue: VecDeque<String> = roots.iter().map(|r| r.to_string()).collect();
        let mut seen = HashSet::new();
        while let Some(namespace) = queue.pop_front() {
            if !seen.insert(namespace.clone()) {
                continue;
            }
            // This namespace and the queued ones not listed yet: when they would take the
            // request past NAMESPACE_LISTS, the broad list serves them all, before any more
            // is listed alone. Counted only while that choice is open: not again for each
            // namespace of a large pool once the broad list is read.
            let pending = || {
                1 + queue
                    .iter()
                    .filter(|n| !self.listings.borrow().contains_key(n.as_str()))
                    .count()
            };
            let listing = self.listing_of(&namespace, pending)?;
            for child in &listing.tenants {
                tenancy.insert(child.clone());
                if keys.iter().any(|key| !child.bounds(key)) {
                    queue.push_back(child.owns.clone());
                }
            }
        }
        Ok(())
    }

    /// The applications and child Tenants of `namespace`.
    pub(crate) fn listing(&self, namespace: &str) -> Result<Rc<Listing>, ContextError> {
        self.listing_of(namespace, || 1)
    }

    /// The listing of `namespace` when `pending()` namespaces not listed yet, this one
    /// included, are known to be needed: from one list of every application once the broad
    /// list is read or the pending ones would pass [`NAMESPACE_LISTS`], else listed alone.
    fn listing_of(
        &self,
        namespace: &str,
        pending: impl FnOnce() -> usize,
    ) -> Result<Rc<Listing>, ContextError> {
        if let Some(known) = self.listings.borrow().get(namespace) {
            return known.clone();
        }
        if self.whole.get() {
            return Ok(Rc::new(Listing::default()));
        }
        if self.broad.get().is_some() || self.listings.borrow().len() + pending() > NAMESPACE_LISTS
        {
            let listing = self
                .broad()
                .map(|all| all.get(namespace).cloned().unwrap_or_default());
            self.listings
                .borrow_mut()
                .insert(namespace.to_string(), listing.clone());
            return listing;
        }
        let read = || {
            let lookup = Lookup::Applications {
                namespace: namespace.to_string(),
            };
            let answer = cluster::list(self.k8s, &lookup, self.application_masks())
                .map_err(ContextError::Applications)?;
            let applications =
                cluster::parse_applications(&answer, |kind| self.release_prefix(kind))
                    .map_err(ContextError::Applications)?;
            Ok(Rc::new(self.place(namespace, applications)))
        };
        let listing = read();
        self.listings
            .borrow_mut()
            .insert(namespace.to_string(), listing.clone());
        listing
    }

    /// The listing of `namespace`: its Tenants placed, or a warning for each that cannot be.
    fn place(&self, namespace: &str, listed: Vec<Application>) -> Listing {
        let mut listing = Listing::default();
        // The host lists one namespace; anything else is not this namespace's.
        for app in listed.into_iter().filter(|a| *a.namespace == *namespace) {
            if *app.kind == *TENANT_KIND {
                if app.prefixed && is_tenant_name(&app.name) {
                    listing.tenants.push(self.tenant(&app));
                } else {
                    listing.unplaced.push(format!(
                        "Tenant release {}/{} is ignored: the tenant chart renders only releases named tenant-<name> with no other dash, so it owns no namespace and bounds nothing",
                        app.namespace, app.release
                    ));
                }
            }
            listing.applications.push(app);
        }
        listing
    }

    /// Reads every application of the cluster in one list and files them by namespace, so
    /// that no other lookup of applications or tenants is made: for the ledger, which reads
    /// every pool. Returns every tenant.
    pub(crate) fn read_whole_cluster(&self) -> Result<Tenancy, ContextError> {
        self.tenant_prefix()?;
        let all = self.broad()?;
        let mut tenancy = Tenancy::default();
        let mut listings = self.listings.borrow_mut();
        for (namespace, listing) in all {
            for tenant in &listing.tenants {
                tenancy.insert(tenant.clone());
            }
            listings.insert(namespace.clone(), Ok(listing.clone()));
        }
        self.whole.set(true);
        Ok(tenancy)
    }

    /// Every application of the cluster in one list, filed by namespace (read once).
    fn broad(&self) -> Result<&Broad, ContextError> {
        self.broad
            .get_or_init(|| {
                let answer =
                    cluster::list(self.k8s, &Lookup::AllApplications, self.application_masks())
                        .map_err(ContextError::Applications)?;
                let applications =
                    cluster::parse_applications(&answer, |kind| self.release_prefix(kind))
                        .map_err(ContextError::Applications)?;
                let mut by_namespace: BTreeMap<String, Vec<Application>> = BTreeMap::new();
                for app in applications {
                    by_namespace
                        .entry(app.namespace.to_string())
                        .or_default()
                        .push(app);
                }
                Ok(by_namespace
                    .into_iter()
                    .map(|(namespace, apps)| {
                        let listing = Rc::new(self.place(&namespace, apps));
                        (namespace, listing)
                    })
                    .collect())
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Every warning about Tenant releases that cannot be placed, of every namespace read.
    pub(crate) fn unplaced(&self) -> Vec<String> {
        self.listings
            .borrow()
            .values()
            .filter_map(|l| l.as_ref().ok())
            .flat_map(|l| l.unplaced.iter().cloned())
            .collect()
    }

    /// The warnings about the Tenant releases of `namespace` that cannot be placed, if the
    /// request read it.
    pub(crate) fn unplaced_in(&self, namespace: &str) -> Vec<String> {
        match self.listings.borrow().get(namespace) {
            Some(Ok(listing)) => listing.unplaced.clone(),
            _ => Vec::new(),
        }
    }
}
