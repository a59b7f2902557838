//! A Tenant's declared quota: its `resourceQuotas` read into a [`Budget`] of reservation keys.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::json::describe;
use crate::keys::{KeyAliases, RESOURCE_QUOTAS};
use crate::quantity::{JsonQuantityError, Quantity};

/// A quota as declared, keyed by reservation key (aliases applied). Unlike
/// [`crate::resources::Resources`] a zero is kept: `cpu: 0` bounds cpu at zero.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Budget(BTreeMap<String, Quantity>);

impl Budget {
    pub fn get(&self, key: &str) -> Option<Quantity> {
        self.0.get(key).copied()
    }

    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, Quantity)> {
        self.0.iter().map(|(k, q)| (k.as_str(), *q))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Declared `(key, quantity)` pairs to a budget. Two declared keys that alias to the same
    /// reservation key (`requests.cpu` and `limits.cpu`) bound it at the tighter of the two,
    /// as Kubernetes applies the most restrictive quota.
    pub fn from_declared(declared: &[(String, Quantity)], aliases: &KeyAliases) -> Budget {
        let mut budget = BTreeMap::new();
        for (key, q) in declared {
            budget
                .entry(aliases.canonical(key).to_string())
                .and_modify(|existing: &mut Quantity| *existing = (*existing).min(*q))
                .or_insert(*q);
        }
        Budget(budget)
    }
}

impl FromIterator<(String, Quantity)> for Budget {
    fn from_iter<I: IntoIterator<Item = (String, Quantity)>>(iter: I) -> Self {
        Budget(iter.into_iter().collect())
    }
}

/// `resourceQuotas` as declared `(key, quantity)` pairs, or every problem found in it.
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
        match Quantity::from_json(v) {
            Ok(q) => pairs.push((key.clone(), q)),
            Err(JsonQuantityError::WrongType) => errors.push(format!(
                "spec.resourceQuotas.{key} must be a quantity, not {}",
                describe(v)
            )),
            Err(JsonQuantityError::Invalid(e)) => {
                errors.push(format!("spec.resourceQuotas.{key}: {e}"))
            }
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap()
    }

    #[test]
    fn aliased_keys_bound_at_the_tighter_declaration() {
        let declared = declared_quota(&json!({"resourceQuotas": {
            "requests.memory": "4Gi", "limits.memory": "6Gi", "cpu": 2, "services.loadbalancers": "1"}}))
        .unwrap();
        let budget = Budget::from_declared(&declared, &KeyAliases::default());
        assert_eq!(budget.get("memory"), Some(q("4Gi")));
        assert_eq!(budget.get("cpu"), Some(q("2")));
        assert_eq!(budget.get("services.loadbalancers"), Some(q("1")));
        assert_eq!(budget.keys().count(), 3);
    }

    #[test]
    fn every_problem_of_a_declaration_is_named() {
        let errors = declared_quota(
            &json!({"resourceQuotas": {"cpu": true, "memory": "-1", "storage": ""}}),
        )
        .unwrap_err();
        assert_eq!(
            errors,
            [
                "spec.resourceQuotas.cpu must be a quantity, not the boolean true",
                "spec.resourceQuotas.memory: \"-1\" is negative",
                "spec.resourceQuotas.storage: an empty string is not a quantity",
            ]
        );
        assert_eq!(
            declared_quota(&json!({"resourceQuotas": []})).unwrap_err(),
            ["spec.resourceQuotas must be a map, not a list"]
        );
        assert_eq!(declared_quota(&json!({})).unwrap(), []);
    }
}
