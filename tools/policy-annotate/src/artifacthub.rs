//! `artifacthub-pkg.yml` as `kwctl scaffold artifacthub` writes it.
//!
//! The shape follows policy-evaluator's `policy_artifacthub::ArtifactHubPkg` (kwctl 1.35.0, and
//! 1.36.0-beta.1, which changed only the install text: see [`install_text`]): the
//! same keys in the same order, serialised by the same serde_yaml release, after the same header
//! comment. One difference: kwctl refuses an `io.kubewarden.policy.author` entry without an
//! e-mail address; here such an entry leaves `maintainers` out and is reported as a warning, so
//! the file can still be produced (and checked) while no maintainer address is published.

use std::collections::BTreeMap;

use anyhow::{Result, anyhow, bail};
use serde::{Deserialize, Serialize};

use crate::metadata::*;

pub const HEADER: &str = "# Kubewarden Artifacthub Package config
#
# Use this config to submit the policy to https://artifacthub.io.
#
# This config can be saved to its default location with:
#   kwctl scaffold artifacthub > artifacthub-pkg.yml ";

pub const ANNOTATION_MUTATION: &str = "kubewarden/mutation";
pub const ANNOTATION_CONTEXT_AWARE: &str = "kubewarden/contextAwareResources";
pub const ANNOTATION_RESOURCES: &str = "kubewarden/resources";
pub const ANNOTATION_RULES: &str = "kubewarden/rules";
pub const ANNOTATION_QUESTIONS: &str = "kubewarden/questions-ui";
pub const ANNOTATION_RANCHER_HIDDEN_UI: &str = "kubewarden/hidden-ui";

const CONTROLLER_CHART: &str =
    "https://artifacthub.io/packages/helm/kubewarden/kubewarden-controller";

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactHubPkg {
    pub version: semver::Version,
    pub name: String,
    pub display_name: String,
    pub created_at: String,
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub license: Option<String>,
    #[serde(rename = "homeURL", skip_serializing_if = "Option::is_none")]
    pub home_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub containers_images: Option<Vec<ContainerImage>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keywords: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Vec<Link>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maintainers: Option<Vec<Maintainer>>,
    pub provider: Provider,
    pub recommendations: Vec<Recommendation>,
    pub annotations: BTreeMap<String, String>,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct ContainerImage {
    pub name: String,
    pub image: String,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct Link {
    pub name: String,
    pub url: String,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct Maintainer {
    pub name: String,
    pub email: String,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct Provider {
    pub name: String,
}

#[derive(Deserialize, Serialize, Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub url: String,
}

fn required<'a>(annotations: &'a BTreeMap<String, String>, key: &str) -> Result<&'a str> {
    annotations.get(key).map(String::as_str).ok_or_else(|| {
        anyhow!("metadata.yml: annotation {key} is required for artifacthub-pkg.yml")
    })
}

/// An http(s) URL as the `url` crate prints it (a bare host gets its `/`).
fn url(key: &str, s: &str) -> Result<String> {
    let rest = s
        .strip_prefix("https://")
        .or_else(|| s.strip_prefix("http://"))
        .ok_or_else(|| anyhow!("annotation {key}: {s:?} is not an http(s) URL"))?;
    if rest.is_empty() || rest.starts_with('/') || s.chars().any(char::is_whitespace) {
        bail!("annotation {key}: {s:?} is not a valid URL");
    }
    Ok(if rest.contains('/') {
        s.to_string()
    } else {
        format!("{s}/")
    })
}

fn host(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split(['/', ':']).next().unwrap_or("")
}

/// `Name <mail>, Other <mail>` into maintainers; `Err` names an entry without a usable address.
fn maintainers(author: &str) -> std::result::Result<Vec<Maintainer>, String> {
    let mut out = Vec::new();
    for entry in author.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, email) = match (entry.find('<'), entry.rfind('>')) {
            (Some(open), Some(close)) if open < close => (
                entry[..open].trim().trim_matches('"').to_string(),
                entry[open + 1..close].trim(),
            ),
            _ if entry.contains('@') && !entry.contains(' ') => (String::new(), entry),
            _ => return Err(format!("{entry:?} has no e-mail address")),
        };
        let valid = email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && domain.contains('.') && !email.contains(' ')
        });
        if !valid {
            return Err(format!("{email:?} is not an e-mail address"));
        }
        out.push(Maintainer {
            name,
            email: email.to_string(),
        });
    }
    Ok(out)
}

