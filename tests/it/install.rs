//! The install as a platform team applies it: every variant `kubectl apply -k` can take
//! (deploy/, its components, examples/install/) renders the ClusterAdmissionPolicy README
//! describes (mode, timeouts, server) with settings the policy accepts; `settings: {}` and the
//! shipped settings charge every in-tree kind alike; deploy/questions-ui.yml offers the
//! policy's own defaults.

use std::collections::BTreeSet;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::common::*;
use test_kit::yaml_documents;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The number `doc` states for `field`, first as "`field: N`".
fn stated(doc: &str, field: &str) -> u64 {
    let at = doc
        .find(&format!("`{field}: "))
        .unwrap_or_else(|| panic!("README.md states no `{field}: N`"));
    let digits: String = doc[at + field.len() + 3..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

struct Variant {
    name: &'static str,
    /// A kustomization of this repository, or deploy/ with these components.
    dir: Option<&'static str>,
    components: &'static [&'static str],
    namespace: &'static str,
    mode: &'static str,
    verifies: bool,
}

const VARIANTS: &[Variant] = &[
    Variant {
        name: "default",
        dir: Some("deploy"),
        components: &[],
        namespace: "kubewarden",
        mode: "monitor",
        verifies: false,
    },
    Variant {
        name: "protect",
        dir: None,
        components: &["protect"],
        namespace: "kubewarden",
        mode: "protect",
        verifies: false,
    },
    Variant {
        name: "verify-signatures",
        dir: None,
        components: &["verify-signatures"],
        namespace: "kubewarden",
        mode: "monitor",
        verifies: true,
    },
    Variant {
        name: "protect+verify-signatures",
        dir: None,
        components: &["protect", "verify-signatures"],
        namespace: "kubewarden",
        mode: "protect",
        verifies: true,
    },
    Variant {
        name: "example",
        dir: Some("examples/install"),
        components: &[],
        namespace: "cattle-kubewarden-system",
        mode: "protect",
        verifies: true,
    },
];

/// `to` relative to `from` (kustomize refuses absolute paths to resources and components).
fn relative(from: &Path, to: &Path) -> PathBuf {
    let depth = from
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    let mut path: PathBuf = std::iter::repeat_n("..", depth).collect();
    path.push(to.strip_prefix("/").unwrap());
    path
}

/// `kubectl kustomize` of the variant, as objects; None when kubectl cannot be run.
fn render(variant: &Variant) -> Option<Vec<Value>> {
    let root = Path::new(ROOT).canonicalize().unwrap();
    let (dir, scratch) = match variant.dir {
        Some(dir) => (root.join(dir), None),
        None => {
            let dir = std::env::temp_dir().canonicalize().unwrap().join(format!(
                "tenant-reservation-install-{}-{}",
                std::process::id(),
                variant.name
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let components: Vec<_> = variant
                .components
                .iter()
                .map(|c| relative(&dir, &root.join("deploy/components").join(c)))
                .collect();
            let kustomization = json!({
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "resources": [relative(&dir, &root.join("deploy"))],
                "components": components,
            });
            std::fs::write(dir.join("kustomization.yaml"), kustomization.to_string()).unwrap();
            (dir.clone(), Some(dir))
        }
    };
    let output = Command::new("kubectl").arg("kustomize").arg(&dir).output();
    if let Some(scratch) = scratch {
        std::fs::remove_dir_all(scratch).unwrap();
    }
    let output = match output {
        Err(e) if e.kind() == ErrorKind::NotFound => return None,
        other => other.expect("kubectl runs"),
    };
    assert!(
        output.status.success(),
        "{}: kubectl kustomize {}: {}",
        variant.name,
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    Some(yaml_documents(&String::from_utf8(output.stdout).unwrap()))
}

fn the<'a>(objects: &'a [Value], kind: &str, name: &str) -> &'a Value {
    let found: Vec<_> = objects
        .iter()
        .filter(|o| o["kind"] == kind && o["metadata"]["name"] == name)
        .collect();
    assert_eq!(found.len(), 1, "one {kind} {name}");
    found[0]
}

/// The fields of the settings that README's knob table says a kustomization patches.
const PATCHED_IN_THE_EXAMPLE: &[&str] = &["gpuDeviceClasses", "policyServerUser", "reservations"];

#[test]
fn every_variant_renders_the_policy_readme_describes() {
    let readme = read("README.md");
    let eval = stated(&readme, "timeoutEvalSeconds");
    let webhook = stated(&readme, "timeoutSeconds");
    assert!(
        2 <= eval && eval < webhook && webhook <= 30,
        "{eval}, {webhook}"
    );
    let module = format!(
        "registry://ghcr.io/cozystack/policies/tenant-reservation:v{}",
        env!("CARGO_PKG_VERSION")
    );
    for variant in VARIANTS {
        let Some(objects) = render(variant) else {
            println!("install: kubectl is not on PATH, so the kustomize variants are not rendered");
            return;
        };
        let name = variant.name;
        let policy = the(&objects, "ClusterAdmissionPolicy", "tenant-reservation");
        let spec = &policy["spec"];
        assert_eq!(spec["mode"], variant.mode, "{name}: mode");
        assert_eq!(
            spec["timeoutEvalSeconds"], eval,
            "{name}: timeoutEvalSeconds"
        );
        assert_eq!(spec["timeoutSeconds"], webhook, "{name}: timeoutSeconds");
        assert_eq!(spec["module"], module.as_str(), "{name}: module");
        assert_eq!(spec["policyServer"], "tenant-reservation", "{name}");
        assert_eq!(spec["failurePolicy"], "Fail", "{name}");
        assert_eq!(spec["backgroundAudit"], true, "{name}");

        // The settings: valid as the policy checks them, and the shipped ones but for what
        // the example patches.
        let settings = &spec["settings"];
        let check = check_settings(settings.to_string().as_bytes());
        assert!(check.valid, "{name}: {:?}", check.message);
        settings_from(settings);
        let shipped = test_kit::deploy_settings();
        if variant.dir == Some("examples/install") {
            for field in PATCHED_IN_THE_EXAMPLE {
                assert_ne!(
                    settings[field], shipped[field],
                    "{name}: {field} not patched"
                );
            }
            assert_eq!(
                shipped_with(&json!(
                    PATCHED_IN_THE_EXAMPLE
                        .iter()
                        .map(|f| (f.to_string(), settings[f].clone()))
                        .collect::<serde_json::Map<_, _>>()
                )),
                *settings,
                "{name}: the example changes more settings than README's table names"
            );
        } else {
            assert_eq!(*settings, shipped, "{name}: settings");
        }

        let account = the(
            &objects,
            "ServiceAccount",
            "tenant-reservation-policy-server",
        );
        assert_eq!(
            account["metadata"]["namespace"], variant.namespace,
            "{name}"
        );
        // The policy checks the permissions of the ServiceAccount policy-server runs as.
        assert_eq!(
            settings["policyServerUser"],
            format!(
                "system:serviceaccount:{}:{}",
                variant.namespace,
                account["metadata"]["name"].as_str().unwrap()
            ),
            "{name}: policyServerUser names another ServiceAccount than policy-server's"
        );
        for binding in [
            "tenant-reservation-policy-server",
            "tenant-reservation-audit-scanner",
        ] {
            for subject in the(&objects, "ClusterRoleBinding", binding)["subjects"]
                .as_array()
                .unwrap()
            {
                assert_eq!(subject["namespace"], variant.namespace, "{name}: {binding}");
            }
        }
        let server = the(&objects, "PolicyServer", "tenant-reservation");
        let config = &server["spec"]["verificationConfig"];
        assert_eq!(config.is_string(), variant.verifies, "{name}: {config}");
        if variant.verifies {
            let map = the(&objects, "ConfigMap", config.as_str().unwrap());
            assert_eq!(map["metadata"]["namespace"], variant.namespace, "{name}");
            assert!(map["data"]["verification-config"].is_string(), "{name}");
        }
    }
}

/// Every in-tree kind at its chart defaults: `charge` charges it with `settings: {}` and with
/// the shipped settings, and requires the same charge (or refusal) of both.
#[test]
fn settings_none_and_shipped_charge_every_in_tree_kind_alike() {
    let kinds = test_kit::reservations();
    assert!(kinds.len() >= 30, "{} built-in blocks", kinds.len());
    let refused: Vec<_> = kinds
        .keys()
        .filter_map(|kind| {
            charge(kind, json!({}))
                .err()
                .map(|e| format!("{kind}: {e}"))
        })
        .collect();
    assert!(refused.is_empty(), "refused at chart defaults: {refused:?}");
}

/// The settings' field names, as the policy's parser lists them.
fn settings_fields() -> BTreeSet<String> {
    let error = serde_json::from_value::<Settings>(json!({"-": 0}))
        .unwrap_err()
        .to_string();
    let (_, expected) = error
        .split_once("expected one of ")
        .unwrap_or_else(|| panic!("{error}"));
    expected
        .split(", ")
        .map(|f| f.trim().trim_matches('`').to_string())
        .collect()
}

/// deploy/questions-ui.yml: each setting's question and its default.
fn question_defaults() -> serde_json::Map<String, Value> {
    let questions = yaml_documents(&read("deploy/questions-ui.yml"));
    questions[0]["questions"]
        .as_array()
        .expect("questions-ui.yml: questions")
        .iter()
        .filter(|q| q["variable"] != "description")
        .map(|q| {
            let variable = q["variable"].as_str().expect("a question's variable");
            (variable.to_string(), q["default"].clone())
        })
        .collect()
}

#[test]
fn the_questions_offer_the_policys_defaults() {
    let defaults = question_defaults();

    // A question for every setting, and none for anything else.
    let asked: BTreeSet<String> = defaults.keys().cloned().collect();
    assert_eq!(asked, settings_fields());

    // Every default given is the same as none given.
    let all_defaults = Value::Object(defaults.clone());
    assert_eq!(
        format!("{:?}", settings_from(&all_defaults)),
        format!("{:?}", settings_from(&json!({}))),
        "the questions' defaults are not the policy's: {all_defaults}"
    );

    // The shipped settings spell out the same defaults, and name deploy/'s own policy-server.
    for (field, value) in test_kit::deploy_settings().as_object().unwrap() {
        if field == "policyServerUser" {
            assert_eq!(
                value,
                &json!(deployed_policy_server_user()),
                "{field}: deploy/"
            );
            continue;
        }
        assert_eq!(
            &defaults[field], value,
            "{field}: questions-ui.yml and deploy/"
        );
    }
}

/// The user of the ServiceAccount that deploy/policyserver.yaml runs policy-server as, when
/// its ClusterRole grants that user `create` on SubjectAccessReviews (the check needs it).
fn deployed_policy_server_user() -> String {
    let docs = yaml_documents(&read("deploy/policyserver.yaml"));
    let of = |kind: &str| {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("deploy/policyserver.yaml: no {kind}"))
    };
    let (account, server) = (of("ServiceAccount"), of("PolicyServer"));
    assert_eq!(
        server["spec"]["serviceAccountName"],
        account["metadata"]["name"]
    );
    let binding = of("ClusterRoleBinding");
    assert_eq!(binding["subjects"][0]["name"], account["metadata"]["name"]);
    let rules = of("ClusterRole")["rules"].as_array().unwrap().clone();
    assert!(
        rules.contains(&json!({
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["subjectaccessreviews"],
            "verbs": ["create"],
        })),
        "deploy/policyserver.yaml: the ClusterRole lets policy-server create SubjectAccessReviews"
    );
    format!(
        "system:serviceaccount:{}:{}",
        account["metadata"]["namespace"].as_str().unwrap(),
        account["metadata"]["name"].as_str().unwrap()
    )
}

/// The settings README's table and metadata.yml's usage text (what ArtifactHub and
/// `kwctl inspect` show) name: every one the policy has, none else; the table's defaults are
/// the questions'.
#[test]
fn readme_and_the_usage_text_name_every_setting_with_its_default() {
    let fields = settings_fields();
    let defaults = question_defaults();
    let default_of = |field: &str| {
        defaults
            .get(field)
            .cloned()
            .unwrap_or_else(|| panic!("questions-ui.yml: no {field}"))
    };

    let readme = read("README.md");
    let table = readme
        .split_once("\n## Settings\n")
        .expect("README.md: ## Settings")
        .1;
    let mut named = BTreeSet::new();
    for row in table.lines().skip_while(|l| l.is_empty()).skip(2) {
        if !row.starts_with("| `") {
            break;
        }
        let cells: Vec<&str> = row.split(" | ").collect();
        let field = cells[0].trim_start_matches("| ").trim_matches('`');
        named.insert(field.to_string());
        let default = default_of(field);
        match default.as_object() {
            // A map of entries: each key and value is in the row.
            Some(map) if !map.is_empty() => {
                for (k, v) in map {
                    let v = match v {
                        Value::String(s) => s.clone(),
                        other => other.to_string(),
                    };
                    assert!(
                        cells[1].contains(&format!("`{k}`"))
                            && cells[1].contains(&format!("`{v}`")),
                        "README.md, Settings: {field} lacks {k} -> {v}: {row}"
                    );
                }
            }
            // Otherwise the default column's first `...` is the default.
            _ => {
                let written = cells[1].split('`').nth(1).unwrap_or_default();
                let written: Value = serde_yaml::from_str(written).unwrap();
                assert_eq!(written, default, "README.md, Settings: {field}: {row}");
            }
        }
    }
    assert_eq!(named, fields, "README.md's settings table");

    let metadata = yaml_documents(&read("metadata.yml"));
    let usage = metadata[0]["annotations"]["io.kubewarden.policy.usage"]
        .as_str()
        .expect("metadata.yml: io.kubewarden.policy.usage");
    let listed: BTreeSet<String> = usage
        .split_once("Settings, all optional")
        .expect("the usage text lists the settings")
        .1
        .lines()
        .filter_map(|l| l.strip_prefix("- `"))
        .map(|l| l.split('`').next().unwrap().to_string())
        .collect();
    assert_eq!(listed, fields, "metadata.yml's usage text");
}
