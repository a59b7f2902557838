//! The checks of each pool a Tenant write touches, each read from the pool's [`Standing`]: a
//! pool above the child may not grow past its budget, and the child's own pool must cover
//! what its namespaces hold. Each check is recorded for the decision log; the gate then ends
//! as every gate does ([`Outcome`]).

use std::collections::BTreeSet;

use super::scope::{CheckedPools, OwnPool, ParentPool, TenantWrite};
use crate::context::{Context, Held, Unevaluable};
use crate::decision::{self, Declaration, Holding, Record};
use crate::pool::{Pool, Standing, Usage};
use crate::quantity::Quantity;
use crate::resources::Overflow;
use crate::review::outcome::Outcome;
use crate::review::refusal::Refusal;
use crate::review::verdict::Notes;

/// What the pools' applications reserve, read in this order: the pools above before the
/// write, the same after it, and the child's own pools; with what cannot be evaluated.
///
/// Before the write the child's pending modules are its stored version's, counted as any
/// tenant's; after it they are what the write switches on, which the checks add themselves
/// (to name them), so they are left out of the sums after.
pub(super) struct Usages {
    before: Usage,
    after: Usage,
    held: Usage,
    unevaluable: Unevaluable,
}

impl Usages {
    pub(super) fn of(
        context: &Context<'_>,
        pools: &CheckedPools<'_>,
        owns: &str,
    ) -> Result<Usages, Refusal> {
        let childs_modules = |held: Held<'_>| held.pending && held.namespace == owns;
        let before: Vec<Pool<'_>> = pools.parents.iter().map(|p| p.before.clone()).collect();
        let after: Vec<Pool<'_>> = pools.parents.iter().map(|p| p.after.clone()).collect();
        let own: Vec<Pool<'_>> = pools.own.iter().map(|o| o.pool.clone()).collect();
        let (before, mut unevaluable) = context.usage(&before, |_| false)?;
        let (after, more) = context.usage(&after, childs_modules)?;
        unevaluable.absorb(more);
        let (held, more) = context.usage(&own, childs_modules)?;
        unevaluable.absorb(more);
        Ok(Usages {
            before,
            after,
            held,
            unevaluable,
        })
    }
}

/// What the checks found: the records, the violations, and carve-outs whose quota cannot be
/// read.
#[derive(Default)]
pub(super) struct Findings {
    records: Vec<Record>,
    violations: Vec<String>,
    unreadable: Vec<String>,
}

fn overflow(what: &'static str) -> impl Fn(Overflow) -> Refusal {
    move |_| Refusal::Overflow(what)
}

impl TenantWrite<'_> {
    /// A pool above the child, on its key: the write may not grow its load past its budget.
    pub(super) fn check_parent_pool(
        &self,
        parent: &ParentPool<'_>,
        usages: &Usages,
        findings: &mut Findings,
    ) -> Result<(), Refusal> {
        let change = &self.change;
        let key = parent.before.key.as_str();
        let before = parent
            .before
            .standing(parent.budget, None, &usages.before, &mut Vec::new())
            .map_err(overflow("carve-outs"))?;
        let after = parent
            .after
            .standing(
                parent.budget,
                Some(&self.owns),
                &usages.after,
                &mut findings.unreadable,
            )
            .map_err(overflow("carve-outs"))?;
        // Modules land in this pool for the keys the child does not bound (those of its stored
        // version are in `before`'s reservations).
        let landed = match change.new.get(key) {
            None => change.modules.of(key),
            Some(_) => Quantity::ZERO,
        };
        let module_names = change.modules.names(key);
        let declaration = Declaration {
            before,
            after,
            declared: change.new.get(key),
            previous: change.old.as_ref().and_then(|o| o.get(key)),
            modules: landed
                .is_positive()
                .then_some((module_names.as_str(), landed)),
        };
        let violation =
            decision::declaration_violation(&declaration).map_err(overflow("reservations"))?;
        let growth = declaration.growth().map_err(overflow("reservations"))?;
        findings
            .records
            .push(Record::of(&declaration.after, growth, violation.is_none()));
        findings.violations.extend(violation);
        Ok(())
    }

    /// One of the child's own pools: its declaration must cover what its namespaces hold, or
    /// will hold once the modules it switches on exist.
    pub(super) fn check_own_pool(
        &self,
        own: &OwnPool<'_>,
        pools: &CheckedPools<'_>,
        usages: &Usages,
        findings: &mut Findings,
    ) -> Result<(), Refusal> {
        let key = own.pool.key.as_str();
        let declared = self.change.new.get(key).unwrap_or(Quantity::ZERO);
        let standing: Standing = own
            .pool
            .standing(declared, None, &usages.held, &mut findings.unreadable)
            .map_err(overflow("carve-outs"))?;
        let module_names = self.change.modules.names(key);
        let modules = self.change.modules.of(key);
        let holding = Holding {
            pool: pools
                .parent(key)
                .map_or(own.pool.name(), |parent| parent.name()),
            own: standing,
            modules: (modules, module_names.as_str()),
            hands_back: own.hands_back,
        };
        let violation = decision::handback_violation(&holding).map_err(overflow("reservations"))?;
        findings
            .records
            .push(Record::of(&holding.own, modules, violation.is_none()));
        findings.violations.extend(violation);
        Ok(())
    }

    /// How the gate ends: the checks recorded, the problems with other objects (applications
    /// that cannot be evaluated, carve-outs whose quota cannot be read) and with modules, then
    /// the violations.
    pub(super) fn conclude(
        &self,
        pools: BTreeSet<&str>,
        usages: Usages,
        findings: Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        notes.records.extend(findings.records);
        let mut problems = usages.unevaluable.applications;
        problems.extend(findings.unreadable);
        problems.sort();
        problems.dedup();
        let mut modules = self.change.modules.unevaluable.clone();
        modules.extend(usages.unevaluable.modules);
        Outcome {
            pools,
            problems,
            modules,
            violations: findings.violations,
        }
        .conclude(self.context.settings, notes)
    }
}
