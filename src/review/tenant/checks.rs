//! The checks of each pool a Tenant write touches: a pool above the child may not grow past its
//! budget, and the child's own pool must cover what its namespaces hold. Each check is
//! recorded for the decision log; the gate then ends as every gate does ([`Outcome`]).

use std::collections::BTreeSet;

use super::scope::{Change, Usages};
use crate::context::{Context, Unevaluable};
use crate::decision::{self, Declaration, Holding, Record};
use crate::pool::{Pool, Usage};
use crate::quantity::Quantity;
use crate::review::{Notes, Outcome, Refusal};

fn overflow(label: &str, what: &'static str) -> Refusal {
    Refusal::Overflow {
        subject: label.to_string(),
        what,
    }
}

/// The write under check: the subject of its messages, the namespace the child owns, and what
/// it changes.
pub(super) struct Write<'a> {
    pub(super) label: &'a str,
    pub(super) owns: &'a str,
    pub(super) change: &'a Change,
}

/// What the checks of the pools found besides the records: violations, and carve-outs whose
/// quota cannot be read.
#[derive(Default)]
pub(super) struct Findings {
    pub(super) violations: Vec<String>,
    pub(super) unreadable: Vec<String>,
}

impl Write<'_> {
    /// A pool above the child, on its key: the write may not grow its load past its budget.
    /// The check is recorded.
    pub(super) fn check_parent_pool(
        &self,
        before_pool: &Pool<'_>,
        budget: Quantity,
        after_pool: &Pool<'_>,
        usages: &Usages,
        findings: &mut Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let Write {
            label,
            owns,
            change,
        } = *self;
        let key = before_pool.key.as_str();
        let carved_before = before_pool
            .carved(None, &mut Vec::new())
            .map_err(|_| overflow(label, "carve-outs"))?;
        let after = after_pool
            .standing(budget, Some(owns), &usages.after, &mut findings.unreadable)
            .map_err(|_| overflow(label, "carve-outs"))?;
        // Modules land in this pool for the keys the child does not bound.
        let landed_before = match &change.old {
            Some(old) if old.get(key).is_none() => change.modules_before.of(key),
            _ => Quantity::ZERO,
        };
        let landed = if change.new.get(key).is_none() {
            change.modules.of(key)
        } else {
            Quantity::ZERO
        };
        let load_before = carved_before
            .total
            .checked_add(usages.before.reserved.get(key))
            .and_then(|l| l.checked_add(landed_before))
            .ok_or_else(|| overflow(label, "reservations"))?;
        let module_names = change.modules.names(key);
        let declaration = Declaration {
            after,
            load_before,
            declared: change.new.get(key),
            previous: change.old.as_ref().and_then(|o| o.get(key)),
            modules: landed
                .is_positive()
                .then_some((module_names.as_str(), landed)),
        };
        let violation = decision::declaration_violation(&declaration)
            .map_err(|_| overflow(label, "reservations"))?;
        let load_after = declaration
            .load_after()
            .ok_or_else(|| overflow(label, "reservations"))?;
        let growth = load_after
            .checked_sub(load_before)
            .unwrap_or(Quantity::ZERO);
        notes
            .records
            .push(Record::of(&declaration.after, growth, violation.is_none()));
        findings.violations.extend(violation);
        Ok(())
    }

    /// One of the child's own pools: its declaration must cover what its namespaces hold, or
    /// will hold once the modules it switches on exist. The check is recorded.
    pub(super) fn check_own_pool(
        &self,
        own_pool: &Pool<'_>,
        hands_back: bool,
        parent: Option<&Pool<'_>>,
        held: &Usage,
        findings: &mut Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let Write { label, change, .. } = *self;
        let key = own_pool.key.as_str();
        let sub_tenants = own_pool
            .carved(None, &mut findings.unreadable)
            .map_err(|_| overflow(label, "carve-outs"))?;
        let module_names = change.modules.names(key);
        let holding = Holding {
            pool: parent.map_or(own_pool.name(), |parent| parent.name()),
            own_pool: own_pool.name(),
            key,
            declared: change.new.get(key).unwrap_or(Quantity::ZERO),
            reserved: held.of(key),
            sub_tenants: sub_tenants.total,
            modules: (change.modules.of(key), module_names.as_str()),
            hands_back,
        };
        let violation =
            decision::handback_violation(&holding).map_err(|_| overflow(label, "reservations"))?;
        notes.records.push(Record {
            pool: own_pool.name().to_string(),
            key: key.to_string(),
            budget: holding.declared,
            carved: holding.sub_tenants,
            reserved: holding.reserved.0,
            growth: holding.modules.0,
            fits: violation.is_none(),
        });
        findings.violations.extend(violation);
        Ok(())
    }

    /// How the gate ends: the problems with other objects (applications that cannot be
    /// evaluated, carve-outs whose quota cannot be read) and with modules, then the violations.
    pub(super) fn conclude(
        &self,
        context: &Context<'_>,
        pools: BTreeSet<&str>,
        unevaluable: Unevaluable,
        findings: Findings,
        notes: &mut Notes,
    ) -> Result<(), Refusal> {
        let mut problems = unevaluable.applications;
        problems.extend(findings.unreadable);
        problems.sort();
        problems.dedup();
        let mut module_problems = self.change.modules.unevaluable.clone();
        module_problems.extend(unevaluable.modules);
        Outcome {
            subject: self.label.to_string(),
            pools,
            problems,
            modules: module_problems,
            violations: findings.violations,
        }
        .conclude(context.settings, notes)
    }
}

/// The pools checked, by name: those above the child, and the child's own when the modules
/// grow into it.
pub(super) fn pools_checked<'a>(
    owns: &'a str,
    parents: &[(Pool<'a>, Quantity)],
    own: &[(Pool<'_>, bool)],
) -> BTreeSet<&'a str> {
    let mut pools: BTreeSet<&str> = parents.iter().map(|(p, _)| p.name()).collect();
    if own.iter().any(|(_, hands_back)| !hands_back) {
        pools.insert(owns);
    }
    pools
}
