//! `policy-annotate check`: the release metadata agrees with itself.
//!
//! Kubewarden keeps one version in four places (Cargo.toml, the `io.kubewarden.policy.version`
//! annotation its release workflow checks against the tag, artifacthub-pkg.yml's `version` and
//! image tags, and the manifests that pull the image), and copies the rules and context-aware
//! resources from metadata.yml into artifacthub-pkg.yml and the ClusterAdmissionPolicy. Nothing
//! regenerates those copies here (kwctl is not available), so this compares them.

use std::collections::BTreeSet;

use anyhow::{Result, anyhow};
use serde_yaml::Value;

use crate::artifacthub::{self, ArtifactHubPkg};
use crate::metadata::*;

/// Annotations this project requires in metadata.yml (the Kubewarden set; kwctl itself requires
/// none, and `kwctl scaffold artifacthub` requires some).
pub const REQUIRED_ANNOTATIONS: [&str; 14] = [
    ANNOTATION_TITLE,
    ANNOTATION_VERSION,
    ANNOTATION_DESCRIPTION,
    ANNOTATION_AUTHOR,
    ANNOTATION_URL,
    ANNOTATION_SOURCE,
    ANNOTATION_LICENSE,
    ANNOTATION_USAGE,
    ANNOTATION_SEVERITY,
    ANNOTATION_CATEGORY,
    ANNOTATION_OCI_URL,
    ANNOTATION_AH_DISPLAY_NAME,
    ANNOTATION_AH_RESOURCES,
    ANNOTATION_AH_KEYWORDS,
];

const SEVERITIES: [&str; 5] = ["info", "low", "medium", "high", "critical"];

#[derive(Debug, Default)]
pub struct Inputs<'a> {
    pub cargo_toml: &'a str,
    pub metadata_yml: &'a str,
    pub artifacthub_pkg_yml: Option<&'a str>,
    pub questions_yml: Option<&'a str>,
    /// ClusterAdmissionPolicy manifests (name, text) whose module, rules and resources must agree.
    pub manifests: Vec<(&'a str, &'a str)>,
    /// A release tag (`v0.1.0`) that must match.
    pub tag: Option<&'a str>,
}

#[derive(Debug, Default)]
pub struct Report {
    pub ok: Vec<String>,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

/// `version = "…"` of the `[package]` table.
pub fn cargo_version(cargo_toml: &str) -> Result<String> {
    let mut in_package = false;
    for line in cargo_toml.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
            continue;
        }
        if in_package
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "version"
        {
            let value = value.split('#').next().unwrap_or("").trim();
            return value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .map(str::to_string)
                .ok_or_else(|| {
                    anyhow!("Cargo.toml: [package] version is not a plain string: {value}")
                });
        }
    }
    Err(anyhow!("Cargo.toml: no version in [package]"))
}

