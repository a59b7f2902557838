//! The cluster as one request sees it: each list read once, on first use, in a fixed order
//! (definitions, then applications, then instance types: kwctl's session replay needs a
//! deterministic sequence), and each charge computed once.
//!
//! The definitions come first because they say which fields of the applications' values the
//! policy reads, and so which field masks the host can prune the HelmReleases to.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::Value;

use crate::charge::definition::ApplicationDefinition;
use crate::charge::evaluate::{InstanceTypeSize, InstanceTypes, Sizing};
use crate::charge::presets::Presets;
use crate::charge::{ChargeError, Governing};
use crate::cluster::{self, Application, ClusterError, Kubernetes, Query};
use crate::decision::Usage;
use crate::keys::TENANT_KIND;
use crate::pool::{Pool, Tenancy, is_tenant_name, stored_tenant};
use crate::resources::Resources;
use crate::settings::Settings;

/// Why the cluster view cannot answer.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ContextError {
    #[error("cannot read the applications: {0}")]
    Applications(ClusterError),
    /// Tenants are placed by their definition's release prefix: without it, fail closed.
    #[error("{0}")]
    Definitions(ChargeError),
    #[error("no single ApplicationDefinition declares kind Tenant, so tenants cannot be placed")]
    NoTenantDefinition,
    #[error("the reservations of the pool overflow")]
    ReservationsOverflow,
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

type InstanceTypeTable = BTreeMap<String, Result<InstanceTypeSize, String>>;

/// The stored Tenant releases that cannot be placed: their namespace and a warning.
pub type Unplaced = Vec<(Rc<str>, String)>;

/// The stored applications, and for each the index of the first one of the same kind with
/// the same values: a charge depends on nothing else, and once pruned by the field masks
/// the values of applications of the same size are the same bytes.
struct Applications {
    list: Vec<Application>,
    same_as: Vec<usize>,
}

impl Applications {
    fn new(list: Vec<Application>) -> Self {
        let mut first: HashMap<(&str, &str), usize> = HashMap::new();
        let same_as = list
            .iter()
            .enumerate()
            .map(|(i, app)| {
                let values = app.values.as_ref().map_or("", |v| v.get());
                *first.entry((&*app.kind, values)).or_insert(i)
            })
            .collect();
        Applications { list, same_as }
    }
}

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
    applications: OnceCell<Result<Applications, ClusterError>>,
    definitions: OnceCell<Result<Definitions, ClusterError>>,
    instance_types: OnceCell<Result<InstanceTypeTable, ClusterError>>,
    governing: RefCell<HashMap<String, Result<Rc<Governing>, ChargeError>>>,
    charges: RefCell<HashMap<usize, Result<Option<Resources>, ChargeError>>>,
}

impl<'k> Context<'k> {
    pub fn new(settings: &'k Settings, k8s: &'k dyn Kubernetes) -> Result<Self, String> {
        Ok(Context {
            settings,
            presets: settings.preset_table()?,
            k8s,
            applications: OnceCell::new(),
            definitions: OnceCell::new(),
            instance_types: OnceCell::new(),
            governing: RefCell::new(HashMap::new()),
            charges: RefCell::new(HashMap::new()),
        })
    }

    pub(crate) fn applications(&self) -> Result<&[Application], ContextError> {
        self.stored().map(|a| a.list.as_slice())
    }

    fn stored(&self) -> Result<&Applications, ContextError> {
        self.applications
            .get_or_init(|| {
                // Pruned to what the definitions read (the whole values if they are unreadable).
                let masks =
                    cluster::application_masks(self.definition_list(), &self.settings.reservations);
                let answer = cluster::list(self.k8s, Query::Applications, &masks)?;
                let list = cluster::parse_applications(&answer, |kind| self.release_prefix(kind))?;
                Ok(Applications::new(list))
            })
            .as_ref()
            .map_err(|e| ContextError::Applications(e.clone()))
    }

    /// Every Tenant, from the stored applications, placed as the tenant chart places them,
    /// and a warning for each stored Tenant release that cannot be placed.
    pub(crate) fn tenancy(&self) -> Result<(Tenancy, Unplaced), ContextError> {
        if let Err(e) = self.definitions() {
            return Err(ContextError::Definitions(e.clone()));
        }
        if self.release_prefix(TENANT_KIND).is_none() {
            return Err(ContextError::NoTenantDefinition);
        }
        let mut unplaced = Vec::new();
        let tenants = self
            .applications()?
            .iter()
            .filter(|a| *a.kind == *TENANT_KIND)
            .filter(|a| {
                let placed = a.prefixed && is_tenant_name(&a.name);
                if !placed {
                    unplaced.push((a.namespace.clone(), format!(
                        "Tenant release {}/{} is ignored: the tenant chart renders only releases named tenant-<name> with no other dash, so it owns no namespace and bounds nothing",
                        a.namespace, a.release
                    )));
                }
                placed
            })
            .map(|a| {
                let values = a.values.as_ref().map_or("{}", |v| v.get());
                let parsed = serde_json::from_str::<Value>(values)
                    .map_err(|e| format!("{}: spec.values is not valid JSON: {e}", a.label()));
                stored_tenant(
                    &a.name,
                    &a.namespace,
                    parsed.as_ref(),
                    &self.settings.quota_key_aliases,
                )
            })
            .collect();
        Ok((Tenancy::new(tenants), unplaced))
    }

