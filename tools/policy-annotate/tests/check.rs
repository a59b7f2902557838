//! `policy-annotate check` on the repository's release files, and on drifted copies of them.

use policy_annotate::artifacthub;
use policy_annotate::check::{self, Inputs, cargo_version};
use policy_annotate::metadata::Metadata;
use rstest::rstest;

fn repo(path: &str) -> String {
    std::fs::read_to_string(format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))).unwrap()
}

struct Files {
    cargo: String,
    metadata: String,
    artifacthub: String,
    questions: String,
    manifest: String,
}

fn files() -> Files {
    Files {
        cargo: repo("Cargo.toml"),
        metadata: repo("metadata.yml"),
        artifacthub: repo("artifacthub-pkg.yml"),
        questions: repo("deploy/questions-ui.yml"),
        manifest: repo("deploy/clusteradmissionpolicy.yaml"),
    }
}

fn problems(f: &Files, tag: Option<&str>) -> Vec<String> {
    check::check(&Inputs {
        cargo_toml: &f.cargo,
        metadata_yml: &f.metadata,
        artifacthub_pkg_yml: Some(&f.artifacthub),
        questions_yml: Some(&f.questions),
        manifests: vec![("manifest", &f.manifest)],
        tag,
    })
    .unwrap()
    .problems
}

fn assert_flags(f: &Files, want: &str) {
    let p = problems(f, None);
    assert!(
        p.iter().any(|l| l.contains(want)),
        "expected {want:?} among {p:#?}"
    );
}

#[test]
fn the_repository_files_agree() {
    let f = files();
    assert_eq!(problems(&f, None), Vec::<String>::new());
    let v = cargo_version(&f.cargo).unwrap();
    assert_eq!(problems(&f, Some(&format!("v{v}"))), Vec::<String>::new());
    assert!(problems(&f, Some("v99.0.0"))[0].contains("the tag is v99.0.0"));
}

#[test]
fn artifacthub_pkg_is_kwctls_layout() {
    // Regenerating with the committed createdAt gives the committed file byte for byte.
    let f = files();
    let pkg: artifacthub::ArtifactHubPkg = serde_yaml::from_str(&f.artifacthub).unwrap();
    let metadata = Metadata::from_yaml(&f.metadata).unwrap();
    let (again, _) = artifacthub::scaffold(&metadata, &pkg.created_at, Some(&f.questions)).unwrap();
    assert_eq!(artifacthub::render(&again), f.artifacthub);
    assert!(f.artifacthub.starts_with(artifacthub::HEADER));
    assert!(f.artifacthub.contains("  kubewarden/mutation: 'false'\n"));
}

