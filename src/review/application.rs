//! The application gate: a write of any kind but Tenant is charged by its definition, and
//! each key it grows must fit in that key's pool.
//!
//! The steps, in the order the host is asked: the tenants above, the charge of the write (its
//! definition, schema and instance types), the pools of the keys it grows from their roots
//! down, then what their applications reserve. Under `poolSummary`, a pool whose root's
//! summary is trusted is read from it instead, with only the namespace written to listed.

use std::collections::{BTreeMap, BTreeSet};

use super::outcome::Outcome;
use super::refusal::Refusal;
use super::subject::Subject;
use super::verdict::Notes;
use crate::charge::{ChargeError, Governing};
use crate::context::{Context, Unevaluable, Unsummarized};
use crate::decision::{self, Record};
use crate::keys::show;
use crate::pool::{Pool, Tenancy, Tenant};
use crate::quantity::Quantity;
use crate::resources::Resources;
use crate::settings::PoolSummaryMode;
use crate::summary::{Fresh, Problems, SummaryStatus, SummedPool, freshness};

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
    let grown = grown_pools(subject, context, &mut tenancy, growth, notes)?;
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
    /// The pool as its summary holds it, but the namespace written to; `None`: walked.
    summed: Option<SummedPool>,
}

/// The pool of each key the write grows (the nearest tenant that bounds it), read from the
/// pools' roots down, or from their summaries; in the order of the messages: by pool, then by
/// key.
fn grown_pools<'t>(
    subject: &Subject<'_>,
    context: &Context<'_>,
    tenancy: &'t mut Tenancy,
    growth: Vec<(String, Quantity)>,
    notes: &mut Notes,
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
    let mut roots: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for key in &keys {
        // A root whose quota cannot be read refuses the write without a sum.
        if let Some(root) = tenancy.root_for(namespace, key).filter(|r| r.quota.is_ok()) {
            roots.entry(root.owns.clone()).or_default().push(key);
        }
    }
    let mut summed = summed_pools(subject, context, &roots, notes)?;
    let walked: Vec<String> = keys
        .iter()
        .filter_map(|key| tenancy.root_for(namespace, key))
        .map(|root| root.owns.clone())
        .filter(|root| !summed.keys().any(|(r, _)| r == root))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let walked: Vec<&str> = walked.iter().map(String::as_str).collect();
    context.load_pools(tenancy, &walked, &keys)?;
    let tenancy: &'t Tenancy = tenancy;
    let mut grown = Vec::new();
    for (key, growth) in growth {
        if let Some((pool, budget)) = tenancy.budgeted_pool(namespace, &key)? {
            let summed = summed.remove(&(pool.name().to_string(), key.clone()));
            grown.push(Grown {
                pool,
                budget,
                growth,
                summed,
            });
        }
    }
    grown.sort_by(|a, b| (a.pool.name(), &a.pool.key).cmp(&(b.pool.name(), &b.pool.key)));
    Ok(grown)
}

/// Pools read from their summaries, by (root, key).
type Summed = BTreeMap<(String, String), SummedPool>;

/// Under `poolSummary`, each pool of `roots` (root -> its keys the write grows) summed from
/// its root's summary, by (root, key): a root whose summary cannot be trusted, or does not
/// hold every namespace of its pools yet, is walked instead, with a warning (refused under
/// `required`).
fn summed_pools(
    subject: &Subject<'_>,
    context: &Context<'_>,
    roots: &BTreeMap<String, Vec<&str>>,
    notes: &mut Notes,
) -> Result<Summed, Refusal> {
    let mode = context.settings.pool_summary.mode;
    let mut summed = Summed::new();
    if mode == PoolSummaryMode::Off {
        return Ok(summed);
    }
    let now = freshness::now();
    for (root, keys) in roots {
        let of_root = match context.pool_summary(root, now) {
            Ok(status) => {
                // The namespace written to is read fresh: its child tenants from its list.
                let listing = context.listing(subject.namespace)?;
                sum_keys(&status, root, keys, subject.namespace, &listing.tenants)
            }
            Err(why) => Err(why),
        };
        match of_root {
            Ok(pools) => summed.extend(pools),
            Err(why) if mode == PoolSummaryMode::Required => {
                return Err(Refusal::Unsummarized(why));
            }
            Err(why) => notes
                .warnings
                .push(format!("pool {root} is read from its lists: {why}")),
        }
    }
    Ok(summed)
}

