//! The cluster as one request sees it: each lookup made once, on first use, and each charge
//! computed once.
//!
//! - here: the definitions (and a kind's schema, read with the first evaluation of the kind),
//!   the instance types, and what the applications of a set of pools reserve;
//! - [`scope`]: which tenants and namespaces the request reads: the tenants above the
//!   namespace written to, then the namespaces of the pools it checks, walked down from their
//!   roots;
//! - [`modules`]: what a Tenant brings besides its declaration, the module releases the
//!   tenant chart will create, charged in their pools until they exist;
//! - [`summaries`]: a pool's summary, read by name and trusted only while fresh.
//!
//! The lookups' sequence depends only on the request and the cluster, as kwctl's session
//! replay requires.

mod modules;
mod scope;
mod summaries;

pub use modules::{Modules, ModulesError, PendingModule};
pub use scope::{Listing, NAMESPACE_LISTS};
pub use summaries::Unsummarized;

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use serde_json::Value;

use crate::charge::definition::ApplicationDefinition;
use crate::charge::presets::Presets;
use crate::charge::sizing::{InstanceTypeSize, InstanceTypes, Sizing};
use crate::charge::{ChargeError, Governing};
use crate::cluster::{self, Application, ClusterError, Kubernetes, Lookup};
use crate::keys::TENANT_KIND;
use crate::pool::{Pool, Share, Tenant, Usage};
use crate::resources::Resources;
use crate::settings::Settings;

/// Why the cluster view cannot answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    #[error("cannot read the applications: {0}")]
    Applications(ClusterError),
    #[error("cannot read the tenants: {0}")]
    Tenants(ClusterError),
    /// Tenants are placed by their definition's release prefix: without it, fail closed.
    #[error("{0}")]
    Definitions(ChargeError),
    #[error("no single ApplicationDefinition declares kind Tenant, so tenants cannot be placed")]
    NoTenantDefinition,
    #[error("the reservations of the pool overflow")]
    ReservationsOverflow,
}

/// One holder of a pool, stored or pending: what a sum may leave out.
#[derive(Clone, Copy, Debug)]
pub struct Held<'a> {
    pub kind: &'a str,
    pub namespace: &'a str,
    pub name: &'a str,
    /// A module release the tenant chart will create, not yet stored.
    pub pending: bool,
}

/// What a write reserves, and its previous version reserved.
pub(crate) struct WriteCharge {
    pub governing: Rc<Governing>,
    /// `None`: the kind reserves nothing (exempt, or no block where none is required).
    pub new: Option<Resources>,
    /// On UPDATE of a charged kind: the previous version's charge, or why it has none.
    pub old: Option<Charge>,
}

/// What the other objects of a pool that cannot be evaluated are, by label and reason.
#[derive(Debug, Default)]
pub struct Unevaluable {
    /// Applications a tenant wrote: `siblingFailure` decides.
    pub applications: Vec<String>,
    /// Tenant modules (created by the tenant chart): counted as zero with a warning, never
    /// a reason to refuse another write.
    pub modules: Vec<String>,
}

impl Unevaluable {
    pub fn absorb(&mut self, other: Unevaluable) {
        self.applications.extend(other.applications);
        self.modules.extend(other.modules);
    }
}

/// An instance type as read by name: `Ok(None)` when there is none of that name.
type Schemas = HashMap<String, Option<Box<serde_json::value::RawValue>>>;

type InstanceTypeSizes = BTreeMap<String, Result<InstanceTypeSize, String>>;

type Charge = Result<Option<Resources>, ChargeError>;

/// Charges by kind, then by an application's values as listed.
type Charges = HashMap<Rc<str>, HashMap<Box<str>, Charge>>;

/// The definitions as listed, and their indices by the kind they declare.
struct Definitions {
    list: Vec<ApplicationDefinition>,
    by_kind: HashMap<String, Vec<usize>>,
}

