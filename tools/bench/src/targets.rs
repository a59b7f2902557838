//! The targets: each printed with its measured value, PASS or MISS.

use crate::cluster::Variant;
use crate::measure::{Growth, Row, ms, secs};
use crate::stats::{Bytes, Human};

fn verdict(pass: bool) -> &'static str {
    if pass { "PASS" } else { "MISS" }
}

fn find(rows: &[Row], cluster: usize, pool: usize, variant: Variant) -> Vec<&Row> {
    rows.iter()
        .filter(|r| {
            r.shape.cluster == cluster && r.shape.pool == pool && r.shape.variant == variant
        })
        .collect()
}

/// Prints each target with its measured value; returns whether all that were measured hold.
pub fn print_targets(rows: &[Row], paired: &[Growth]) -> bool {
    println!("\n## Targets\n");
    let mut all = true;
    let mut line = |name: &str, measured: Option<(String, bool)>| match measured {
        Some((value, pass)) => {
            all &= pass;
            println!("- {} **{name}**: {value}", verdict(pass));
        }
        None => println!("- not measured **{name}** (its rows were not run)"),
    };
    let worst = |rs: &[&Row]| {
        rs.iter()
            .map(|r| r.total.median)
            .max()
            .map(|d| (d, rs.iter().map(|r| r.answer_bytes).max().unwrap_or(0)))
    };
    let t1 = find(rows, 10_000, 20, Variant::Same);
    line(
        "a 20-application pool in a 10,000-application cluster: guest + host median ≤ 1 ms",
        worst(&t1).map(|(d, _)| {
            (
                format!("{} (worst of CREATE and UPDATE)", Human(d)),
                ms(d) <= 1.0,
            )
        }),
    );
    line(
        "… and its answers ≤ 64 KiB",
        worst(&t1).map(|(_, b)| (format!("{}", Bytes(b)), b <= 64 * 1024)),
    );
    // Growth with the cluster: from the paired measurement when it ran, else from the
    // series of the main table (which also carry the drift between series).
    let mut growth: Option<(f64, String)> = None;
    let mut worse = |ratio: f64, what: String| {
        if growth.as_ref().is_none_or(|(g, _)| ratio > *g) {
            growth = Some((ratio, what));
        }
    };
    for g in paired {
        worse(
            g.ratio(),
            format!(
                "pool {} ({}, {}) from cluster {} to {}, timed in turn",
                g.pool,
                g.variant.name(),
                g.op.name(),
                g.small,
                g.big
            ),
        );
    }
    if paired.is_empty() {
        for r in rows {
            if let Some(big) = rows.iter().find(|b| {
                b.shape.cluster == r.shape.cluster * 10
                    && b.shape.pool == r.shape.pool
                    && b.shape.variant == r.shape.variant
                    && b.op == r.op
            }) {
                worse(
                    secs(big.total.median) / secs(r.total.median),
                    format!(
                        "pool {} ({}, {}) from cluster {} to {}, separate series",
                        r.shape.pool,
                        r.shape.variant.name(),
                        r.op.name(),
                        r.shape.cluster,
                        big.shape.cluster
                    ),
                );
            }
        }
    }
    line(
        "a fixed pool's cost grows ≤ 1.2× when its cluster grows 10×",
        growth.map(|(g, at)| (format!("at most {g:.2}× ({at})"), g <= 1.2)),
    );
    let distinct: Vec<&Row> = rows
        .iter()
        .filter(|r| r.shape.pool == 1000 && r.shape.variant == Variant::Distinct)
        .collect();
    line(
        "a 1,000-application pool with every value distinct: ≤ 5 ms",
        worst(&distinct).map(|(d, _)| {
            (
                format!("{} (worst over clusters and operations)", Human(d)),
                ms(d) <= 5.0,
            )
        }),
    );
    for variant in [Variant::Same, Variant::Distinct] {
        let big: Vec<&Row> = rows
            .iter()
            .filter(|r| r.shape.pool == 10_000 && r.shape.variant == variant)
            .collect();
        line(
            &format!(
                "a 10,000-application pool ({} values): ≤ 25 ms",
                variant.name()
            ),
            worst(&big).map(|(d, _)| {
                (
                    format!("{} (worst over clusters and operations)", Human(d)),
                    ms(d) <= 25.0,
                )
            }),
        );
    }
    let over: Vec<&Row> = rows.iter().filter(|r| r.shape.pool >= 100).collect();
    let max_ratio = over.iter().max_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    line(
        "policy / deserialisation floor ≤ 1 from 100 applications on",
        max_ratio.map(|r| {
            (
                format!(
                    "at most {:.2} (cluster {}, pool {}, {}, {})",
                    r.ratio(),
                    r.shape.cluster,
                    r.shape.pool,
                    r.shape.variant.name(),
                    r.op.name()
                ),
                r.ratio() <= 1.0,
            )
        }),
    );
    all
}