    /// The release prefix of `kind`'s definition, `None` when no single definition declares it.
    fn release_prefix(&self, kind: &str) -> Option<&str> {
        let all = self.definitions().ok()?;
        match all.by_kind.get(kind).map(Vec::as_slice) {
            Some([one]) => Some(all.list[*one].spec.release.prefix.as_str()),
            _ => None,
        }
    }

    fn definitions(&self) -> Result<&Definitions, ChargeError> {
        self.definitions
            .get_or_init(|| {
                let masks = cluster::fixed_masks(Query::Definitions);
                let list = cluster::parse_definitions(&cluster::list(
                    self.k8s,
                    Query::Definitions,
                    &masks,
                )?)?;
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

    /// Every definition, `None` when they cannot be read.
    fn definition_list(&self) -> Option<&[ApplicationDefinition]> {
        self.definitions().ok().map(|d| d.list.as_slice())
    }

    /// The definition governing `kind`, ready to evaluate (prepared once per request).
    pub(crate) fn governing(&self, kind: &str) -> Result<Rc<Governing>, ChargeError> {
        if let Some(known) = self.governing.borrow().get(kind) {
            return known.clone();
        }
        let prepared = self.definitions().and_then(|all| {
            let declaring = all.by_kind.get(kind).map(Vec::as_slice).unwrap_or_default();
            let fallback = self.settings.reservations.get(kind);
            Governing::of_kind(kind, declaring.iter().map(|&i| &all.list[i]), fallback).map(Rc::new)
        });
        self.governing
            .borrow_mut()
            .insert(kind.to_string(), prepared.clone());
        prepared
    }

    /// What one application of `kind` with `values` reserves. `Ok(None)`: the kind is exempt
    /// or (with `requireReservation: false`) has no reservation block.
    pub(crate) fn charge(
        &self,
        governing: &Governing,
        kind: &str,
        values: &Value,
    ) -> Result<Option<Resources>, ChargeError> {
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

    /// What one application of `kind` with `values` reserves, as the policy charges it;
    /// `Ok(None)` when the kind reserves nothing. For tests, fuzzers and tools.
    pub fn charge_kind(&self, kind: &str, values: &Value) -> Result<Option<Resources>, String> {
        let governing = self.governing(kind).map_err(|e| e.to_string())?;
        self.charge(&governing, kind, values)
            .map_err(|e| e.to_string())
    }

    /// What one stored application reserves (evaluated once per request for all the
    /// applications of its kind with the same values).
    fn stored_charge(
        &self,
        index: usize,
        app: &Application,
    ) -> Result<Option<Resources>, ChargeError> {
        let index = self.stored().map_or(index, |s| s.same_as[index]);
        if let Some(known) = self.charges.borrow().get(&index) {
            return known.clone();
        }
        let charge = self.governing(&app.kind).and_then(|g| {
            let values: Value = match &app.values {
                Some(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| ChargeError::ValuesNotJson(e.to_string()))?,
                None => Value::Null,
            };
            self.charge(&g, &app.kind, &values)
        });
        self.charges.borrow_mut().insert(index, charge.clone());
        charge
    }

    /// Sums, for each pool, what its member applications reserve of its key, except `skip`
    /// ones (the pools' keys are distinct). Those that cannot be evaluated are returned by
    /// label with the reason.
    pub(crate) fn usage(
        &self,
        pools: &[Pool<'_>],
        skip: impl Fn(&Application) -> bool,
    ) -> Result<(Usage, Unevaluable), ContextError> {
        let mut usage = Usage::default();
        let mut problems = Unevaluable::default();
        let mut membership: HashMap<&str, Vec<bool>> = HashMap::new();
        for (index, app) in self.applications()?.iter().enumerate() {
            if *app.kind == *TENANT_KIND
                || self.settings.exempt_kinds.contains(&*app.kind)
                || skip(app)
            {
                continue;
            }
            let member = membership
                .entry(&*app.namespace)
                .or_insert_with(|| pools.iter().map(|p| p.has_member(&app.namespace)).collect());
            if !member.iter().any(|m| *m) {
                continue;
            }
            match self.stored_charge(index, app) {
                Ok(Some(charge)) => {
                    for (pool, _) in pools.iter().zip(member.iter()).filter(|(_, m)| **m) {
                        usage
                            .add_key(&pool.key, charge.get(&pool.key), || app.label())
                            .map_err(|_| ContextError::ReservationsOverflow)?;
                    }
                }
                Ok(None) => {}
                Err(e) if app.module => problems.modules.push(format!("{}: {e}", app.label())),
                Err(e) => problems.applications.push(format!("{}: {e}", app.label())),
            }
        }
        Ok((usage, problems))
    }
}

impl InstanceTypes for Context<'_> {
    fn lookup(&self, name: &str) -> Result<Option<InstanceTypeSize>, String> {
        let types = self
            .instance_types
            .get_or_init(|| {
                let masks = cluster::fixed_masks(Query::InstanceTypes);
                cluster::parse_instance_types(&cluster::list(
                    self.k8s,
                    Query::InstanceTypes,
                    &masks,
                )?)
            })
            .as_ref()
            .map_err(|e| format!("cannot read the instance types: {e}"))?;
        match types.get(name) {
            None => Ok(None),
            Some(Ok(size)) => Ok(Some(size.clone())),
            Some(Err(e)) => Err(e.clone()),
        }
    }
}
