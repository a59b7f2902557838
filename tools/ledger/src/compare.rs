//! `--compare`: the same cluster judged two ways, pool by pool and application by
//! application: what runs now (the deployed settings, or another version's ledger) against
//! what would run (other settings, or this version). Both sides are ledgers in their JSON form
//! (`-o json --holders all`), so a ledger written by another version of the plugin compares
//! as well as one drawn here.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Result, bail};
use serde_json::{Value, json};

/// Two ledgers of one cluster, line by line.
pub struct Comparison {
    /// What runs now, and what would run, in words.
    pub now: String,
    pub then: String,
    pub lines: Vec<Line>,
    /// Where a side cannot say every application's charge.
    pub warnings: Vec<String>,
}

/// One pool and key on both sides (absent on a side that has no such line).
pub struct Line {
    pub pool: String,
    pub key: String,
    pub now: Option<Value>,
    pub then: Option<Value>,
    /// Applications whose charge differs: name, charge now, charge then (`None`: no charge).
    pub changes: Vec<(String, Option<String>, Option<String>)>,
    namespaces: BTreeSet<String>,
}

/// Whether the pool `pool` with its member `namespaces` holds `namespace` (`-n`): its own
/// namespace or a member's.
pub fn holds<'a>(
    pool: &str,
    namespaces: impl IntoIterator<Item = &'a String>,
    namespace: &str,
) -> bool {
    pool == namespace || namespaces.into_iter().any(|n| n == namespace)
}

/// `-n NAMESPACE` kept no line: the error that says so.
pub fn held_somewhere(kept: bool, namespace: &str) -> Result<()> {
    if !kept {
        bail!("no pool holds namespace {namespace} (no Tenant above it declares resourceQuotas)");
    }
    Ok(())
}

/// Whether `document` is a ledger in its JSON form (not settings, not a manifest).
pub fn is_ledger(document: &Value) -> bool {
    document.get("apiVersion").is_none() && document["pools"].is_array()
}

/// The comparison of the ledger `now` with the ledger `then`.
pub fn compare(now_label: &str, now: &Value, then_label: &str, then: &Value) -> Result<Comparison> {
    let now_lines = lines_of(now_label, now)?;
    let then_lines = lines_of(then_label, then)?;
    let mut warnings = Vec::new();
    for (label, lines) in [(now_label, &now_lines), (then_label, &then_lines)] {
        for ((pool, key), line) in lines {
            let listed = line["largest"].as_array().map_or(0, Vec::len) as u64;
            let held = line["reservedBy"].as_u64().unwrap_or(0);
            if listed < held {
                warnings.push(format!(
                    "pool {pool} {key}: {label} names {listed} of its {held} applications (draw it with --holders all): the others' changes are not shown"
                ));
            }
        }
    }
    let keys: BTreeSet<_> = now_lines.keys().chain(then_lines.keys()).cloned().collect();
    let lines = keys
        .into_iter()
        .map(|(pool, key)| {
            let now = now_lines.get(&(pool.clone(), key.clone())).cloned();
            let then = then_lines.get(&(pool.clone(), key.clone())).cloned();
            let charges_now = charges(now.as_ref());
            let charges_then = charges(then.as_ref());
            let names: BTreeSet<&String> = charges_now.keys().chain(charges_then.keys()).collect();
            let changes = names
                .into_iter()
                .filter_map(|name| {
                    let (a, b) = (charges_now.get(name), charges_then.get(name));
                    (a != b).then(|| (name.clone(), a.cloned(), b.cloned()))
                })
                .collect();
            let namespaces = [&now, &then]
                .into_iter()
                .flatten()
                .flat_map(|l| l["namespaces"].as_array().cloned().unwrap_or_default())
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect();
            Line {
                pool,
                key,
                now,
                then,
                changes,
                namespaces,
            }
        })
        .collect();
    Ok(Comparison {
        now: now_label.to_string(),
        then: then_label.to_string(),
        lines,
        warnings,
    })
}

type Lines = BTreeMap<(String, String), Value>;

