//! `policy-annotate check` on the repository's release files, and on drifted copies of them.

use policy_annotate::artifacthub;
use policy_annotate::check::{self, Inputs, cargo_version};
use policy_annotate::metadata::Metadata;

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

#[test]
fn version_drift_is_caught_everywhere() {
    let base = files();
    let v = cargo_version(&base.cargo).unwrap();
    let bump = |s: &str, from: &str, to: &str| {
        assert!(s.contains(from), "{from:?} not found");
        s.replacen(from, to, 1)
    };

    let mut f = files();
    f.cargo = bump(
        &base.cargo,
        &format!("version = \"{v}\""),
        "version = \"9.9.9\"",
    );
    assert_flags(
        &f,
        "Cargo.toml has 9.9.9, metadata.yml io.kubewarden.policy.version has",
    );

    let mut f = files();
    f.artifacthub = bump(
        &base.artifacthub,
        &format!("\nversion: {v}\n"),
        "\nversion: 9.9.9\n",
    );
    assert_flags(&f, "artifacthub-pkg.yml version is 9.9.9");

    let mut f = files();
    f.artifacthub = bump(
        &base.artifacthub,
        &format!("  image: ghcr.io/cozystack/policies/tenant-reservation:v{v}"),
        "  image: ghcr.io/cozystack/policies/tenant-reservation:v9.9.9",
    );
    assert_flags(
        &f,
        "containersImages is [\"ghcr.io/cozystack/policies/tenant-reservation:v9.9.9\"]",
    );

    let mut f = files();
    f.artifacthub = bump(
        &base.artifacthub,
        &format!("  kwctl pull ghcr.io/cozystack/policies/tenant-reservation:v{v}"),
        "  kwctl pull ghcr.io/cozystack/policies/tenant-reservation:latest",
    );
    assert_flags(&f, "install does not pull");

    let mut f = files();
    f.manifest = bump(
        &base.manifest,
        &format!("module: registry://ghcr.io/cozystack/policies/tenant-reservation:v{v}"),
        "module: registry://ghcr.io/cozystack/policies/tenant-reservation:v9.9.9",
    );
    assert_flags(
        &f,
        "manifest module is \"registry://ghcr.io/cozystack/policies/tenant-reservation:v9.9.9\"",
    );
}

#[test]
fn copied_rules_and_resources_must_agree() {
    let base = files();

    let mut f = files();
    f.artifacthub = base
        .artifacthub
        .replacen("    - UPDATE\n", "    - DELETE\n", 1);
    assert_ne!(f.artifacthub, base.artifacthub);
    assert_flags(
        &f,
        "annotation kubewarden/rules disagrees with metadata.yml",
    );

    let mut f = files();
    f.artifacthub =
        base.artifacthub
            .replacen("      kind: HelmRelease\n", "      kind: Secret\n", 1);
    assert_flags(&f, "annotation kubewarden/contextAwareResources disagrees");

    let mut f = files();
    f.artifacthub = base.artifacthub.replacen(
        "kubewarden/mutation: 'false'",
        "kubewarden/mutation: 'true'",
        1,
    );
    assert_flags(&f, "annotation kubewarden/mutation disagrees");

    let mut f = files();
    f.manifest = base.manifest.replacen(
        "kind: VirtualMachineClusterInstancetype",
        "kind: VirtualMachineInstancetype",
        1,
    );
    assert_flags(&f, "manifest contextAwareResources differ");

    let mut f = files();
    f.manifest = base.manifest.replacen(
        "operations: [\"CREATE\", \"UPDATE\"]",
        "operations: [\"CREATE\"]",
        1,
    );
    assert_flags(&f, "manifest rules differ");

    let mut f = files();
    f.manifest = base
        .manifest
        .replacen("backgroundAudit: true", "backgroundAudit: false", 1);
    assert_flags(&f, "manifest backgroundAudit is Some(false)");

    // A rules change in metadata.yml alone is caught against both copies.
    let mut f = files();
    f.metadata = base
        .metadata
        .replacen("      - vminstances\n", "      - vminstancez\n", 1);
    assert_ne!(f.metadata, base.metadata);
    assert_flags(&f, "annotation kubewarden/rules disagrees");
    assert_flags(&f, "manifest rules differ");
}

#[test]
fn metadata_mistakes_kwctl_would_ignore_are_caught() {
    let base = files();

    let mut f = files();
    f.metadata = base
        .metadata
        .replacen("backgroundAudit: true", "backgroundAudits: true", 1);
    assert_flags(&f, "metadata.yml: unknown key \"backgroundAudits\"");

    let mut f = files();
    f.metadata = base
        .metadata
        .lines()
        .filter(|l| !l.contains("io.kubewarden.policy.category"))
        .collect::<Vec<_>>()
        .join("\n");
    assert_flags(&f, "annotation io.kubewarden.policy.category is missing");

    let mut f = files();
    f.metadata = base.metadata.replacen(
        "io.kubewarden.policy.severity: medium",
        "io.kubewarden.policy.severity: urgent",
        1,
    );
    assert_flags(&f, "\"urgent\" is not one of");
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
