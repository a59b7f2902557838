//! One admission request, start to verdict: read what the cluster holds, evaluate the
//! object and its pool, decide. Generic over [`Kubernetes`], so it runs natively in tests.

use std::cell::{OnceCell, RefCell};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

use kubewarden_policy_sdk::request::KubernetesAdmissionRequest;
use serde_json::{Map, Value};

use crate::cluster::{self, Application, Kubernetes, Query};
use crate::decision::{self, PoolState, Usage};
use crate::definition::{ApplicationDefinition, Governing};
use crate::evaluate::{self, EvalError, InstanceTypeSize, InstanceTypes, Sizing, describe};
use crate::pool::{Budget, Tenancy, Tenant, owned_namespace};
use crate::presets::Presets;
use crate::quantity::Quantity;
use crate::resources::Resources;
use crate::settings::{Settings, SiblingFailure};
use crate::tenant_gate;
use crate::values::Cursor;

pub const GROUP: &str = "apps.cozystack.io";
pub const TENANT_KIND: &str = "Tenant";
/// The field of a Tenant's values that declares its quota.
pub const RESOURCE_QUOTAS: &str = "resourceQuotas";

/// The policy's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub allowed: bool,
    pub message: Option<String>,
    pub warnings: Vec<String>,
}

impl Verdict {
    pub fn accept(warnings: Vec<String>) -> Self {
        Verdict {
            allowed: true,
            message: None,
            warnings,
        }
    }

    pub fn reject(message: String, warnings: Vec<String>) -> Self {
        Verdict {
            allowed: false,
            message: Some(message),
            warnings,
        }
    }
}

/// What is being written.
pub struct Subject<'r> {
    pub kind: &'r str,
    pub namespace: &'r str,
    pub name: &'r str,
    pub values: &'r Value,
    /// The previous values, on UPDATE.
    pub old_values: Option<&'r Value>,
}

impl Subject<'_> {
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    fn is(&self, app: &Application) -> bool {
        *app.kind == *self.kind && *app.namespace == *self.namespace && app.name == self.name
    }
}

/// A missing `spec`: every value takes its default.
static EMPTY: Value = Value::Null;

/// Decides one admission request.
pub fn review(
    request: &KubernetesAdmissionRequest,
    settings: &Settings,
    k8s: &dyn Kubernetes,
) -> Verdict {
    let update = match request.operation.as_str() {
        "CREATE" => false,
        "UPDATE" => true,
        "DELETE" | "CONNECT" => return Verdict::accept(Vec::new()),
        other => {
            return Verdict::reject(
                format!("unsupported admission operation {other:?}"),
                Vec::new(),
            );
        }
    };
    if !request.sub_resource.is_empty() {
        // A subresource write (status) cannot change the values a reservation reads.
        return Verdict::accept(Vec::new());
    }
    let kind = request.kind.kind.as_str();
    if request.kind.group != GROUP {
        return Verdict::accept(vec![format!(
            "{}/{} {kind} is not an {GROUP} application: this policy does not check it",
            request.kind.group, request.kind.version
        )]);
    }
    let object = match &request.object {
        Value::Object(o) => o,
        other => {
            return Verdict::reject(
                format!(
                    "{kind}: the admission request carries no object (found {})",
                    describe(other)
                ),
                Vec::new(),
            );
        }
    };
    let name = object
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or(&request.name);
    let namespace = if request.namespace.is_empty() {
        object
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .unwrap_or("")
    } else {
        request.namespace.as_str()
    };
    if namespace.is_empty() {
        return Verdict::reject(
            format!("{kind} {name}: an application must have a namespace"),
            Vec::new(),
        );
    }
    let values = match spec_of(object) {
        Ok(v) => v,
        Err(e) => return Verdict::reject(format!("{kind} {namespace}/{name}: {e}"), Vec::new()),
    };
    let old_values = if update {
        match &request.old_object {
            Value::Object(old) => match spec_of(old) {
                Ok(v) => Some(v),
                Err(e) => {
                    return Verdict::reject(
                        format!("{kind} {namespace}/{name}: the previous version's {e}"),
                        Vec::new(),
                    );
                }
            },
            _ => {
                return Verdict::reject(
                    format!(
                        "{kind} {namespace}/{name}: an UPDATE without oldObject cannot be checked for growth"
                    ),
                    Vec::new(),
                );
            }
        }
    } else {
        None
    };
    let subject = Subject {
        kind,
        namespace,
        name,
        values,
        old_values,
    };
    let context = match Context::new(settings, k8s) {
        Ok(c) => c,
        Err(e) => return Verdict::reject(e, Vec::new()),
    };
    if kind == TENANT_KIND {
        tenant_gate::review(&subject, &context)
    } else {
        review_application(&subject, &context)
    }
}