/// The pools of `keys` rooted at `root`, summed from `status` with `namespace` (and its child
/// `tenants`) as listed: none when the summary does not hold every namespace of one yet.
fn sum_keys(
    status: &SummaryStatus,
    root: &str,
    keys: &[&str],
    namespace: &str,
    tenants: &[Tenant],
) -> Result<Summed, Unsummarized> {
    let mut pools = Summed::new();
    for key in keys {
        let fresh = Fresh { namespace, tenants };
        let pool = status
            .sum(root, key, Some(fresh))
            .map_err(|e| unsummarized(root, format!("cannot be read: {e}")))?;
        if let Some(unheld) = pool.unheld.first() {
            return Err(unsummarized(
                root,
                format!("does not hold namespace {unheld} of pool {root} ({key}) yet"),
            ));
        }
        pools.insert((root.to_string(), key.to_string()), pool);
    }
    Ok(pools)
}

fn unsummarized(root: &str, why: String) -> Unsummarized {
    Unsummarized {
        root: root.to_string(),
        why,
    }
}

/// What cannot be evaluated in the pools' other namespaces, each namespace once, in the
/// order the walk reports it (by namespace name): `listed` from the namespaces listed (the
/// walked pools' and the one written to), the rest from the summaries. When some pools are
/// walked, the listed ones come first.
fn siblings(namespace: &str, grown: &[Grown<'_>], listed: Unevaluable) -> Problems {
    let walked: BTreeSet<&str> = grown
        .iter()
        .filter(|g| g.summed.is_none())
        .flat_map(|g| g.pool.members.iter().map(|m| m.owns.as_str()))
        .collect();
    let mut by_namespace: BTreeMap<&str, Problems> = BTreeMap::new();
    for summed in grown.iter().filter_map(|g| g.summed.as_ref()) {
        for (summed_namespace, problems) in &summed.problems {
            if !walked.contains(summed_namespace.as_str()) {
                by_namespace
                    .entry(summed_namespace)
                    .or_insert_with(|| problems.clone());
            }
        }
    }
    let listed = Problems {
        applications: listed.applications,
        modules: listed.modules,
    };
    let mut all = Problems::default();
    if walked.is_empty() {
        by_namespace.insert(namespace, listed);
    } else {
        all = listed;
    }
    for problems in by_namespace.into_values() {
        all.applications.extend(problems.applications);
        all.modules.extend(problems.modules);
    }
    all
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
    // A summed pool's namespace written to is read from its list, as a walked pool's
    // namespaces are: one sum over both (each key is in one pool).
    let pools: Vec<Pool<'_>> = grown
        .iter()
        .map(|g| match &g.summed {
            None => g.pool.clone(),
            Some(_) => g.pool.only(subject.namespace),
        })
        .collect();
    let (mut usage, sibling) = context.usage(&pools, |held| subject.is(held))?;
    for g in grown {
        if let Some(summed) = &g.summed {
            let key = &g.pool.key;
            usage
                .absorb(key, &summed.usage.share(key, summed.usage.pending.clone()))
                .map_err(|_| Refusal::Overflow("reservations of the pool"))?;
        }
    }
    let sibling = siblings(subject.namespace, grown, sibling);
    let mut problems = Vec::new();
    let mut violations = Vec::new();
    for Grown {
        pool,
        budget,
        growth,
        summed,
    } in grown
    {
        let mut standing = pool
            .standing(*budget, None, &usage, &mut problems)
            .map_err(|_| Refusal::PoolCarveOutsOverflow {
                pool: pool.name().to_string(),
            })?;
        // A summed pool's carve-outs are the summary's: the walk did not read them.
        if let Some(summed) = summed {
            standing.carved = summed.carved;
            problems.extend(summed.unreadable.iter().cloned());
        }
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