/// The settings in force and the cluster as read for this request.
pub struct Context<'k> {
    pub(crate) settings: &'k Settings,
    presets: Presets,
    k8s: &'k dyn Kubernetes,
    definitions: OnceCell<Result<Definitions, ClusterError>>,
    /// The field masks of every applications' list: what the reservations in force read.
    application_masks: OnceCell<BTreeSet<String>>,
    /// Every definition's schema, by the definition's name: read in one list the first time
    /// a definition is prepared.
    schemas: OnceCell<Result<Schemas, String>>,
    /// Every instance type, by name: read in one list the first time one is needed.
    instance_types: OnceCell<Result<InstanceTypeSizes, String>>,
    governing: RefCell<HashMap<String, Result<Rc<Governing>, ChargeError>>>,
    /// By kind, then by the application's values as listed: a charge depends on nothing else,
    /// and once pruned by the field masks the values of applications of the same size are
    /// the same bytes.
    charges: RefCell<Charges>,
    /// The tenants read by name, by the namespace each owns (`None`: no such Tenant).
    owners: RefCell<HashMap<String, Result<Option<Tenant>, ContextError>>>,
    /// The namespaces listed, by name.
    listings: RefCell<BTreeMap<String, Result<Rc<Listing>, ContextError>>>,
    /// Every application of the cluster, read in one list once the request's pools need
    /// more than [`NAMESPACE_LISTS`] namespaces.
    broad: OnceCell<Result<scope::Broad, ContextError>>,
    /// The pool summaries read, by the namespace their root owns.
    summaries: RefCell<HashMap<String, Result<Rc<crate::summary::SummaryStatus>, Unsummarized>>>,
    /// Every application has been read at once ([`Context::read_whole_cluster`]): a namespace
    /// not in `listings` holds none, and no lookup of applications or tenants is made again.
    whole: Cell<bool>,
}

impl<'k> Context<'k> {
    pub fn new(settings: &'k Settings, k8s: &'k dyn Kubernetes) -> Result<Self, String> {
        Ok(Context {
            settings,
            presets: settings.preset_table()?,
            k8s,
            definitions: OnceCell::new(),
            application_masks: OnceCell::new(),
            schemas: OnceCell::new(),
            instance_types: OnceCell::new(),
            governing: RefCell::new(HashMap::new()),
            charges: RefCell::new(HashMap::new()),
            owners: RefCell::new(HashMap::new()),
            listings: RefCell::new(BTreeMap::new()),
            broad: OnceCell::new(),
            summaries: RefCell::new(HashMap::new()),
            whole: Cell::new(false),
        })
    }

    /// The release prefix of `kind`'s definition, `None` when no single definition declares it.
    fn release_prefix(&self, kind: &str) -> Option<&str> {
        let all = self.definitions().ok()?;
        match all.by_kind.get(kind).map(Vec::as_slice) {
            Some([one]) => Some(all.list[*one].spec.release.prefix.as_str()),
            _ => None,
        }
    }

    /// The Tenant definition's release prefix: tenants cannot be placed without it.
    fn tenant_prefix(&self) -> Result<&str, ContextError> {
        if let Err(e) = self.definitions() {
            return Err(ContextError::Definitions(e.clone()));
        }
        self.release_prefix(TENANT_KIND)
            .ok_or(ContextError::NoTenantDefinition)
    }

    fn definitions(&self) -> Result<&Definitions, ChargeError> {
        self.definitions
            .get_or_init(|| {
                let answer = cluster::list_fixed(self.k8s, &Lookup::Definitions)?;
                let list = cluster::parse_definitions(&answer)?;
                let mut by_kind: HashMap<String, Vec<usize>> = HashMap::new();
                for (index, d) in list.iter().enumerate() {
                    by_kind
                        .entry(d.spec.application.kind.clone())
                        .or_default()
                        .push(index);
                }
                Ok(Definitions { list, by_kind })
            })
            .as_ref()
            .map_err(|e| ChargeError::DefinitionsUnreadable(e.to_string()))
    }