fn spec_of(object: &Map<String, Value>) -> Result<&Value, String> {
    match object.get("spec") {
        None | Some(Value::Null) => Ok(&EMPTY),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(other) => Err(format!("spec must be an object, not {}", describe(other))),
    }
}

type InstanceTypeTable = BTreeMap<String, Result<InstanceTypeSize, String>>;

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

fn fixed_masks(query: Query) -> BTreeSet<String> {
    query
        .fixed_field_masks()
        .iter()
        .map(|m| m.to_string())
        .collect()
}

/// The settings in force and the cluster as read for this request (each list read once, on
/// first use, in a fixed order).
pub struct Context<'k> {
    pub settings: &'k Settings,
    presets: Presets,
    k8s: &'k dyn Kubernetes,
    applications: OnceCell<Result<Applications, String>>,
    definitions: OnceCell<Result<Definitions, String>>,
    instance_types: OnceCell<Result<InstanceTypeTable, String>>,
    governing: RefCell<HashMap<String, Result<Rc<Governing>, String>>>,
    charges: RefCell<HashMap<usize, Result<Option<Resources>, String>>>,
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

    pub fn applications(&self) -> Result<&[Application], String> {
        self.stored().map(|a| a.list.as_slice())
    }

    fn stored(&self) -> Result<&Applications, String> {
        self.applications
            .get_or_init(|| {
                // Pruned to what the definitions read (the whole values if they are unreadable).
                let masks = cluster::application_masks(self.definition_list());
                let list = cluster::parse_applications(
                    &self.k8s.list(Query::Applications, Some(&masks))?,
                )?;
                Ok(Applications::new(list))
            })
            .as_ref()
            .map_err(|e| format!("cannot read the applications: {e}"))
    }

    /// Every Tenant, from the stored applications.
    pub fn tenancy(&self) -> Result<Tenancy, String> {
        let tenants = self
            .applications()?
            .iter()
            .filter(|a| *a.kind == *TENANT_KIND)
            .map(|a| {
                let values = a.values.as_ref().map_or("{}", |v| v.get());
                let parsed = serde_json::from_str::<Value>(values)
                    .map_err(|e| format!("{}: spec.values is not valid JSON: {e}", a.label()));
                tenant_from(&a.name, &a.namespace, parsed.as_ref(), self.settings)
            })
            .collect();
        Ok(Tenancy::new(tenants))
    }

    fn definitions(&self) -> Result<&Definitions, String> {
        self.definitions
            .get_or_init(|| {
                let masks = fixed_masks(Query::Definitions);
                let list =
                    cluster::parse_definitions(&self.k8s.list(Query::Definitions, Some(&masks))?)?;
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
            .map_err(|e| format!("cannot read the ApplicationDefinitions: {e}"))
    }

    /// Every definition, `None` when they cannot be read.
    fn definition_list(&self) -> Option<&[ApplicationDefinition]> {
        self.definitions().ok().map(|d| d.list.as_slice())
    }

    /// The definition governing `kind`, ready to evaluate (prepared once per request).
    pub fn governing(&self, kind: &str) -> Result<Rc<Governing>, String> {
        if let Some(known) = self.governing.borrow().get(kind) {
            return known.clone();
        }
        let prepared = self.prepare(kind).map(Rc::new);
        self.governing
            .borrow_mut()
            .insert(kind.to_string(), prepared.clone());
        prepared
    }

    fn prepare(&self, kind: &str) -> Result<Governing, String> {
        let all = self.definitions()?;
        let definitions: Vec<&ApplicationDefinition> = all
            .by_kind
            .get(kind)
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .map(|&i| &all.list[i])
            .collect();
        match definitions.as_slice() {
            [] => Err(format!("no ApplicationDefinition declares kind {kind}")),
            [one] => one.prepare(),
            many => {
                let names: Vec<&str> = many.iter().map(|d| d.metadata.name.as_str()).collect();
                Err(format!(
                    "kind {kind} is declared by {} ApplicationDefinitions ({})",
                    many.len(),
                    names.join(", ")
                ))
            }
        }
    }

    fn sizing(&self) -> Sizing<'_> {
        Sizing {
            presets: &self.presets,
            instance_types: self,
            gpu_device_classes: &self.settings.gpu_device_classes,
        }
    }

    /// What one application of `kind` with `values` reserves. `Ok(None)`: the kind is exempt
    /// or (with `requireReservation: false`) declares no reservation.
    pub fn charge(
        &self,
        governing: &Governing,
        kind: &str,
        values: &Value,
    ) -> Result<Option<Resources>, String> {
        if self.settings.exempt_kinds.contains(kind) {
            return Ok(None);
        }
        let Some(reservation) = &governing.reservation else {
            if self.settings.require_reservation {
                return Err(format!(
                    "ApplicationDefinition {} declares no spec.reservation, and {kind} is not in the exemptKinds setting",
                    governing.definition_name
                ));
            }
            return Ok(None);
        };
        let cursor = Cursor::new(values, governing.schema.root());
        evaluate::evaluate(reservation, cursor, &self.sizing())
            .map(Some)
            .map_err(|e: EvalError| e.to_string())
    }

    /// What one stored application reserves (evaluated once per request for all the
    /// applications of its kind with the same values).
    fn stored_charge(&self, index: usize, app: &Application) -> Result<Option<Resources>, String> {
        let index = self.stored()?.same_as[index];
        if let Some(known) = self.charges.borrow().get(&index) {
            return known.clone();
        }
        let charge = self.governing(&app.kind).and_then(|g| {
            let values: Value = match &app.values {
                Some(raw) => serde_json::from_str(raw.get())
                    .map_err(|e| format!("spec.values is not valid JSON: {e}"))?,
                None => Value::Null,
            };
            self.charge(&g, &app.kind, &values)
        });
        self.charges.borrow_mut().insert(index, charge.clone());
        charge
    }

    /// Sums, for each `(key, pool root)`, what the applications whose namespace belongs to that
    /// root's pool for that key reserve, except `skip` ones. Those that cannot be evaluated are
    /// returned by label with the reason.
    pub fn usage(
        &self,
        tenancy: &Tenancy,
        pools: &[(String, String)],
        skip: impl Fn(&Application) -> bool,
    ) -> Result<(Usage, Vec<String>), String> {
        let mut usage = Usage::default();
        let mut problems = Vec::new();
        let mut membership: HashMap<&str, Vec<bool>> = HashMap::new();
        for (index, app) in self.applications()?.iter().enumerate() {
            if *app.kind == *TENANT_KIND
                || self.settings.exempt_kinds.contains(&*app.kind)
                || skip(app)
            {
                continue;
            }
            let member = membership.entry(&*app.namespace).or_insert_with(|| {
                pools
                    .iter()
                    .map(|(key, root)| {
                        tenancy
                            .root_for(&app.namespace, key)
                            .is_some_and(|r| &r.owns == root)
                    })
                    .collect()
            });
            if !member.iter().any(|m| *m) {
                continue;
            }
            match self.stored_charge(index, app) {
                Ok(Some(charge)) => {
                    for ((key, _), _) in pools.iter().zip(member.iter()).filter(|(_, m)| **m) {
                        usage
                            .add_key(key, charge.get(key))
                            .map_err(|_| "the reservations of the pool overflow".to_string())?;
                    }
                }
                Ok(None) => {}
                Err(e) => problems.push(format!("{}: {e}", app.label())),
            }
        }
        Ok((usage, problems))
    }

    /// Applies `siblingFailure` to problems with other objects: `Err` (deny) or warnings.
    pub fn sibling_problems(
        &self,
        subject: &str,
        pool: &str,
        problems: Vec<String>,
        warnings: &mut Vec<String>,
    ) -> Result<(), String> {
        if problems.is_empty() {
            return Ok(());
        }
        match self.settings.sibling_failure {
            SiblingFailure::Deny => Err(format!(
                "{subject}: pool {pool} cannot be checked, {} other object{} cannot be evaluated (siblingFailure: deny): {}",
                problems.len(),
                if problems.len() == 1 { "" } else { "s" },
                problems.join("; ")
            )),
            SiblingFailure::Warn => {
                warnings.extend(
                    problems
                        .into_iter()
                        .map(|p| format!("counted as zero in pool {pool}: {p}")),
                );
                Ok(())
            }
        }
    }
}

