//! The ledger as printed. The example's figures, checked by hand against its cluster state:
//! tenant-foo declares cpu 16, memory 32Gi, storage 100Gi; vm1 is a u1.medium (1 CPU, 4Gi),
//! vm2 names no instance type (the schema default, u1.medium), vm3 declares
//! 2 CPUs and 8Gi; the two VMDisks hold 20Gi each; no sub-tenant carves anything out.

use std::process::Command;

use serde_json::{Value, json};
use tenant_reservation_policy::ledger::ledger;
use tenant_reservation_policy::settings::Settings;
use test_kit::{application, tenant};

use crate::common::*;
use crate::inputs::ledger_of;
use ledger::cli::{LedgerArgs, Output};
use ledger::table;

const EXAMPLE_TABLE: &str = "\
POOL        KEY      BUDGET  CARVED (BY)  RESERVED (BY)  AVAILABLE  STATUS  LARGEST HOLDERS
tenant-foo  cpu          16            0          4 (3)         12  ok      VMInstance tenant-foo/vm3 2
                                                                            VMInstance tenant-foo/vm1 1
                                                                            VMInstance tenant-foo/vm2 1
tenant-foo  memory     32Gi            0       16Gi (3)       16Gi  ok      VMInstance tenant-foo/vm3 8Gi
                                                                            VMInstance tenant-foo/vm1 4Gi
                                                                            VMInstance tenant-foo/vm2 4Gi
tenant-foo  storage   100Gi            0       40Gi (2)       60Gi  ok      VMDisk tenant-foo/vm1-system 20Gi
                                                                            VMDisk tenant-foo/vm2-system 20Gi
";

fn example_args() -> LedgerArgs {
    on_state(
        &example().join("cluster.yaml"),
        &example().join("settings.json"),
    )
}

#[test]
fn the_examples_table() {
    let ran = ran(&example_args());
    assert_eq!((ran.code, ran.err.as_str()), (0, ""));
    assert_eq!(ran.out, EXAMPLE_TABLE);
}

#[test]
fn fewer_holders_on_request() {
    let ran = ran(&LedgerArgs {
        holders: 1,
        ..example_args()
    });
    assert_eq!(ran.out.lines().count(), 4, "{}", ran.out);
    assert!(
        ran.out
            .lines()
            .nth(2)
            .unwrap()
            .ends_with("VMInstance tenant-foo/vm3 8Gi")
    );
    let none = ran_none();
    assert!(none.lines().skip(1).all(|l| l.ends_with("  -")), "{none}");
}

fn ran_none() -> String {
    ran(&LedgerArgs {
        holders: 0,
        ..example_args()
    })
    .out
}

#[test]
fn json_for_scripts() {
    let ran = ran(&LedgerArgs {
        output: Output::Json,
        ..example_args()
    });
    let mut parsed: Value = serde_json::from_str(&ran.out).unwrap();
    // Where the settings came from, then the ledger itself.
    let settings = parsed.as_object_mut().unwrap().remove("settings").unwrap();
    assert_eq!(
        settings,
        json!(format!(
            "the settings file {}",
            example().join("settings.json").display()
        ))
    );
    assert_eq!(parsed, ledger_of(&example().join("cluster.yaml")).to_json());
    assert_eq!(parsed["warnings"], json!([]));
    let memory = &parsed["pools"][1];
    assert_eq!(
        (
            &memory["pool"],
            &memory["key"],
            &memory["budget"],
            &memory["reserved"],
            &memory["available"]
        ),
        (
            &json!("tenant-foo"),
            &json!("memory"),
            &json!("32Gi"),
            &json!("16Gi"),
            &json!("16Gi")
        )
    );
    assert_eq!(memory["overBudget"], Value::Null);
    assert_eq!(
        memory["largest"][0],
        json!({"application": "VMInstance tenant-foo/vm3", "charge": "8Gi"})
    );
}

