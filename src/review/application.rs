//! The application gate: a write of any kind but Tenant is charged by its definition, and
//! each key it grows must fit in that key's pool.

use std::collections::BTreeSet;

use super::{Notes, Outcome, Refusal, Subject, load_pools, pool_of, tenants_above};
use crate::context::Context;
use crate::decision::{self, Record};
use crate::keys::show;
use crate::pool::Pool;
use crate::resources::Resources;

pub(super) fn check(
    subject: &Subject<'_>,
    context: &Context<'_>,
    notes: &mut Notes,
) -> Result<(), Refusal> {
    let label = subject.label();
    let mut tenancy = tenants_above(context, subject)?;
    if tenancy.pool_root(subject.namespace).is_none()
        || context.settings.exempt_kinds.contains(subject.kind)
    {
        return Ok(());
    }
    let unevaluable = |error| Refusal::Unevaluable {
        subject: label.clone(),
        error,
    };
    let governing = context.governing(subject.kind).map_err(unevaluable)?;
    let Some(new) = context
        .charge(&governing, subject.kind, subject.values)
        .map_err(unevaluable)?
    else {
        return Ok(());
    };
    let old = match subject
        .old_values
        .map(|old| context.charge(&governing, subject.kind, old))
    {
        None | Some(Ok(None)) => None,
        Some(Ok(Some(old))) => Some(old),
        Some(Err(e)) => {
            // Charged as if it were new: the safe reading of an unknown previous size.
            notes.warnings.push(format!(
                "{label}: the previous version cannot be evaluated ({e}); the whole new reservation is checked"
            ));
            Some(Resources::new())
        }
    };
    if let (Some(old), Some(reservation)) = (&old, &governing.reservation) {
        for key in &reservation.grow_only {
            let (from, to) = (old.get(key), new.get(key));
            if to < from {
                return Err(Refusal::Shrinks {
                    subject: label,
                    key: key.clone(),
                    from: show(key, from),
                    to: show(key, to),
                });
            }
        }
    }

    // Each growing key is checked in its own pool: the nearest tenant that bounds it. Those
    // pools are read from their roots down.
    let growth = decision::growth(&new, old.as_ref());
    let keys: BTreeSet<&str> = growth
        .iter()
        .filter(|(key, _)| tenancy.root_for(subject.namespace, key).is_some())
        .map(|(key, _)| key.as_str())
        .collect();
    if keys.is_empty() {
        return Ok(());
    }
    let roots: BTreeSet<String> = keys
        .iter()
        .filter_map(|key| tenancy.root_for(subject.namespace, key))
        .map(|root| root.owns.clone())
        .collect();
    let roots: Vec<&str> = roots.iter().map(String::as_str).collect();
    load_pools(context, subject, &mut tenancy, &roots, &keys)?;
    let mut grown = Vec::new();
    for (key, delta) in growth {
        if let Some((pool, budget)) = pool_of(&tenancy, subject, &key)? {
            grown.push((pool, delta, budget));
        }
    }
    if grown.is_empty() {
        return Ok(());
    }
    // In the order of the messages: by pool, then by key.
    grown.sort_by(|(a, ..), (b, ..)| (a.name(), &a.key).cmp(&(b.name(), &b.key)));

    let pools: Vec<Pool<'_>> = grown.iter().map(|(pool, ..)| pool.clone()).collect();
    let (usage, sibling) = context
        .usage(&pools, |app| subject.is(app))
        .map_err(|error| Refusal::cluster(&label, error))?;
    let mut problems = Vec::new();
    let mut violations = Vec::new();
    for (pool, delta, budget) in &grown {
        let standing = pool
            .standing(*budget, None, &usage, &mut problems)
            .map_err(|_| Refusal::PoolCarveOutsOverflow {
                subject: label.clone(),
                pool: pool.name().to_string(),
            })?;
        let violation =
            decision::application_violation(&standing, new.get(&pool.key), *delta, old.is_some());
        notes
            .records
            .push(Record::of(&standing, *delta, violation.is_none()));
        violations.extend(violation);
    }
    problems.extend(sibling.applications);
    Outcome {
        subject: label,
        pools: grown.iter().map(|(pool, ..)| pool.name()).collect(),
        problems,
        modules: sibling.modules,
        violations,
    }
    .conclude(context.settings, notes)
}
