//! What a Tenant brings besides its declaration: the modules the tenant chart renders from
//! its values as releases of their own in the namespace it owns (Etcd, Ingress, Monitoring,
//! ...), declared by the `implies` of the Tenant kind's block.
//!
//! helm-controller creates those releases after the Tenant is stored, and possibly much later
//! (the tenant chart's render fails while a module's package is missing), with no admission.
//! So a module is charged from the moment its Tenant is stored, in the pools of the namespace
//! it will land in, at the values its entry gives (its kind's defaults: the chart passes
//! none), until its release exists; from then on the release is charged like any
//! application, never both. Every write reads it here: the application gate and the ledger
//! through [`Context::usage`], the Tenant gate for the Tenant it writes.

use serde_json::Value;

use super::{Context, ContextError, Listing};
use crate::charge::ChargeError;
use crate::keys::TENANT_KIND;
use crate::quantity::Quantity;
use crate::resources::Resources;

/// The modules a Tenant's values switch on whose releases do not exist yet.
#[derive(Debug, Default)]
pub struct Modules {
    /// Each module that reserves something, and what it reserves.
    pub parts: Vec<PendingModule>,
    /// Their sum.
    pub total: Resources,
    /// Modules that cannot be evaluated: counted as zero, with a warning.
    pub unevaluable: Vec<String>,
}

/// One module release the tenant chart will create.
#[derive(Debug)]
pub struct PendingModule {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub reserved: Resources,
}

impl PendingModule {
    /// `Etcd tenant-x/etcd`, as an application is named.
    pub fn label(&self) -> String {
        format!("{} {}/{}", self.kind, self.namespace, self.name)
    }

    /// As a holder of a pool: marked, so that nobody looks for it among the releases.
    pub fn holder(&self) -> String {
        format!("{} (pending release)", self.label())
    }
}

/// Why the modules of a Tenant cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ModulesError {
    #[error(transparent)]
    Unevaluable(#[from] ChargeError),
    #[error(transparent)]
    Cluster(#[from] ContextError),
}

impl Modules {
    /// What they reserve of `key`.
    pub fn of(&self, key: &str) -> Quantity {
        self.total.get(key)
    }

    /// The modules that reserve `key`, for messages.
    pub fn names(&self, key: &str) -> String {
        let names: Vec<String> = self
            .parts
            .iter()
            .filter(|m| m.reserved.get(key).is_positive())
            .map(PendingModule::label)
            .collect();
        names.join(", ")
    }
}

impl Context<'_> {
    /// The modules a Tenant with `values` switches on in `owned` that have no release there
    /// yet (`owned` is listed for it, once per request).
    pub(crate) fn pending_modules(
        &self,
        values: &Value,
        owned: &str,
    ) -> Result<Modules, ModulesError> {
        let stored = self.listing(owned)?;
        self.pending_in(values, owned, &stored)
    }

    /// [`Context::pending_modules`], with the owned namespace as listed.
    pub(super) fn pending_in(
        &self,
        values: &Value,
        owned: &str,
        stored: &Listing,
    ) -> Result<Modules, ModulesError> {
        let tenant = self.governing(TENANT_KIND)?;
        let mut modules = Modules::default();
        for module in tenant.implied(values)? {
            let exists = stored
                .applications
                .iter()
                .any(|app| *app.kind == *module.kind && app.name == module.name);
            if exists || self.settings.exempt_kinds.contains(&module.kind) {
                continue;
            }
            let pending = |reserved| PendingModule {
                kind: module.kind.clone(),
                namespace: owned.to_string(),
                name: module.name.clone(),
                reserved,
            };
            match self.module_charge(&module.kind, &module.values) {
                Ok(Some(reserved)) if !reserved.is_empty() => {
                    modules
                        .total
                        .add_all(&reserved)
                        .map_err(|_| ContextError::ReservationsOverflow)?;
                    modules.parts.push(pending(reserved));
                }
                Ok(_) => {}
                Err(e) => modules.unevaluable.push(format!(
                    "{} (pending release): {e}",
                    pending(Resources::new()).label()
                )),
            }
        }
        Ok(modules)
    }
}