/// A pool over budget (red) and one overcommitted by its sub-tenants (yellow), and the
/// unevaluable objects as warnings.
#[test]
fn over_budget_and_overcommitted_are_shown() {
    let k8s = test_kit::cluster(vec![
        tenant("tenant-root", "root", json!({})),
        tenant("tenant-root", "a", json!({"cpu": "4", "memory": "8Gi"})),
        tenant("tenant-a", "b", json!({"cpu": "6"})),
        application(
            "VMInstance",
            "tenant-a",
            "big",
            json!({"instanceType": "u1.2xlarge"}),
        ),
        application(
            "VMInstance",
            "tenant-a",
            "odd",
            json!({"instanceType": "no.such"}),
        ),
    ]);
    let ledger = ledger(&Settings::default(), &k8s, 3).unwrap();
    let rendered = table::render(&ledger, false);
    let plain = String::from_utf8({
        let mut strip = anstream::StripStream::new(Vec::new());
        std::io::Write::write_all(&mut strip, rendered.as_bytes()).unwrap();
        strip.into_inner()
    })
    .unwrap();
    let row = |pool: &str, key: &str| {
        plain
            .lines()
            .find(|l| l.split_whitespace().take(2).eq([pool, key]))
            .unwrap_or_else(|| panic!("no {pool} {key} in\n{plain}"))
            .to_string()
    };
    // cpu: b carves 6 out of 4, big (a u1.2xlarge, 8 CPUs) holds 8: 10 over.
    let cpu = row("tenant-a", "cpu");
    assert!(cpu.contains("over budget by 10, overcommitted"), "{cpu}");
    // memory: big holds 32Gi of 8Gi, nothing carved.
    let memory = row("tenant-a", "memory");
    assert!(memory.contains("over budget by 24Gi  "), "{memory}");
    assert!(
        rendered.contains("\u{1b}[1m\u{1b}[31mover budget by 10, overcommitted\u{1b}[0m"),
        "{rendered}"
    );
    assert!(row("tenant-a-b", "cpu").contains("  ok  "), "{plain}");
    // Overcommitted alone (the sub-tenants declare more than the budget, nothing else held).
    let mut overcommitted = ledger.pools[0].clone();
    overcommitted.over_budget = None;
    assert!(overcommitted.standing.overcommitted());
    assert_eq!(
        table::status(&overcommitted),
        (
            "overcommitted".to_string(),
            anstyle::AnsiColor::Yellow.on_default()
        )
    );
    let warnings = table::warnings(&ledger);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].starts_with("pool tenant-a: VMInstance tenant-a/odd: "),
        "{warnings:?}"
    );
    assert!(warnings[0].ends_with("(counted as zero)"), "{warnings:?}");
}

/// Colour only on a terminal: a pipe gets none, CLICOLOR_FORCE forces it, NO_COLOR wins.
#[test]
fn colour_follows_the_terminal_conventions() {
    let dir = scenario("05-vm-resize-down-over-budget");
    let run = |env: &[(&str, &str)]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_tenant-reservation"));
        command
            .args(["ledger", "--state"])
            .arg(dir.join("cluster.yaml"))
            .env_remove("NO_COLOR")
            .env_remove("CLICOLOR_FORCE")
            .env_remove("CLICOLOR");
        for (k, v) in env {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let piped = run(&[]);
    assert!(
        piped.contains("over budget by 30Gi") && !piped.contains('\u{1b}'),
        "{piped}"
    );
    assert!(run(&[("CLICOLOR_FORCE", "1")]).contains("\u{1b}[31mover budget by 30Gi"));
    assert!(!run(&[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]).contains('\u{1b}'));
}

/// `--summaries`: one PoolReservation per pool root, its status the policy's to read, and the
/// same figures as the ledger's lines.
#[test]
fn summaries_are_the_controllers_objects() {
    use tenant_reservation_policy::summary::PoolReservation;
    let json = ran(&LedgerArgs {
        summaries: true,
        output: Output::Json,
        ..example_args()
    });
    assert_eq!((json.code, json.err.as_str()), (0, ""));
    let list: Value = serde_json::from_str(&json.out).unwrap();
    assert_eq!(list["kind"], "List");
    let items: Vec<PoolReservation> = serde_json::from_value(list["items"].clone()).unwrap();
    assert_eq!(items.len(), 1);
    let summary = &items[0];
    assert_eq!(
        (
            summary.kind.as_str(),
            summary.metadata.name.as_str(),
            summary.metadata.namespace.as_str()
        ),
        ("PoolReservation", "tenant-foo", "tenant-foo")
    );
    let status = summary.status.as_ref().unwrap();
    let memory = status.sum_pool("tenant-foo", "memory").unwrap();
    assert_eq!(memory.members, ["tenant-foo"]);
    assert_eq!(
        memory.usage.of("memory"),
        (
            tenant_reservation_policy::quantity::Quantity::parse("16Gi").unwrap(),
            3
        )
    );
    // YAML unless JSON is asked.
    let yaml = ran(&LedgerArgs {
        summaries: true,
        ..example_args()
    });
    assert!(
        yaml.out.starts_with("apiVersion: v1\nitems:\n"),
        "{}",
        yaml.out
    );
}
