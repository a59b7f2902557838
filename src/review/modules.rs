//! The tenant modules a Tenant write switches on: the applications the tenant chart creates
//! as releases of their own in the namespace the tenant owns (Etcd, Ingress, Monitoring, ...),
//! declared by the `implies` of the Tenant kind's block.
//!
//! A module is charged here, at the values its entry gives (its kind's defaults: the chart
//! passes none), until its release exists; from then on it is an application of that
//! namespace like any other, so it is never charged twice.

use serde_json::Value;

use super::refusal::Refusal;
use crate::charge::Governing;
use crate::context::Context;
use crate::quantity::Quantity;
use crate::resources::Resources;

/// What the modules a Tenant's values switch on, and that do not exist yet, will reserve.
#[derive(Debug, Default)]
pub(super) struct Modules {
    /// Each module that reserves something, by label, and what it reserves.
    pub parts: Vec<(String, Resources)>,
    /// Their sum.
    pub total: Resources,
    /// Modules that cannot be evaluated: counted as zero, with a warning.
    pub unevaluable: Vec<String>,
}

impl Modules {
    /// What they reserve of `key`.
    pub fn of(&self, key: &str) -> Quantity {
        self.total.get(key)
    }

    /// The modules that reserve `key`, for messages.
    pub fn names(&self, key: &str) -> String {
        let names: Vec<&str> = self
            .parts
            .iter()
            .filter(|(_, r)| r.get(key).is_positive())
            .map(|(label, _)| label.as_str())
            .collect();
        names.join(", ")
    }
}

/// The modules `values` switch on in `owned` that have no release there yet.
pub(super) fn switched_on(
    context: &Context<'_>,
    tenant: &Governing,
    values: &Value,
    owned: &str,
) -> Result<Modules, Refusal> {
    let implied = tenant.implied(values)?;
    let stored = context.listing(owned)?;
    let mut modules = Modules::default();
    for module in implied {
        let exists = stored
            .applications
            .iter()
            .any(|app| *app.kind == *module.kind && app.name == module.name);
        if exists || context.settings.exempt_kinds.contains(&module.kind) {
            continue;
        }
        let label = format!("{} {owned}/{}", module.kind, module.name);
        let charge = context
            .governing(&module.kind)
            .and_then(|g| context.charge(&g, &module.kind, &module.values));
        match charge {
            Ok(Some(reserved)) if !reserved.is_empty() => {
                modules
                    .total
                    .add_all(&reserved)
                    .map_err(|_| Refusal::Overflow("modules' reservations"))?;
                modules.parts.push((label, reserved));
            }
            Ok(_) => {}
            Err(e) => modules
                .unevaluable
                .push(format!("{label} (switched on by this write): {e}")),
        }
    }
    Ok(modules)
}
