//! Which application kinds the deployed policy never sees. Its webhook rules name the plurals
//! one by one (the audit scanner skips a rule with `*`), so a definition added later, say by an
//! out-of-tree catalog, is admitted without the policy's check: its writes are never refused.
//! The ledger names each such kind (docs/operating.md, "A kind the rules do not cover"), and
//! [`rules`] gives the lists that cover every definition (`tenant-reservation rules`, which
//! scripts/generate-rules.sh runs).

use serde_json::Value;
use tenant_reservation_policy::keys::GROUP;

/// Whether `list` (a JSON array of strings) holds one of `wanted`.
fn names(list: &Value, wanted: &[&str]) -> bool {
    list.as_array().is_some_and(|items| {
        items
            .iter()
            .any(|item| item.as_str().is_some_and(|s| wanted.contains(&s)))
    })
}

/// Whether one of `policy`'s rules sends a CREATE of `plural` (in [`GROUP`]) to the policy.
pub fn covers(policy: &Value, plural: &str) -> bool {
    policy["spec"]["rules"].as_array().is_some_and(|rules| {
        rules.iter().any(|rule| {
            names(&rule["apiGroups"], &[GROUP, "*"])
                && names(&rule["operations"], &["CREATE", "*"])
                && names(&rule["resources"], &[plural, "*", "*/*"])
        })
    })
}

/// One warning for each of `definitions` (ApplicationDefinitions) whose plural the rules of
/// `policy` (a ClusterAdmissionPolicy) leave out, in the definitions' order.
pub fn uncovered(policy: &Value, definitions: &[Value]) -> Vec<String> {
    let policy_name = policy["metadata"]["name"].as_str().unwrap_or_default();
    definitions
        .iter()
        .filter_map(|definition| {
            let plural = definition["spec"]["application"]["plural"].as_str()?;
            (!covers(policy, plural)).then(|| {
                format!(
                    "ApplicationDefinition {}: the rules of ClusterAdmissionPolicy {policy_name} do not name {plural}, so its writes are admitted unchecked; add {plural} to spec.rules[0].resources and to the audit scanner's ClusterRole (scripts/generate-rules.sh prints both lists)",
                    definition["metadata"]["name"].as_str().unwrap_or(plural)
                )
            })
        })
        .collect()
}

/// Whether one of `role`'s rules (a ClusterRole's) lets the audit scanner list `plural` (in
/// [`GROUP`]), as the API server's RBAC matches it.
pub fn role_covers(role: &Value, plural: &str) -> bool {
    role["rules"].as_array().is_some_and(|rules| {
        rules.iter().any(|rule| {
            names(&rule["apiGroups"], &[GROUP, "*"])
                && names(&rule["verbs"], &["list", "*"])
                && names(&rule["resources"], &[plural, "*"])
        })
    })
}

/// The plurals a cluster's definitions declare, against a policy's rules and the audit
/// scanner's ClusterRole.
#[derive(Debug, PartialEq, Eq)]
pub struct Rules {
    /// Every plural the definitions declare, sorted, once each: the list both places name.
    pub plurals: Vec<String>,
    /// The plurals the policy's rules leave out.
    pub not_in_policy: Vec<String>,
    /// The plurals the ClusterRole leaves out.
    pub not_in_role: Vec<String>,
}

/// The plurals of `definitions` (ApplicationDefinitions), and those `policy` (a
/// ClusterAdmissionPolicy) and `role` (a ClusterRole) leave out.
pub fn rules(definitions: &[Value], policy: &Value, role: &Value) -> Rules {
    let mut plurals: Vec<String> = definitions
        .iter()
        .filter_map(|d| d["spec"]["application"]["plural"].as_str())
        .map(str::to_string)
        .collect();
    plurals.sort();
    plurals.dedup();
    let left_out = |covered: &dyn Fn(&str) -> bool| -> Vec<String> {
        plurals.iter().filter(|p| !covered(p)).cloned().collect()
    };
    Rules {
        not_in_policy: left_out(&|p| covers(policy, p)),
        not_in_role: left_out(&|p| role_covers(role, p)),
        plurals,
    }
}