/// The install text kwctl writes for an OCI reference (policy-evaluator `compose_install`, as
/// changed for kwctl 1.36.0 by kubewarden/adm-controller commit 1633b482 "fix(kwctl):
/// malformatted markdown installing text").
pub fn install_text(oci_ref: &str) -> String {
    install_text_with_link(
        oci_ref,
        "[kwctl](https://docs.kubewarden.io/howtos/install-kwctl)",
    )
}

/// The install text of kwctl up to 1.35 (the release kubewarden/github-actions v7.0.1 installs),
/// which `check` accepts too: a file scaffolded by either kwctl agrees with the metadata.
pub fn install_text_kwctl_1_35(oci_ref: &str) -> String {
    install_text_with_link(oci_ref, "[`kwctl`](https://github.com/kubewarden/kwctl)")
}

fn install_text_with_link(oci_ref: &str, kwctl_link: &str) -> String {
    format!(
        "The policy can be obtained using {kwctl_link}:\n```console\nkwctl pull {oci_ref}\n```\nThen, generate the policy manifest and tune it to your liking. For example:\n```console\nkwctl scaffold manifest -t ClusterAdmissionPolicy registry://{oci_ref}\n```\n"
    )
}

/// The annotations kwctl derives from the metadata (rules and context-aware resources as YAML).
pub fn derived_annotations(
    metadata: &Metadata,
    questions: Option<&str>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    out.insert(
        ANNOTATION_MUTATION.to_string(),
        metadata.mutating.to_string(),
    );
    if !metadata.context_aware_resources.is_empty() {
        out.insert(
            ANNOTATION_CONTEXT_AWARE.to_string(),
            serde_yaml::to_string(&metadata.context_aware_resources).expect("plain data"),
        );
    }
    out.insert(
        ANNOTATION_RULES.to_string(),
        serde_yaml::to_string(&metadata.rules).expect("plain data"),
    );
    if let Some(q) = questions {
        out.insert(ANNOTATION_QUESTIONS.to_string(), q.to_string());
    }
    if let Some(h) = metadata.annotation(ANNOTATION_HIDDEN_UI) {
        out.insert(ANNOTATION_RANCHER_HIDDEN_UI.to_string(), h.to_string());
    }
    if let Some(r) = metadata.annotation(ANNOTATION_AH_RESOURCES) {
        out.insert(ANNOTATION_RESOURCES.to_string(), r.to_string());
    }
    out
}