fn lines_of(label: &str, ledger: &Value) -> Result<Lines> {
    let Some(pools) = ledger["pools"].as_array() else {
        bail!("{label} is not a ledger (no `pools`)");
    };
    let mut lines = BTreeMap::new();
    for line in pools {
        let (Some(pool), Some(key)) = (line["pool"].as_str(), line["key"].as_str()) else {
            bail!("{label}: a line without pool or key: {line}");
        };
        if lines
            .insert((pool.to_string(), key.to_string()), line.clone())
            .is_some()
        {
            bail!("{label}: pool {pool} {key} appears twice");
        }
    }
    Ok(lines)
}

/// Each application's charge on a line.
fn charges(line: Option<&Value>) -> BTreeMap<String, String> {
    line.and_then(|l| l["largest"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|h| {
            Some((
                h["application"].as_str()?.to_string(),
                h["charge"].as_str()?.to_string(),
            ))
        })
        .collect()
}

/// `a → b`, or `a` when they are the same; `-` for a side without the figure.
fn change(now: Option<&Value>, then: Option<&Value>, field: &str) -> String {
    let show = |v: Option<&Value>| match v.map(|l| &l[field]) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => "-".to_string(),
        Some(other) => other.to_string(),
    };
    let (a, b) = (show(now), show(then));
    if a == b { a } else { format!("{a} → {b}") }
}

fn status(line: Option<&Value>) -> String {
    let Some(line) = line else {
        return "no such pool".to_string();
    };
    let mut words = Vec::new();
    if let Some(over) = line["overBudget"].as_str() {
        words.push(format!("over budget by {over}"));
    }
    if line["overcommitted"] == true {
        words.push("overcommitted".to_string());
    }
    if words.is_empty() {
        "ok".to_string()
    } else {
        words.join(", ")
    }
}

impl Comparison {
    /// Keeps the lines of the pool that holds `namespace`.
    pub fn only_namespace(&mut self, namespace: &str) -> Result<()> {
        self.lines
            .retain(|l| holds(&l.pool, &l.namespaces, namespace));
        held_somewhere(!self.lines.is_empty(), namespace)
    }

    /// The pools and keys over budget under what would run.
    pub fn over_budget_after(&self) -> Vec<String> {
        self.lines
            .iter()
            .filter(|l| l.then.as_ref().is_some_and(|t| t["overBudget"].is_string()))
            .map(|l| format!("{} {}", l.pool, l.key))
            .collect()
    }

