//! The policy metadata as Kubewarden embeds it.
//!
//! The shape and the serde attributes follow `policy_metadata::Metadata` of policy-evaluator as
//! shipped in kwctl 1.35.0 (kubewarden/adm-controller, `crates/policy-evaluator`): the same field
//! order, the same renames and the same defaults, so `serde_json::to_vec` gives the bytes kwctl
//! writes into the `io.kubewarden.metadata` section. The checks in [`Metadata::validate`] are
//! the ones kwctl runs (through the `validator` crate) before it annotates a module, written out
//! here with messages that say which field is wrong.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

/// Custom section kwctl writes the JSON metadata into.
pub const METADATA_SECTION: &str = "io.kubewarden.metadata";

/// Annotation kwctl sets to its own version on every module it annotates.
pub const ANNOTATION_KWCTL_VERSION: &str = "io.kubewarden.kwctl";
/// Annotation `kwctl annotate --usage-path` fills with the file's text.
pub const ANNOTATION_USAGE: &str = "io.kubewarden.policy.usage";
pub const ANNOTATION_TITLE: &str = "io.kubewarden.policy.title";
pub const ANNOTATION_VERSION: &str = "io.kubewarden.policy.version";
pub const ANNOTATION_DESCRIPTION: &str = "io.kubewarden.policy.description";
pub const ANNOTATION_AUTHOR: &str = "io.kubewarden.policy.author";
pub const ANNOTATION_URL: &str = "io.kubewarden.policy.url";
pub const ANNOTATION_OCI_URL: &str = "io.kubewarden.policy.ociUrl";
pub const ANNOTATION_SOURCE: &str = "io.kubewarden.policy.source";
pub const ANNOTATION_LICENSE: &str = "io.kubewarden.policy.license";
pub const ANNOTATION_SEVERITY: &str = "io.kubewarden.policy.severity";
pub const ANNOTATION_CATEGORY: &str = "io.kubewarden.policy.category";
pub const ANNOTATION_GITHUB_RELEASE_TAG: &str = "com.github.release.tag";
pub const ANNOTATION_AH_RESOURCES: &str = "io.artifacthub.resources";
pub const ANNOTATION_AH_DISPLAY_NAME: &str = "io.artifacthub.displayName";
pub const ANNOTATION_AH_KEYWORDS: &str = "io.artifacthub.keywords";
pub const ANNOTATION_HIDDEN_UI: &str = "io.kubewarden.hidden-ui";

/// Top-level keys policy-evaluator knows. serde ignores any other key without a word, so a
/// misspelt `backgroundAudits:` would silently fall back to the default; `check` reports them.
/// `contextAware` is the old boolean, still accepted (and ignored) for compatibility.
pub const KNOWN_TOP_LEVEL_KEYS: [&str; 11] = [
    "protocolVersion",
    "rules",
    "annotations",
    "mutating",
    "backgroundAudit",
    "executionMode",
    "policyType",
    "contextAwareResources",
    "hostCapabilities",
    "minimumKubewardenVersion",
    "contextAware",
];

#[derive(Deserialize, Serialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    #[serde(rename = "CREATE")]
    Create,
    #[serde(rename = "UPDATE")]
    Update,
    #[serde(rename = "DELETE")]
    Delete,
    #[serde(rename = "CONNECT")]
    Connect,
    #[serde(rename = "*")]
    All,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    pub resources: Vec<String>,
    pub operations: Vec<Operation>,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "camelCase")]
pub struct ContextAwareResource {
    pub api_version: String,
    pub kind: String,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ProtocolVersion {
    #[serde(rename = "Unknown")]
    Unknown,
    #[default]
    #[serde(rename = "v1")]
    V1,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ExecutionMode {
    #[default]
    #[serde(rename = "kubewarden-wapc")]
    KubewardenWapc,
    #[serde(rename = "opa")]
    Opa,
    #[serde(rename = "gatekeeper")]
    OpaGatekeeper,
    #[serde(rename = "wasi")]
    Wasi,
}

#[derive(Deserialize, Serialize, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PolicyType {
    #[default]
    #[serde(rename = "kubernetes")]
    Kubernetes,
    #[serde(rename = "raw")]
    Raw,
}

fn default_true() -> bool {
    true
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub protocol_version: Option<ProtocolVersion>,
    pub rules: Vec<Rule>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    pub mutating: bool,
    #[serde(default = "default_true")]
    pub background_audit: bool,
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    #[serde(default)]
    pub policy_type: PolicyType,
    #[serde(default)]
    pub context_aware_resources: BTreeSet<ContextAwareResource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_capabilities: Option<BTreeSet<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub minimum_kubewarden_version: Option<semver::Version>,
}

impl Metadata {
    /// Parse metadata.yml as kwctl does (serde_yaml 0.9 into the same shape).
    pub fn from_yaml(text: &str) -> Result<Metadata, String> {
        serde_yaml::from_str(text).map_err(|e| format!("cannot parse the metadata: {e}"))
    }