/// The package kwctl would scaffold, and warnings about where this departs from kwctl.
pub fn scaffold(
    metadata: &Metadata,
    created_at: &str,
    questions: Option<&str>,
) -> Result<(ArtifactHubPkg, Vec<String>)> {
    let mut warnings = Vec::new();
    let annotations = metadata
        .annotations
        .as_ref()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| anyhow!("metadata.yml has no annotations"))?;
    let version_text = required(annotations, ANNOTATION_VERSION)?;
    let version = semver::Version::parse(version_text).map_err(|e| {
        anyhow!("annotation {ANNOTATION_VERSION}: {version_text:?} is not semver: {e}")
    })?;
    if questions.is_some_and(str::is_empty) {
        bail!("the questions-ui file is empty");
    }
    let oci = required(annotations, ANNOTATION_OCI_URL)?;
    if oci.contains(char::is_whitespace)
        || oci.contains('@')
        || oci.rsplit('/').next().is_some_and(|l| l.contains(':'))
    {
        bail!(
            "annotation {ANNOTATION_OCI_URL}: {oci:?} must be a repository without tag or digest"
        );
    }
    let oci_ref = format!("{oci}:v{version}");
    let keywords = match annotations.get(ANNOTATION_AH_KEYWORDS) {
        None => None,
        Some(csv) => {
            let words: Vec<String> = csv
                .split(',')
                .map(|w| w.trim_matches(' ').to_string())
                .collect();
            if words.iter().any(String::is_empty) {
                bail!("annotation {ANNOTATION_AH_KEYWORDS}: {csv:?} has an empty keyword");
            }
            Some(words)
        }
    };
    let links = match annotations.get(ANNOTATION_SOURCE) {
        None => None,
        Some(s) => {
            let source = url(ANNOTATION_SOURCE, s)?;
            let mut links = Vec::new();
            if host(&source) == "github.com" {
                let release = match annotations.get(ANNOTATION_GITHUB_RELEASE_TAG) {
                    Some(tag) => tag
                        .replace('%', "%25")
                        .replace('/', "%2F")
                        .replace('+', "%2B"),
                    None => format!("v{version}"),
                };
                links.push(Link {
                    name: "policy".into(),
                    url: format!("{source}/releases/download/{release}/policy.wasm"),
                });
            }
            links.push(Link {
                name: "source".into(),
                url: source,
            });
            Some(links)
        }
    };
    let maintainers = match annotations.get(ANNOTATION_AUTHOR) {
        None => None,
        Some(author) => match maintainers(author) {
            Ok(m) => Some(m),
            Err(e) => {
                warnings.push(format!(
                    "annotation {ANNOTATION_AUTHOR}: {e}; `maintainers` is left out, and `kwctl scaffold artifacthub` would refuse this metadata until the author reads `Name <address>`"
                ));
                None
            }
        },
    };
    let pkg = ArtifactHubPkg {
        version,
        name: required(annotations, ANNOTATION_TITLE)?.to_string(),
        display_name: required(annotations, ANNOTATION_AH_DISPLAY_NAME)?.to_string(),
        created_at: created_at.to_string(),
        description: required(annotations, ANNOTATION_DESCRIPTION)?.to_string(),
        license: annotations.get(ANNOTATION_LICENSE).cloned(),
        home_url: annotations
            .get(ANNOTATION_URL)
            .map(|u| url(ANNOTATION_URL, u))
            .transpose()?,
        containers_images: Some(vec![ContainerImage {
            name: "policy".into(),
            image: oci_ref.clone(),
        }]),
        keywords,
        links,
        install: Some(install_text(&oci_ref)),
        maintainers,
        provider: Provider {
            name: "kubewarden".into(),
        },
        recommendations: vec![Recommendation {
            url: CONTROLLER_CHART.into(),
        }],
        annotations: derived_annotations(metadata, questions),
    };
    Ok((pkg, warnings))
}

/// The file text: kwctl's header, a newline, the YAML.
pub fn render(pkg: &ArtifactHubPkg) -> String {
    format!(
        "{HEADER}\n{}",
        serde_yaml::to_string(pkg).expect("plain data")
    )
}

/// `YYYY-MM-DDTHH:MM:SS[.digits]Z` (or with a numeric offset).
pub fn rfc3339_shape(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !(digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10))
        || !(b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19))
    {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    rest == "Z"
        || (rest.len() == 6
            && (rest.starts_with('+') || rest.starts_with('-'))
            && rest.as_bytes()[3] == b':'
            && rest[1..3]
                .bytes()
                .chain(rest[4..].bytes())
                .all(|c| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_shapes() {
        assert!(rfc3339_shape("2026-01-09T09:31:41.519341089Z"));
        assert!(rfc3339_shape("2023-01-19T14:46:21+02:00"));
        assert!(!rfc3339_shape("2026-01-09 09:31:41Z"));
        assert!(!rfc3339_shape("yesterday"));
    }

    #[test]
    fn authors() {
        assert_eq!(
            maintainers("Kubewarden developers <cncf-kubewarden-maintainers@lists.cncf.io>")
                .unwrap(),
            vec![Maintainer {
                name: "Kubewarden developers".into(),
                email: "cncf-kubewarden-maintainers@lists.cncf.io".into()
            }]
        );
        assert_eq!(maintainers("A <a@x.io>, B <b@y.org>").unwrap().len(), 2);
        assert!(maintainers("tenant-reservation-policy developers").is_err());
    }

    #[test]
    fn install_texts_of_both_kwctl_releases() {
        let r = "ghcr.io/x/p:v1.0.0";
        for text in [install_text(r), install_text_kwctl_1_35(r)] {
            assert!(text.contains("kwctl pull ghcr.io/x/p:v1.0.0\n"), "{text}");
            assert!(text.contains("registry://ghcr.io/x/p:v1.0.0\n"), "{text}");
        }
        assert!(install_text(r).starts_with(
            "The policy can be obtained using [kwctl](https://docs.kubewarden.io/howtos/install-kwctl):\n"
        ));
        assert!(install_text_kwctl_1_35(r).starts_with(
            "The policy can be obtained using [`kwctl`](https://github.com/kubewarden/kwctl):\n"
        ));
    }
}