pub fn check(inputs: &Inputs) -> Result<Report> {
    let mut r = Report::default();
    let cargo = cargo_version(inputs.cargo_toml)?;

    // metadata.yml on its own.
    let raw: Value =
        serde_yaml::from_str(inputs.metadata_yml).map_err(|e| anyhow!("metadata.yml: {e}"))?;
    if let Some(map) = raw.as_mapping() {
        for key in map.keys() {
            let k = key.as_str().unwrap_or("<not a string>");
            if !KNOWN_TOP_LEVEL_KEYS.contains(&k) {
                r.problems.push(format!(
                    "metadata.yml: unknown key {k:?} (kwctl ignores it silently; known keys: {})",
                    KNOWN_TOP_LEVEL_KEYS.join(", ")
                ));
            }
        }
    }
    let mut metadata =
        Metadata::from_yaml(inputs.metadata_yml).map_err(|e| anyhow!("metadata.yml: {e}"))?;
    if metadata.protocol_version.is_none() {
        // kwctl fills this in from the module; assume what the SDK reports to run the rest.
        metadata.protocol_version = Some(ProtocolVersion::V1);
    }
    match metadata.validate() {
        Ok(()) => {
            r.ok.push("metadata.yml: passes kwctl's metadata validation".into())
        }
        Err(p) => r
            .problems
            .extend(p.into_iter().map(|p| format!("metadata.yml: {p}"))),
    }
    for key in REQUIRED_ANNOTATIONS {
        if metadata.annotation(key).is_none_or(|v| v.trim().is_empty()) {
            r.problems
                .push(format!("metadata.yml: annotation {key} is missing"));
        }
    }
    if let Some(sev) = metadata.annotation(ANNOTATION_SEVERITY)
        && !SEVERITIES.contains(&sev)
    {
        r.problems.push(format!(
            "metadata.yml: {ANNOTATION_SEVERITY} {sev:?} is not one of {}",
            SEVERITIES.join(", ")
        ));
    }
    match metadata.annotation(ANNOTATION_VERSION) {
        Some(v) if v == cargo => r.ok.push(format!(
            "Cargo.toml {cargo} = metadata.yml {ANNOTATION_VERSION} {v}"
        )),
        Some(v) => r.problems.push(format!(
            "version drift: Cargo.toml has {cargo}, metadata.yml {ANNOTATION_VERSION} has {v}"
        )),
        None => {}
    }
    if let Some(tag) = inputs.tag {
        if tag.strip_prefix('v') == Some(cargo.as_str()) {
            r.ok.push(format!("tag {tag} = v{cargo}"));
        } else {
            r.problems.push(format!(
                "version drift: the tag is {tag}, Cargo.toml has {cargo} (expected v{cargo})"
            ));
        }
    }
    let expected_image = metadata
        .annotation(ANNOTATION_OCI_URL)
        .map(|oci| format!("{oci}:v{cargo}"));

    if let Some(text) = inputs.artifacthub_pkg_yml {
        check_artifacthub(
            &mut r,
            &metadata,
            &cargo,
            text,
            inputs.questions_yml,
            expected_image.as_deref(),
        )?;
    }
    for (name, text) in &inputs.manifests {
        check_manifest(&mut r, name, &metadata, text, expected_image.as_deref())?;
    }
    Ok(r)
}