    /// The comparison for people: one row per pool and key (`now → then` where they differ),
    /// the applications whose charge changes under it.
    pub fn render(&self) -> String {
        let mut rows: Vec<Vec<String>> = vec![
            [
                "POOL",
                "KEY",
                "BUDGET",
                "RESERVED",
                "AVAILABLE",
                "STATUS NOW",
                "STATUS THEN",
            ]
            .map(str::to_string)
            .to_vec(),
        ];
        let mut under: Vec<Vec<String>> = vec![Vec::new()];
        for line in &self.lines {
            let (now, then) = (line.now.as_ref(), line.then.as_ref());
            rows.push(vec![
                line.pool.clone(),
                line.key.clone(),
                change(now, then, "budget"),
                change(now, then, "reserved"),
                change(now, then, "available"),
                status(now),
                status(then),
            ]);
            under.push(
                line.changes
                    .iter()
                    .map(|(name, a, b)| {
                        let show = |c: &Option<String>| c.clone().unwrap_or_else(|| "-".into());
                        format!("    {name}: {} → {}", show(a), show(b))
                    })
                    .collect(),
            );
        }
        let columns = rows[0].len();
        let widths: Vec<usize> = (0..columns)
            .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = format!("now:  {}\nthen: {}\n\n", self.now, self.then);
        for (row, apps) in rows.iter().zip(&under) {
            let cells: Vec<String> = row
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell}{}", " ".repeat(width - cell.chars().count())))
                .collect();
            out.push_str(cells.join("  ").trim_end());
            out.push('\n');
            for app in apps {
                out.push_str(app);
                out.push('\n');
            }
        }
        let changed_lines = self
            .lines
            .iter()
            .filter(|l| l.now != l.then || !l.changes.is_empty())
            .count();
        let changed_charges: usize = self.lines.iter().map(|l| l.changes.len()).sum();
        out.push_str(&format!(
            "\n{changed_lines} of {} pool keys change; {changed_charges} application charges change\n",
            self.lines.len()
        ));
        out
    }

    /// The comparison for scripts.
    pub fn to_json(&self) -> Value {
        json!({
            "now": self.now,
            "then": self.then,
            "pools": self.lines.iter().map(|l| json!({
                "pool": l.pool,
                "key": l.key,
                "now": l.now.as_ref().map(summary),
                "then": l.then.as_ref().map(summary),
                "changes": l.changes.iter().map(|(name, a, b)| json!({
                    "application": name, "now": a, "then": b,
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }
}

/// A line's figures without its holders (the changes carry those).
fn summary(line: &Value) -> Value {
    let mut line = line.clone();
    if let Some(object) = line.as_object_mut() {
        object.remove("largest");
        object.remove("pool");
        object.remove("key");
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(
        pool: &str,
        reserved: &str,
        available: &str,
        over: Option<&str>,
        largest: &[(&str, &str)],
    ) -> Value {
        json!({"pool": pool, "key": "cpu", "budget": "8", "carved": "0", "carvedBy": 0,
               "reserved": reserved, "reservedBy": largest.len(), "available": available,
               "overBudget": over, "overcommitted": false, "namespaces": [pool],
               "largest": largest.iter().map(|(a, c)| json!({"application": a, "charge": c})).collect::<Vec<_>>()})
    }

    #[test]
    fn charges_and_standings_that_change_are_shown_both_ways() {
        let now = json!({"pools": [line("tenant-a", "6", "2", None, &[("VMInstance tenant-a/vm1", "4"), ("VMInstance tenant-a/vm2", "2")])]});
        let then = json!({"pools": [line("tenant-a", "10", "0", Some("2"), &[("VMInstance tenant-a/vm1", "8"), ("VMInstance tenant-a/vm2", "2")])]});
        let c = compare("deployed", &now, "new.yaml", &then).unwrap();
        assert_eq!(c.over_budget_after(), vec!["tenant-a cpu"]);
        let text = c.render();
        assert!(
            text.contains(
                "tenant-a  cpu  8       6 → 10    2 → 0      ok          over budget by 2"
            ),
            "{text}"
        );
        assert!(
            text.contains("    VMInstance tenant-a/vm1: 4 → 8\n"),
            "{text}"
        );
        assert!(!text.contains("vm2"), "{text}");
        assert!(
            text.ends_with("1 of 1 pool keys change; 1 application charges change\n"),
            "{text}"
        );
        assert_eq!(
            c.to_json()["pools"][0]["changes"],
            json!([{"application": "VMInstance tenant-a/vm1", "now": "4", "then": "8"}])
        );
        // The same ledger on both sides: nothing changes.
        let same = compare("a", &now, "b", &now).unwrap();
        assert!(
            same.render()
                .ends_with("0 of 1 pool keys change; 0 application charges change\n")
        );
        assert!(same.over_budget_after().is_empty());
    }

    #[test]
    fn a_ledger_that_names_only_some_holders_is_said_to() {
        let mut partial = line(
            "tenant-a",
            "6",
            "2",
            None,
            &[("VMInstance tenant-a/vm1", "4")],
        );
        partial["reservedBy"] = json!(2);
        let c = compare(
            "old.json",
            &json!({"pools": [partial]}),
            "now",
            &json!({"pools": []}),
        )
        .unwrap();
        assert_eq!(
            c.warnings,
            vec![
                "pool tenant-a cpu: old.json names 1 of its 2 applications (draw it with --holders all): the others' changes are not shown"
            ]
        );
        assert!(c.render().contains("no such pool"));
        assert!(compare("x", &json!({"pools": 1}), "y", &json!({"pools": []})).is_err());
        assert!(is_ledger(&json!({"pools": []})));
        assert!(!is_ledger(
            &json!({"apiVersion": "policies.kubewarden.io/v1", "pools": []})
        ));
    }
}
