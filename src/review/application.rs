//! The application gate: a write of any kind but Tenant is charged by its definition, and
//! each key it grows must fit in that key's pool.
//!
//! The steps, in the order the host is asked: the tenants above, the charge of the write (its
//! definition, schema and instance types), the pools of the keys it grows from their roots
//! down, then what their applications reserve.

use std::collections::BTreeSet;

use super::outcome::Outcome;
use super::refusal::Refusal;
use super::subject::Subject;
use super::verdict::Notes;
use crate::charge::{ChargeError, Governing};
use crate::context::Context;
use crate::decision::{self, Record};
use crate::keys::show;
use crate::pool::{Pool, Tenancy};
use crate::quantity::Quantity;
use crate::resources::Resources;

pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let mut tenancy = context.tenants_above(subject.namespace)?;
    if tenancy.pool_root(subject.namespace).is_none()
        || context.settings.exempt_kinds.contains(subject.kind)
    {
        return Ok(());
    }
    let charged = context.charge_write(subject.kind, subject.values, subject.old_values)?;
    let Some(new) = charged.new else {
        return Ok(());
    };
    let old = charged
        .old
        .and_then(|old| previous_charge(subject, old, notes));
    if let Some(old) = &old {
        keeps_grow_only_keys(&charged.governing, old, &new)?;
    }
    let growth = decision::growth(&new, old.as_ref());
    let grown = grown_pools(subject, context, &mut tenancy, growth)?;
    if grown.is_empty() {
        return Ok(());
    }
    check_pools(subject, context, &grown, &new, notes)
}

/// What the previous version reserved, on UPDATE. One that cannot be evaluated is charged as
/// if the write were new: the safe reading of an unknown previous size.
fn previous_charge(
    subject: &Subject<'_>,
    old: Result<Option<Resources>, ChargeError>,
    notes: &mut Notes,
) -> Option<Resources> {
    match old {
        Ok(old) => old,
        Err(e) => {
            notes.warnings.push(format!(
                "{}: the previous version cannot be evaluated ({e}); the whole new reservation is checked",
                subject.label()
            ));
            Some(Resources::new())
        }
    }
}

/// The block's `growOnly` keys may not shrink: the chart keeps what it has provisioned.
fn keeps_grow_only_keys(
    governing: &Governing,
    old: &Resources,
    new: &Resources,
) -> Result<(), Refusal> {
    let Some(reservation) = &governing.reservation else {
        return Ok(());
    };
    for key in &reservation.grow_only {
        let (from, to) = (old.get(key), new.get(key));
        if to < from {
            return Err(Refusal::Shrinks {
                key: key.clone(),
                from: show(key, from),
                to: show(key, to),
            });
        }
    }
    Ok(())
}

/// One key the write grows, in its pool.
struct Grown<'t> {
    pool: Pool<'t>,
    budget: Quantity,
    growth: Quantity,
}

/// The pool of each key the write grows (the nearest tenant that bounds it), read from the
/// pools' roots down; in the order of the messages: by pool, then by key.
fn grown_pools<'t>(
    subject: &Subject<'_>,
    context: &Context<'_>,
    tenancy: &'t mut Tenancy,
    growth: Vec<(String, Quantity)>,
) -> Result<Vec<Grown<'t>>, Refusal> {
    let namespace = subject.namespace;
    let keys: BTreeSet<&str> = growth
        .iter()
        .filter(|(key, _)| tenancy.root_for(namespace, key).is_some())
        .map(|(key, _)| key.as_str())
        .collect();
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let roots: BTreeSet<String> = keys
        .iter()
        .filter_map(|key| tenancy.root_for(namespace, key))
        .map(|root| root.owns.clone())
        .collect();
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    context.load_pools(tenancy, &roots, &keys)?;
    let tenancy: &'t Tenancy = tenancy;
    let mut grown = Vec::new();
    for (key, growth) in growth {
        if let Some((pool, budget)) = tenancy.budgeted_pool(namespace, &key)? {
            grown.push(Grown {
                pool,
                budget,
                growth,
            });
        }
    }
    grown.sort_by(|a, b| (a.pool.name(), &a.pool.key).cmp(&(b.pool.name(), &b.pool.key)));
    Ok(grown)
}

/// Each grown key against its pool's standing: what the pool's other applications reserve.
fn check_pools(
    subject: &Subject<'_>,
    context: &Context<'_>,
    grown: &[Grown<'_>],
    new: &Resources,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    // An UPDATE of a charged kind always has a previous charge (or an empty one).
    let update = subject.old_values.is_some();
    let pools: Vec<Pool<'_>> = grown.iter().map(|g| g.pool.clone()).collect();
    let (usage, sibling) = context.usage(&pools, |held| subject.is(held))?;
    let mut problems = Vec::new();
    let mut violations = Vec::new();
    for Grown {
        pool,
        budget,
        growth,
    } in grown
    {
        let standing = pool
            .standing(*budget, None, &usage, &mut problems)
            .map_err(|_| Refusal::PoolCarveOutsOverflow {
                pool: pool.name().to_string(),
            })?;
        let wanted = new.get(&pool.key);
        let violation = decision::application_violation(&standing, wanted, *growth, update);
        notes
            .records
            .push(Record::of(&standing, *growth, violation.is_none()));
        violations.extend(violation);
    }
    problems.extend(sibling.applications);
    Outcome {
        pools: grown.iter().map(|g| g.pool.name()).collect(),
        problems,
        modules: sibling.modules,
        violations,
    }
    .conclude(context.settings, notes)
}