    /// The annotations, empty if there are none.
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// kwctl's checks before it writes a module: every problem found, one line each.
    pub fn validate(&self) -> Result<(), Vec<String>> {
        let mut problems = Vec::new();
        match self.protocol_version {
            None => problems.push("protocolVersion: required".to_string()),
            Some(ProtocolVersion::Unknown) if self.execution_mode == ExecutionMode::KubewardenWapc => {
                problems.push(
                    "protocolVersion: a kubewarden-wapc policy must have a valid protocol version, not Unknown"
                        .to_string(),
                )
            }
            Some(_) => {}
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let at = format!("rules[{i}]");
            for (field, list) in [
                ("apiGroups", &rule.api_groups),
                ("apiVersions", &rule.api_versions),
                ("resources", &rule.resources),
            ] {
                if list.is_empty() {
                    problems.push(format!("{at}.{field}: must list at least one entry"));
                }
            }
            if rule.operations.is_empty() {
                problems.push(format!("{at}.operations: must list at least one entry"));
            }
            for (field, list) in [
                ("apiGroups", &rule.api_groups),
                ("apiVersions", &rule.api_versions),
            ] {
                if list.len() > 1 && list.iter().any(|s| s == "*") {
                    problems.push(format!(
                        "{at}.{field}: no other elements can be defined when '*' is used"
                    ));
                }
            }
            if rule.operations.len() > 1 && rule.operations.contains(&Operation::All) {
                problems.push(format!(
                    "{at}.operations: no other elements can be defined when '*' is used"
                ));
            }
            if let Err(e) = check_resources(&rule.resources) {
                problems.push(format!("{at}.resources: {e}"));
            }
        }
        for (i, r) in self.context_aware_resources.iter().enumerate() {
            if r.api_version.is_empty() {
                problems.push(format!(
                    "contextAwareResources[{i}] (kind {:?}): apiVersion must not be empty",
                    r.kind
                ));
            }
            if r.kind.is_empty() {
                problems.push(format!(
                    "contextAwareResources[{i}] (apiVersion {:?}): kind must not be empty",
                    r.api_version
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }
}

/// The resource list rules of a Kubernetes admission webhook rule (which policy-evaluator
/// transposes from `k8s.io/apiserver`'s `validateResources`).
fn check_resources(resources: &[String]) -> Result<(), String> {
    let mut wildcard_sub_of: HashSet<&str> = HashSet::new(); // "x/*" seen, holds x
    let mut wildcard_res_for: HashSet<&str> = HashSet::new(); // "*/y" seen, holds y
    let mut double_wildcard = false;
    let mut single_wildcard = false;
    let mut plain_resource = false;
    for resource in resources {
        if resource.is_empty() {
            return Err("empty resource is not allowed".into());
        }
        match resource.as_str() {
            "*/*" => double_wildcard = true,
            "*" => single_wildcard = true,
            _ => {}
        }
        let Some((res, sub)) = resource.split_once('/') else {
            // As in policy-evaluator, the last plain entry decides: `["a", "*"]` passes there.
            plain_resource = resource != "*";
            continue;
        };
        if wildcard_sub_of.contains(res) {
            return Err(format!(
                "if '{res}/*' is present, must not specify {resource}"
            ));
        }
        if wildcard_res_for.contains(sub) {
            return Err(format!(
                "if '*/{sub}' is present, must not specify {resource}"
            ));
        }
        if sub == "*" {
            wildcard_sub_of.insert(res);
        }
        if res == "*" {
            wildcard_res_for.insert(sub);
        }
    }
    if resources.len() > 1 && double_wildcard {
        return Err("if '*/*' is present, must not specify other resources".into());
    }
    if single_wildcard && plain_resource {
        return Err(
            "if '*' is present, must not specify other resources without subresources".into(),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(resources: &[&str]) -> Rule {
        Rule {
            api_groups: vec!["a".into()],
            api_versions: vec!["v1".into()],
            resources: resources.iter().map(|s| s.to_string()).collect(),
            operations: vec![Operation::Create],
        }
    }

    fn with_rules(rules: Vec<Rule>) -> Metadata {
        Metadata {
            protocol_version: Some(ProtocolVersion::V1),
            rules,
            annotations: None,
            mutating: false,
            background_audit: true,
            execution_mode: ExecutionMode::KubewardenWapc,
            policy_type: PolicyType::Kubernetes,
            context_aware_resources: BTreeSet::new(),
            host_capabilities: None,
            minimum_kubewarden_version: None,
        }
    }

    #[test]
    fn resource_lists_follow_the_kubernetes_rules() {
        for ok in [
            &["*"][..],
            &["pods"],
            &["*", "a/b", "a/*", "*/b"],
            &["a/*", "a"],
            &["*/*"],
        ] {
            assert!(with_rules(vec![rule(ok)]).validate().is_ok(), "{ok:?}");
        }
        for (bad, want) in [
            (&["*", "a"][..], "without subresources"),
            (&["a/*", "a/x"], "if 'a/*' is present"),
            (&["*/a", "x/a"], "if '*/a' is present"),
            (&["*/*", "a"], "if '*/*' is present"),
            (&[""], "empty resource"),
        ] {
            let err = with_rules(vec![rule(bad)])
                .validate()
                .unwrap_err()
                .join("\n");
            assert!(err.contains(want), "{bad:?}: {err}");
        }
    }

    #[test]
    fn serialises_like_policy_evaluator() {
        let m = with_rules(vec![]);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"protocolVersion":"v1","rules":[],"mutating":false,"backgroundAudit":true,"executionMode":"kubewarden-wapc","policyType":"kubernetes","contextAwareResources":[]}"#
        );
    }

    #[test]
    fn old_context_aware_flag_and_missing_background_audit_are_accepted() {
        let m = Metadata::from_yaml("rules: []\nmutating: false\ncontextAware: true\n").unwrap();
        assert!(m.background_audit);
        assert!(m.context_aware_resources.is_empty());
        assert_eq!(m.protocol_version, None);
    }
}