    /// The field masks of the applications' lists: pruned to what the definitions read (the
    /// whole values if they are unreadable).
    fn application_masks(&self) -> &BTreeSet<String> {
        self.application_masks.get_or_init(|| {
            let definitions = self.definitions().ok().map(|d| d.list.as_slice());
            cluster::application_masks(definitions, &self.settings.reservations)
        })
    }

    /// The definition governing `kind`, ready to evaluate (prepared once per request, its
    /// schema read then).
    pub(crate) fn governing(&self, kind: &str) -> Result<Rc<Governing>, ChargeError> {
        if let Some(known) = self.governing.borrow().get(kind) {
            return known.clone();
        }
        let prepared = self.definitions().and_then(|all| {
            let declaring = all.by_kind.get(kind).map(Vec::as_slice).unwrap_or_default();
            let fallback = self.settings.reservations.get(kind);
            Governing::of_kind(
                kind,
                declaring.iter().map(|&i| &all.list[i]),
                fallback,
                |d| self.schema(d),
            )
            .map(Rc::new)
        });
        self.governing
            .borrow_mut()
            .insert(kind.to_string(), prepared.clone());
        prepared
    }

    /// `definition`'s `openAPISchema`, from the one list of every schema.
    fn schema(
        &self,
        definition: &ApplicationDefinition,
    ) -> Result<Option<Box<serde_json::value::RawValue>>, ChargeError> {
        let name = &definition.metadata.name;
        let unanswered = |reason: String| ChargeError::SchemaUnanswered {
            definition: name.clone(),
            reason,
        };
        let all = self.schemas.get_or_init(|| {
            cluster::list_fixed(self.k8s, &Lookup::Schemas)
                .and_then(|answer| cluster::parse_schemas(&answer))
                .map_err(|e| e.to_string())
        });
        match all {
            Ok(schemas) => schemas
                .get(name)
                .cloned()
                .ok_or_else(|| unanswered("the definition is no longer listed".to_string())),
            Err(reason) => Err(unanswered(reason.clone())),
        }
    }

    /// What one application of `kind` with `values` reserves. `Ok(None)`: the kind is exempt
    /// or (with `requireReservation: false`) has no reservation block.
    pub(crate) fn charge(&self, governing: &Governing, kind: &str, values: &Value) -> Charge {
        if self.settings.exempt_kinds.contains(kind) {
            return Ok(None);
        }
        if governing.reservation.is_none() && self.settings.require_reservation {
            return Err(ChargeError::NoReservation {
                definition: governing.definition_name.clone(),
                kind: kind.into(),
            });
        }
        governing.charge(values, &self.sizing())
    }