impl Rules {
    /// The `resources:` list to paste into both places.
    pub fn render(&self) -> String {
        let mut text = String::from("resources:\n");
        for plural in &self.plurals {
            text.push_str(&format!("  - {plural}\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rstest::rstest;
    use serde_json::json;

    fn policy(rules: Value) -> Value {
        json!({"metadata": {"name": "tenant-reservation"}, "spec": {"rules": rules}})
    }

    fn rule(groups: &[&str], operations: &[&str], resources: &[&str]) -> Value {
        json!({"apiGroups": groups, "apiVersions": ["v1alpha1"], "operations": operations,
               "resources": resources})
    }

    #[rstest]
    #[case::named(rule(&["apps.cozystack.io"], &["CREATE", "UPDATE"], &["postgreses", "buckets"]), true)]
    #[case::wildcard_resource(rule(&["apps.cozystack.io"], &["CREATE"], &["*"]), true)]
    #[case::wildcard_group_and_operation(rule(&["*"], &["*"], &["*/*"]), true)]
    #[case::not_named(rule(&["apps.cozystack.io"], &["CREATE", "UPDATE"], &["buckets"]), false)]
    #[case::a_subresource_only(rule(&["apps.cozystack.io"], &["CREATE"], &["postgreses/status"]), false)]
    #[case::another_group(rule(&["cozystack.io"], &["CREATE"], &["postgreses"]), false)]
    #[case::updates_only(rule(&["apps.cozystack.io"], &["UPDATE"], &["postgreses"]), false)]
    fn a_rule_covers_a_plural_as_the_api_server_matches_it(
        #[case] one: Value,
        #[case] expected: bool,
    ) {
        assert_eq!(covers(&policy(json!([one])), "postgreses"), expected);
    }

    #[test]
    fn the_shipped_rules_cover_every_in_tree_definition() {
        let shipped: Value = serde_yaml::from_str(crate::settings::SHIPPED).unwrap();
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../test_data/reference/applicationdefinitions"
        );
        let mut definitions = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            definitions.push(serde_yaml::from_str::<Value>(&text).unwrap());
        }
        assert_eq!(definitions.len(), 31);
        assert_eq!(uncovered(&shipped, &definitions), Vec::<String>::new());
        // Without one plural in its rules, exactly that definition is named.
        let mut narrowed = shipped.clone();
        let resources = narrowed["spec"]["rules"][0]["resources"]
            .as_array_mut()
            .unwrap();
        resources.retain(|r| r != "postgreses");
        let warnings = uncovered(&narrowed, &definitions);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("ApplicationDefinition postgres"),
            "{warnings:?}"
        );
    }

    #[test]
    fn no_rules_cover_nothing() {
        assert!(!covers(&json!({"spec": {}}), "postgreses"));
        assert!(!covers(&policy(json!([])), "postgreses"));
    }

    #[test]
    fn each_uncovered_definition_is_named_with_what_to_do() {
        let shipped = policy(json!([rule(
            &["apps.cozystack.io"],
            &["CREATE", "UPDATE"],
            &["postgreses"]
        )]));
        let definition = |name: &str, plural: &str| json!({"metadata": {"name": name}, "spec": {"application": {"plural": plural}}});
        let warnings = uncovered(
            &shipped,
            &[
                definition("postgres", "postgreses"),
                definition("streams", "streams"),
                json!({"metadata": {"name": "broken"}}),
            ],
        );
        assert_eq!(
            warnings,
            [
                "ApplicationDefinition streams: the rules of ClusterAdmissionPolicy tenant-reservation do not name streams, so its writes are admitted unchecked; add streams to spec.rules[0].resources and to the audit scanner's ClusterRole (scripts/generate-rules.sh prints both lists)"
            ]
        );
    }

    #[rstest]
    #[case::named(json!({"apiGroups": ["apps.cozystack.io"], "resources": ["postgreses"], "verbs": ["get", "list"]}), true)]
    #[case::wildcards(json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}), true)]
    #[case::not_named(json!({"apiGroups": ["apps.cozystack.io"], "resources": ["buckets"], "verbs": ["list"]}), false)]
    #[case::get_only(json!({"apiGroups": ["apps.cozystack.io"], "resources": ["postgreses"], "verbs": ["get"]}), false)]
    #[case::another_group(json!({"apiGroups": ["cozystack.io"], "resources": ["postgreses"], "verbs": ["list"]}), false)]
    fn a_role_covers_a_plural_when_it_may_list_it(#[case] one: Value, #[case] expected: bool) {
        assert_eq!(
            role_covers(&json!({"rules": [one]}), "postgreses"),
            expected
        );
    }

    #[test]
    fn the_rules_list_every_plural_once_and_name_each_place_that_leaves_one_out() {
        let definition = |plural: &str| json!({"spec": {"application": {"plural": plural}}});
        let definitions = [
            definition("streams"),
            definition("buckets"),
            definition("streams"),
            json!({"metadata": {"name": "broken"}}),
        ];
        let shipped = policy(json!([rule(
            &["apps.cozystack.io"],
            &["CREATE", "UPDATE"],
            &["buckets", "streams"]
        )]));
        let role = json!({"rules": [{"apiGroups": ["apps.cozystack.io"], "resources": ["buckets"], "verbs": ["list"]}]});
        let found = rules(&definitions, &shipped, &role);
        assert_eq!(
            found,
            Rules {
                plurals: vec!["buckets".into(), "streams".into()],
                not_in_policy: vec![],
                not_in_role: vec!["streams".into()],
            }
        );
        assert_eq!(found.render(), "resources:\n  - buckets\n  - streams\n");
    }
}