impl InstanceTypes for Context<'_> {
    fn lookup(&self, name: &str) -> Result<Option<InstanceTypeSize>, String> {
        let types = self
            .instance_types
            .get_or_init(|| {
                let masks = fixed_masks(Query::InstanceTypes);
                cluster::parse_instance_types(&self.k8s.list(Query::InstanceTypes, Some(&masks))?)
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

/// A Tenant's place in the tree and its declared quota, read leniently: an unreadable quota
/// is kept as an error for whoever needs it, and still bounds (fail closed).
pub fn tenant_from(
    name: &str,
    namespace: &str,
    values: Result<&Value, &String>,
    settings: &Settings,
) -> Tenant {
    let declared = values
        .map_err(String::clone)
        .and_then(|v| declared_quota(v).map_err(|errors| errors.join("; ")));
    let label = format!("Tenant {namespace}/{name}");
    let bounded = match &declared {
        Ok(pairs) => !pairs.is_empty(),
        Err(_) => true,
    };
    Tenant {
        name: name.to_string(),
        namespace: namespace.to_string(),
        owns: owned_namespace(name, namespace),
        quota: declared
            .map(|pairs| {
                Budget::from_declared(pairs.iter().map(|(k, q)| (k.as_str(), *q)), settings)
            })
            .map_err(|e| format!("{label}: {e}")),
        bounded,
    }
}

/// `resourceQuotas` as `(key, quantity)` pairs, or every problem found in it.
pub fn declared_quota(values: &Value) -> Result<Vec<(String, Quantity)>, Vec<String>> {
    let quotas = match values.get(RESOURCE_QUOTAS) {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Object(map)) => map,
        Some(other) => {
            return Err(vec![format!(
                "spec.resourceQuotas must be a map, not {}",
                describe(other)
            )]);
        }
    };
    let mut pairs = Vec::with_capacity(quotas.len());
    let mut errors = Vec::new();
    for (key, v) in quotas {
        let text = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                errors.push(format!(
                    "spec.resourceQuotas.{key} must be a quantity, not {}",
                    describe(other)
                ));
                continue;
            }
        };
        match Quantity::parse_non_negative(&text) {
            Ok(q) => pairs.push((key.clone(), q)),
            Err(e) => errors.push(format!("spec.resourceQuotas.{key}: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(errors)
    }
}

/// An application write (any kind but Tenant).
fn review_application(subject: &Subject<'_>, context: &Context<'_>) -> Verdict {
    let label = subject.label();
    let mut warnings = Vec::new();
    let tenancy = match context.tenancy() {
        Ok(t) => t,
        Err(e) => return Verdict::reject(format!("{label}: {e}"), warnings),
    };
    if tenancy.pool_root(subject.namespace).is_none()
        || context.settings.exempt_kinds.contains(subject.kind)
    {
        return Verdict::accept(warnings);
    }
    let governing = context.governing(subject.kind);
    let charges = governing.and_then(|g| {
        let new = context.charge(&g, subject.kind, subject.values)?;
        let old = subject
            .old_values
            .map(|old| context.charge(&g, subject.kind, old));
        Ok((new, old))
    });
    let (new, old) = match charges {
        Ok((None, _)) => return Verdict::accept(warnings),
        Ok((Some(new), old)) => (new, old),
        Err(e) => return Verdict::reject(format!("{label} cannot be evaluated: {e}"), warnings),
    };
    let old = match old {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(old))) => Some(old),
        Some(Err(e)) => {
            // Charged as if it were new: the safe reading of an unknown previous size.
            warnings.push(format!(
                "{label}: the previous version cannot be evaluated ({e}); the whole new reservation is checked"
            ));
            Some(Resources::new())
        }
    };
    // Each growing key is checked in its own pool: the nearest tenant that bounds it.
    let mut by_root: BTreeMap<String, Vec<(String, Quantity)>> = BTreeMap::new();
    for (key, q) in new.iter() {
        let before = old.as_ref().map_or(Quantity::ZERO, |o| o.get(key));
        if q <= before {
            continue;
        }
        let Some(root) = tenancy.root_for(subject.namespace, key) else {
            continue;
        };
        let budget = match &root.quota {
            Ok(b) => b.get(key).unwrap_or(Quantity::ZERO),
            Err(e) => {
                return Verdict::reject(
                    format!(
                        "{label}: the budget of pool {} cannot be read: {e}",
                        root.owns
                    ),
                    warnings,
                );
            }
        };
        by_root
            .entry(root.owns.clone())
            .or_default()
            .push((key.to_string(), budget));
    }
    if by_root.is_empty() {
        return Verdict::accept(warnings);
    }
    let pools: Vec<(String, String)> = by_root
        .iter()
        .flat_map(|(root, keys)| keys.iter().map(move |(k, _)| (k.clone(), root.clone())))
        .collect();
    let mut problems = Vec::new();
    let (usage, more) = match context.usage(&tenancy, &pools, |app| subject.is(app)) {
        Ok(u) => u,
        Err(e) => return Verdict::reject(format!("{label}: {e}"), warnings),
    };
    let mut violations = Vec::new();
    for (root, keys) in &by_root {
        let budget: Budget = keys.iter().cloned().collect();
        let carved = match tenancy.carved(root, &budget, None, &mut problems) {
            Ok(c) => c,
            Err(_) => {
                return Verdict::reject(
                    format!("{label}: the carve-outs of pool {root} overflow"),
                    warnings,
                );
            }
        };
        let state = PoolState {
            name: root,
            budget: &budget,
            carved: &carved,
            usage: &usage,
        };
        violations.extend(decision::violations(&state, &new, old.as_ref()));
    }
    problems.extend(more);
    let pool_names: Vec<&str> = by_root.keys().map(String::as_str).collect();
    if let Err(e) =
        context.sibling_problems(&label, &pool_names.join(", "), problems, &mut warnings)
    {
        return Verdict::reject(e, warnings);
    }
    if violations.is_empty() {
        Verdict::accept(warnings)
    } else {
        Verdict::reject(format!("{label}: {}", violations.join("; ")), warnings)
    }
}

#[cfg(test)]
#[path = "admission_tests.rs"]
mod tests;