    fn sizing(&self) -> Sizing<'_> {
        Sizing {
            presets: &self.presets,
            instance_types: self,
            gpu_device_classes: &self.settings.gpu_device_classes,
        }
    }

    /// What a write of `kind` reserves with `values`, and reserved with `old_values` (on
    /// UPDATE), by the definition governing the kind: the subject's charge, in one call.
    pub(crate) fn charge_write(
        &self,
        kind: &str,
        values: &Value,
        old_values: Option<&Value>,
    ) -> Result<WriteCharge, ChargeError> {
        let governing = self.governing(kind)?;
        let new = self.charge(&governing, kind, values)?;
        let old = match (&new, old_values) {
            (Some(_), Some(old)) => Some(self.charge(&governing, kind, old)),
            _ => None,
        };
        Ok(WriteCharge {
            governing,
            new,
            old,
        })
    }

    /// What one application of `kind` with `values` reserves, as the policy charges it;
    /// `Ok(None)` when the kind reserves nothing. For tests, fuzzers and tools.
    pub fn charge_kind(&self, kind: &str, values: &Value) -> Result<Option<Resources>, String> {
        let governing = self.governing(kind).map_err(|e| e.to_string())?;
        self.charge(&governing, kind, values)
            .map_err(|e| e.to_string())
    }

    /// What one stored application reserves (evaluated once per request for all the
    /// applications of its kind with the same values).
    fn stored_charge(&self, app: &Application) -> Charge {
        let values = app.values.as_ref().map_or("", |v| v.get());
        self.cached_charge(&app.kind, values, || {
            let parsed: Value = match &app.values {
                Some(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| ChargeError::ValuesNotJson(e.to_string()))?,
                None => Value::Null,
            };
            Ok(parsed)
        })
    }

    /// The charge of `kind` at the values whose text is `text`, computed once per request
    /// (`values` parses them on first use): a charge depends on nothing else.
    fn cached_charge(
        &self,
        kind: &str,
        text: &str,
        values: impl FnOnce() -> Result<Value, ChargeError>,
    ) -> Charge {
        if let Some(known) = self
            .charges
            .borrow()
            .get(kind)
            .and_then(|by_values| by_values.get(text))
        {
            return known.clone();
        }
        let charge = self
            .governing(kind)
            .and_then(|g| self.charge(&g, kind, &values()?));
        self.charges
            .borrow_mut()
            .entry(kind.into())
            .or_default()
            .insert(text.into(), charge.clone());
        charge
    }

    /// Sums, for each pool, what its member applications reserve of its key, and the modules
    /// their tenants bring that have no release yet, except `skip` ones (the pools' keys are
    /// distinct). Those that cannot be evaluated are returned by label with the reason. The
    /// pools' namespaces are read in name order.
    pub(crate) fn usage(
        &self,
        pools: &[Pool<'_>],
        skip: impl Fn(Held<'_>) -> bool,
    ) -> Result<(Usage, Unevaluable), ContextError> {
        self.usage_keeping(pools, skip, Usage::default())
    }

    /// What one module of `kind` with `values` reserves (evaluated once per request).
    fn module_charge(&self, kind: &str, values: &Value) -> Charge {
        self.cached_charge(kind, &values.to_string(), || Ok(values.clone()))
    }

    /// [`Context::usage`], added to `usage` (which says how many largest holders it keeps).
    pub(crate) fn usage_keeping(
        &self,
        pools: &[Pool<'_>],
        skip: impl Fn(Held<'_>) -> bool,
        mut usage: Usage,
    ) -> Result<(Usage, Unevaluable), ContextError> {
        let mut membership: BTreeMap<&str, (&Tenant, Vec<bool>)> = BTreeMap::new();
        for (i, pool) in pools.iter().enumerate() {
            for &owner in &pool.members {
                membership
                    .entry(owner.owns.as_str())
                    .or_insert_with(|| (owner, vec![false; pools.len()]))
                    .1[i] = true;
            }
        }
        let mut problems = Unevaluable::default();
        for (namespace, (owner, member)) in membership {
            let keys: Vec<&str> = pools
                .iter()
                .zip(&member)
                .filter(|(_, m)| **m)
                .map(|(pool, _)| pool.key.as_str())
                .collect();
            self.holdings(
                namespace,
                owner,
                &skip,
                &mut problems,
                |reserved, label, module| {
                    for key in &keys {
                        usage
                            .add_key(key, reserved.get(key), label)
                            .map_err(|_| ContextError::ReservationsOverflow)?;
                    }
                    if let Some(module) = module
                        && keys.iter().any(|key| reserved.get(key).is_positive())
                    {
                        usage.pending.insert(module.label());
                    }
                    Ok(())
                },
            )?;
        }
        Ok((usage, problems))
    }

    /// What the holders of `namespace` reserve, per key they hold: one share per key, as a
    /// pool summary keeps them (`crate::summary`). Its problems as [`Context::usage`] finds them.
    pub(crate) fn shares(
        &self,
        namespace: &str,
        owner: &Tenant,
    ) -> Result<(BTreeMap<String, Share>, Unevaluable), ContextError> {
        let mut usage = Usage::default();
        let mut pending: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut problems = Unevaluable::default();
        self.holdings(
            namespace,
            owner,
            &|_| false,
            &mut problems,
            |reserved, label, module| {
                for (key, q) in reserved.iter() {
                    usage
                        .add_key(key, q, label)
                        .map_err(|_| ContextError::ReservationsOverflow)?;
                    if let Some(module) = module
                        && q.is_positive()
                    {
                        pending
                            .entry(key.to_string())
                            .or_default()
                            .insert(module.label());
                    }
                }
                Ok(())
            },
        )?;
        let shares = usage
            .reserved
            .iter()
            .map(|(key, _)| {
                let pending = pending.remove(key).unwrap_or_default();
                (key.to_string(), usage.share(key, pending))
            })
            .collect();
        Ok((shares, problems))
    }

    /// Each holder of `namespace` (owned by `owner`) but the `skip` ones, passed to `hold`
    /// with what it reserves, its label and, for a module the tenant chart will create, the
    /// module: the applications as listed, then the modules without a release. Those that
    /// cannot be evaluated go to `problems`.
    fn holdings(
        &self,
        namespace: &str,
        owner: &Tenant,
        skip: &dyn Fn(Held<'_>) -> bool,
        problems: &mut Unevaluable,
        mut hold: impl FnMut(
            &Resources,
            &dyn Fn() -> String,
            Option<&PendingModule>,
        ) -> Result<(), ContextError>,
    ) -> Result<(), ContextError> {
        let listing = self.listing(namespace)?;
        for app in &listing.applications {
            let held = Held {
                kind: &app.kind,
                namespace: &app.namespace,
                name: &app.name,
                pending: false,
            };
            if *app.kind == *TENANT_KIND
                || self.settings.exempt_kinds.contains(&*app.kind)
                || skip(held)
            {
                continue;
            }
            match self.stored_charge(app) {
                Ok(Some(charge)) => hold(&charge, &|| app.label(), None)?,
                Ok(None) => {}
                Err(e) if app.module => problems.modules.push(format!("{}: {e}", app.label())),
                Err(e) => problems.applications.push(format!("{}: {e}", app.label())),
            }
        }
        match self.pending_in(&owner.values, namespace, &listing) {
            Ok(modules) => {
                for module in &modules.parts {
                    let held = Held {
                        kind: &module.kind,
                        namespace,
                        name: &module.name,
                        pending: true,
                    };
                    if skip(held) {
                        continue;
                    }
                    hold(&module.reserved, &|| module.holder(), Some(module))?;
                }
                problems.modules.extend(modules.unevaluable);
                Ok(())
            }
            Err(ModulesError::Cluster(e)) => Err(e),
            Err(ModulesError::Unevaluable(e)) => {
                problems.modules.push(format!(
                    "the modules of the Tenant owning {namespace} (pending releases): {e}"
                ));
                Ok(())
            }
        }
    }
}

impl InstanceTypes for Context<'_> {
    fn lookup(&self, name: &str) -> Result<Option<InstanceTypeSize>, String> {
        // A name no object can have is not asked for.
        if !is_object_name(name) {
            return Ok(None);
        }
        let all = self.instance_types.get_or_init(|| {
            cluster::list_fixed(self.k8s, &Lookup::InstanceTypes)
                .and_then(|answer| cluster::parse_instance_types(&answer))
                .map_err(|e| format!("cannot read the instance types: {e}"))
        });
        match all {
            Ok(sizes) => sizes.get(name).cloned().transpose(),
            Err(e) => Err(e.clone()),
        }
    }
}

/// A DNS-1123 subdomain, as the name of every cluster-scoped object is.
fn is_object_name(name: &str) -> bool {
    let alphanumeric = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    !name.is_empty()
        && name.len() <= 253
        && name.starts_with(alphanumeric)
        && name.ends_with(alphanumeric)
        && name
            .chars()
            .all(|c| alphanumeric(c) || c == '-' || c == '.')
}