fn check_artifacthub(
    r: &mut Report,
    metadata: &Metadata,
    cargo: &str,
    text: &str,
    questions: Option<&str>,
    expected_image: Option<&str>,
) -> Result<()> {
    let pkg: ArtifactHubPkg =
        serde_yaml::from_str(text).map_err(|e| anyhow!("artifacthub-pkg.yml: {e}"))?;
    if pkg.version.to_string() == cargo {
        r.ok.push(format!(
            "artifacthub-pkg.yml version {} = Cargo.toml {cargo}",
            pkg.version
        ));
    } else {
        r.problems.push(format!(
            "version drift: artifacthub-pkg.yml version is {}, Cargo.toml has {cargo}",
            pkg.version
        ));
    }
    if let Some(want) = expected_image {
        let images: Vec<&str> = pkg
            .containers_images
            .iter()
            .flatten()
            .map(|i| i.image.as_str())
            .collect();
        if images == [want] {
            r.ok.push(format!("artifacthub-pkg.yml containersImages = {want}"));
        } else {
            r.problems.push(format!(
                "version drift: artifacthub-pkg.yml containersImages is {images:?}, expected [{want:?}]"
            ));
        }
        let install = pkg.install.as_deref().unwrap_or("");
        if install.contains(&format!("kwctl pull {want}\n"))
            && install.contains(&format!("registry://{want}\n"))
        {
            r.ok.push(format!("artifacthub-pkg.yml install pulls {want}"));
        } else {
            r.problems.push(format!(
                "version drift: artifacthub-pkg.yml install does not pull {want}: {install:?}"
            ));
        }
    }
    let derived = artifacthub::derived_annotations(metadata, questions);
    for key in [
        artifacthub::ANNOTATION_RULES,
        artifacthub::ANNOTATION_CONTEXT_AWARE,
        artifacthub::ANNOTATION_MUTATION,
        artifacthub::ANNOTATION_RESOURCES,
        artifacthub::ANNOTATION_QUESTIONS,
    ] {
        let have = pkg.annotations.get(key);
        let want = derived.get(key);
        let same = match (have, want) {
            (Some(h), Some(w)) => {
                // Compare as data (any YAML layout of the same rules agrees), then as text.
                let hv: Value = serde_yaml::from_str(h).unwrap_or(Value::String(h.clone()));
                let wv: Value = serde_yaml::from_str(w).unwrap_or(Value::String(w.clone()));
                hv == wv
            }
            (None, None) => true,
            _ => false,
        };
        if same {
            r.ok.push(format!(
                "artifacthub-pkg.yml {key} agrees with metadata.yml"
            ));
        } else {
            r.problems.push(format!(
                "artifacthub-pkg.yml annotation {key} disagrees with metadata.yml:\n    have: {have:?}\n    want: {want:?}"
            ));
        }
    }
    // Finally the whole file, as `kwctl scaffold artifacthub` would write it today. kwctl 1.35
    // and 1.36 word the install text differently; either one is kwctl's.
    let (mut regenerated, warnings) = artifacthub::scaffold(metadata, &pkg.created_at, questions)?;
    if let Some(oci_ref) = expected_image {
        let old = artifacthub::install_text_kwctl_1_35(oci_ref);
        if pkg.install.as_deref() == Some(old.as_str()) {
            regenerated.install = Some(old);
        }
    }
    r.warnings.extend(warnings);
    if artifacthub::rfc3339_shape(&pkg.created_at) {
        r.ok.push("artifacthub-pkg.yml createdAt is an RFC 3339 UTC time".into());
    } else {
        r.problems.push(format!(
            "artifacthub-pkg.yml createdAt {:?} is not an RFC 3339 UTC time",
            pkg.created_at
        ));
    }
    if regenerated == pkg {
        r.ok.push(
            "artifacthub-pkg.yml is what `kwctl scaffold artifacthub` gives for metadata.yml"
                .into(),
        );
        if artifacthub::render(&regenerated) != text {
            r.warnings.push(
                "artifacthub-pkg.yml has the right content but not kwctl's layout (run `make artifacthub-pkg.yml`)".into(),
            );
        }
    } else {
        let have = serde_yaml::to_value(&pkg)?;
        let want = serde_yaml::to_value(&regenerated)?;
        let mut keys = BTreeSet::new();
        if let (Some(h), Some(w)) = (have.as_mapping(), want.as_mapping()) {
            for (k, v) in w {
                if h.get(k) != Some(v) {
                    keys.insert(k.as_str().unwrap_or("?").to_string());
                }
            }
            for k in h.keys() {
                if !w.contains_key(k) {
                    keys.insert(k.as_str().unwrap_or("?").to_string());
                }
            }
        }
        r.problems.push(format!(
            "artifacthub-pkg.yml differs from metadata.yml in: {} (regenerate it with `make artifacthub-pkg.yml`)",
            keys.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(())
}

fn check_manifest(
    r: &mut Report,
    name: &str,
    metadata: &Metadata,
    text: &str,
    expected_image: Option<&str>,
) -> Result<()> {
    let doc: Value = serde_yaml::from_str(text).map_err(|e| anyhow!("{name}: {e}"))?;
    let spec = doc.get("spec").ok_or_else(|| anyhow!("{name}: no spec"))?;
    if let Some(want) = expected_image {
        let module = spec.get("module").and_then(Value::as_str).unwrap_or("");
        if module == format!("registry://{want}") {
            r.ok.push(format!("{name} module = registry://{want}"));
        } else {
            r.problems.push(format!(
                "version drift: {name} module is {module:?}, expected \"registry://{want}\""
            ));
        }
    }
    let rules: Vec<Rule> = match spec.get("rules") {
        Some(v) => serde_yaml::from_value(v.clone()).map_err(|e| anyhow!("{name} rules: {e}"))?,
        None => vec![],
    };
    if rules == metadata.rules {
        r.ok.push(format!("{name} rules = metadata.yml rules"));
    } else {
        r.problems.push(format!(
            "{name} rules differ from metadata.yml:\n    have: {rules:?}\n    want: {:?}",
            metadata.rules
        ));
    }
    let car: BTreeSet<ContextAwareResource> = match spec.get("contextAwareResources") {
        Some(v) => serde_yaml::from_value(v.clone())
            .map_err(|e| anyhow!("{name} contextAwareResources: {e}"))?,
        None => BTreeSet::new(),
    };
    if car == metadata.context_aware_resources {
        r.ok.push(format!("{name} contextAwareResources = metadata.yml"));
    } else {
        r.problems.push(format!(
            "{name} contextAwareResources differ from metadata.yml:\n    have: {car:?}\n    want: {:?}",
            metadata.context_aware_resources
        ));
    }
    for (key, want) in [
        ("mutating", metadata.mutating),
        ("backgroundAudit", metadata.background_audit),
    ] {
        match spec.get(key).and_then(Value::as_bool) {
            Some(v) if v == want => r.ok.push(format!("{name} {key} = {want}")),
            other => r.problems.push(format!(
                "{name} {key} is {other:?}, metadata.yml says {want}"
            )),
        }
    }
    Ok(())
}