/// One release file edited, `from` (where `{v}` is the Cargo version) replaced once by `to`: the
/// check reports `want`.
#[rstest]
// Version drift, caught everywhere.
#[case::cargo_version(
    "Cargo.toml",
    "version = \"{v}\"",
    "version = \"9.9.9\"",
    "Cargo.toml has 9.9.9, metadata.yml io.kubewarden.policy.version has"
)]
#[case::artifacthub_version(
    "artifacthub-pkg.yml",
    "\nversion: {v}\n",
    "\nversion: 9.9.9\n",
    "artifacthub-pkg.yml version is 9.9.9"
)]
#[case::artifacthub_image(
    "artifacthub-pkg.yml",
    "  image: ghcr.io/cozystack/policies/tenant-reservation:v{v}",
    "  image: ghcr.io/cozystack/policies/tenant-reservation:v9.9.9",
    "containersImages is [\"ghcr.io/cozystack/policies/tenant-reservation:v9.9.9\"]"
)]
#[case::artifacthub_install(
    "artifacthub-pkg.yml",
    "  kwctl pull ghcr.io/cozystack/policies/tenant-reservation:v{v}",
    "  kwctl pull ghcr.io/cozystack/policies/tenant-reservation:latest",
    "install does not pull"
)]
#[case::manifest_module(
    "manifest",
    "module: registry://ghcr.io/cozystack/policies/tenant-reservation:v{v}",
    "module: registry://ghcr.io/cozystack/policies/tenant-reservation:v9.9.9",
    "manifest module is \"registry://ghcr.io/cozystack/policies/tenant-reservation:v9.9.9\""
)]
// Copied rules and resources must agree.
#[case::artifacthub_rules(
    "artifacthub-pkg.yml",
    "    - UPDATE\n",
    "    - DELETE\n",
    "annotation kubewarden/rules disagrees with metadata.yml"
)]
#[case::artifacthub_resources(
    "artifacthub-pkg.yml",
    "      kind: HelmRelease\n",
    "      kind: Secret\n",
    "annotation kubewarden/contextAwareResources disagrees"
)]
#[case::artifacthub_mutation(
    "artifacthub-pkg.yml",
    "kubewarden/mutation: 'false'",
    "kubewarden/mutation: 'true'",
    "annotation kubewarden/mutation disagrees"
)]
#[case::manifest_resources(
    "manifest",
    "kind: VirtualMachineClusterInstancetype",
    "kind: VirtualMachineInstancetype",
    "manifest contextAwareResources differ"
)]
#[case::manifest_rules(
    "manifest",
    "operations: [\"CREATE\", \"UPDATE\"]",
    "operations: [\"CREATE\"]",
    "manifest rules differ"
)]
#[case::manifest_background_audit(
    "manifest",
    "backgroundAudit: true",
    "backgroundAudit: false",
    "manifest backgroundAudit is Some(false)"
)]
// A rules change in metadata.yml alone is caught against both copies.
#[case::metadata_rules_vs_artifacthub(
    "metadata.yml",
    "      - vminstances\n",
    "      - vminstancez\n",
    "annotation kubewarden/rules disagrees"
)]
#[case::metadata_rules_vs_manifest(
    "metadata.yml",
    "      - vminstances\n",
    "      - vminstancez\n",
    "manifest rules differ"
)]
// Metadata mistakes kwctl would ignore.
#[case::metadata_unknown_key(
    "metadata.yml",
    "backgroundAudit: true",
    "backgroundAudits: true",
    "metadata.yml: unknown key \"backgroundAudits\""
)]
#[case::metadata_no_category(
    "metadata.yml",
    "  io.kubewarden.policy.category: Resource Quota\n",
    "",
    "annotation io.kubewarden.policy.category is missing"
)]
#[case::metadata_severity(
    "metadata.yml",
    "io.kubewarden.policy.severity: medium",
    "io.kubewarden.policy.severity: urgent",
    "\"urgent\" is not one of"
)]
fn drift_is_caught(#[case] file: &str, #[case] from: &str, #[case] to: &str, #[case] want: &str) {
    let mut f = files();
    let from = from.replace("{v}", &cargo_version(&f.cargo).unwrap());
    let text = match file {
        "Cargo.toml" => &mut f.cargo,
        "metadata.yml" => &mut f.metadata,
        "artifacthub-pkg.yml" => &mut f.artifacthub,
        "manifest" => &mut f.manifest,
        _ => unreachable!("no release file {file}"),
    };
    assert!(text.contains(&from), "{from:?} not found in {file}");
    *text = text.replacen(&from, to, 1);
    assert_flags(&f, want);
}

#[test]
fn the_install_text_of_either_kwctl_release_agrees() {
    let base = files();
    let new_link = "[kwctl](https://docs.kubewarden.io/howtos/install-kwctl)";
    let old_link = "[`kwctl`](https://github.com/kubewarden/kwctl)";
    assert!(base.artifacthub.contains(new_link));

    // kwctl 1.35 (the release workflow's) wrote the link differently: still kwctl's file.
    let mut f = files();
    f.artifacthub = base.artifacthub.replacen(new_link, old_link, 1);
    assert_eq!(problems(&f, None), Vec::<String>::new());

    // Any other text is drift.
    let mut f = files();
    f.artifacthub = base
        .artifacthub
        .replacen(new_link, "[kwctl](https://example.org)", 1);
    assert_flags(&f, "differs from metadata.yml in: install");
}
