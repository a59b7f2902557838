//! The markdown report's tables (the main table, the answers by lookup, the sweeps, the growth
//! pairs), the SVG plot of the rows, and the machine's description.

use tenant_reservation_policy::cluster::Source;

use crate::cluster::Variant;
use crate::host::source_name;
use crate::measure::{Growth, Op, Row, ms};
use crate::plot;
use crate::stats::{Bytes, Human};
use crate::sweep::Sweep;

pub fn print_table(rows: &[Row]) {
    println!("\n## Admission cost by cluster and pool\n");
    println!(
        "| cluster | pool | values | op | host calls | answer bytes | reflectors opened (cold): initial LISTs | guest median | guest p99 | host median | guest + host median | cold first request, modelled (host part; no API server, no watch sync: see `make bench-cluster`) | native policy | floor | policy / floor |"
    );
    println!("|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {}: {} in {} pages | {} | {} | {} | **{}** | {} ({}) | {} | {} | {:.2} |",
            r.shape.cluster,
            r.shape.pool,
            r.shape.variant.name(),
            r.op.name(),
            r.host_calls,
            Bytes(r.answer_bytes),
            r.opened,
            Bytes(r.list_bytes),
            r.list_pages,
            Human(r.guest.median),
            Human(r.guest.p99),
            Human(r.host.median),
            Human(r.total.median),
            Human(r.cold.median),
            Human(r.cold_host.median),
            Human(r.native.median),
            Human(r.floor.median),
            r.ratio()
        );
    }
    println!(
        "\nguest = the `validate` call less the host's time in it (waPC copies and the host-call dispatch stay in the guest's share); host = the modelled policy-server work for the request's calls; cold = a fresh instance on a host without reflectors (instantiate + validate; its host part opens the reflectors: decode, strip and prune the initial LISTs; the API server's own work and the network are not in it); native policy = the same policy compiled for this machine, answered from memory; floor = natively deserialising the same answers into `serde_json::Value`; policy / floor = guest median / floor median."
    );
}

/// Where a request's answer bytes come from, for the smallest pool of each cluster.
pub fn print_breakdown(rows: &[Row]) {
    let Some(smallest) = rows.iter().map(|r| r.shape.pool).min() else {
        return;
    };
    println!(
        "\n## The answers of one request, by lookup (pool of {smallest}, same values, CREATE)\n"
    );
    println!("| cluster | lookup | calls | bytes |");
    println!("|---:|---|---:|---:|");
    for r in rows.iter().filter(|r| {
        r.shape.pool == smallest && r.shape.variant == Variant::Same && r.op == Op::Create
    }) {
        for (source, (calls, bytes)) in &r.by_source {
            println!(
                "| {} | {} | {calls} | {} |",
                r.shape.cluster,
                source_name(*source),
                Bytes(*bytes)
            );
        }
    }
}

pub fn print_sweeps(sweeps: &[Sweep]) {
    println!(
        "\n## Reflectors of one policy-server replica after a write in every tenant's namespace\n"
    );
    println!(
        "| cluster | tenants (bounded; levels 1/2/3) | namespaces in a pool | reflectors | by name: tenants | namespaces listed | definitions + schemas + instance types | objects held | held (pruned JSON) | initial LISTs (API server → host) | LIST pages |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for s in sweeps {
        let r = &s.reflectors;
        let n = |src| r.by_source.get(&src).copied().unwrap_or(0);
        println!(
            "| {} | {} ({}; {}/{}/{}) | {} | **{}** | {} | {} | {} + {} + {} | {} | {} | {} | {} |",
            s.cluster,
            s.tenants,
            s.bounded,
            s.levels[0],
            s.levels[1],
            s.levels[2],
            s.pooled_namespaces,
            r.count,
            n(Some(Source::Tenant)),
            n(Some(Source::Applications)),
            n(Some(Source::Definitions)),
            n(Some(Source::Schema)),
            n(Some(Source::InstanceTypes)),
            r.objects,
            Bytes(r.held_bytes),
            Bytes(r.list_bytes),
            r.list_pages
        );
    }
    println!(
        "\nOne CREATE of a small VM in every tenant's namespace (the root's included), natively, on one fresh host; the sweep took {}. Each reflector is one initial LIST and then one WATCH held open for the replica's life, per replica.",
        sweeps
            .iter()
            .map(|s| format!("{} for {}", Human(s.took), s.cluster))
            .collect::<Vec<_>>()
            .join(", ")
    );
}

pub fn print_growth(growth: &[Growth]) {
    println!(
        "
## A fixed pool in clusters 10× apart, timed in turn
"
    );
    println!(
        "| pool | values | op | clusters | host calls | answer bytes | guest + host median | ratio | samples |"
    );
    println!("|---:|---|---|---|---|---|---|---:|---:|");
    for g in growth {
        println!(
            "| {} | {} | {} | {} → {} | {} → {} | {} → {} | {} → {} | {:.2}× | {} |",
            g.pool,
            g.variant.name(),
            g.op.name(),
            g.small,
            g.big,
            g.calls.0,
            g.calls.1,
            Bytes(g.bytes.0),
            Bytes(g.bytes.1),
            Human(g.medians.0),
            Human(g.medians.1),
            g.ratio(),
            g.samples
        );
    }
    println!(
        "
Both clusters' requests alternate in one loop on the same machine (each side its own instance and host), so the ratio is free of the drift between series of the main table."
    );
}

/// The plot: median guest + host against pool size (one line per cluster) and against
/// cluster size (one line per pool), CREATE; dashed: distinct values.
pub fn plot_rows(rows: &[Row], subtitle: &str) -> String {
    let create: Vec<&Row> = rows.iter().filter(|r| r.op == Op::Create).collect();
    let mut clusters: Vec<usize> = create.iter().map(|r| r.shape.cluster).collect();
    clusters.sort_unstable();
    clusters.dedup();
    let mut pools: Vec<usize> = create.iter().map(|r| r.shape.pool).collect();
    pools.sort_unstable();
    pools.dedup();
    let variants = [Variant::Same, Variant::Distinct];
    let mut by_pool = Vec::new();
    let mut by_cluster = Vec::new();
    for (i, &cluster) in clusters.iter().enumerate() {
        for variant in variants {
            let points: Vec<(f64, f64)> = create
                .iter()
                .filter(|r| r.shape.cluster == cluster && r.shape.variant == variant)
                .map(|r| (r.shape.pool as f64, ms(r.total.median)))
                .collect();
            if !points.is_empty() {
                by_pool.push(plot::Series {
                    label: format!(
                        "cluster {}, {}",
                        plot::short(cluster as f64),
                        variant.name()
                    ),
                    color: plot::COLORS[i % plot::COLORS.len()],
                    dashed: variant == Variant::Distinct,
                    points,
                });
            }
        }
    }
    for (i, &pool) in pools.iter().enumerate() {
        for variant in variants {
            let points: Vec<(f64, f64)> = create
                .iter()
                .filter(|r| r.shape.pool == pool && r.shape.variant == variant)
                .map(|r| (r.shape.cluster as f64, ms(r.total.median)))
                .collect();
            if !points.is_empty() {
                by_cluster.push(plot::Series {
                    label: format!("pool {}, {}", plot::short(pool as f64), variant.name()),
                    color: plot::COLORS[(i + 3) % plot::COLORS.len()],
                    dashed: variant == Variant::Distinct,
                    points,
                });
            }
        }
    }
    let targets = vec![
        (1.0, "1 ms: 20 apps".to_string()),
        (5.0, "5 ms: 1,000 distinct".to_string()),
        (25.0, "25 ms: 10,000".to_string()),
    ];
    plot::render(
        "Admission cost: guest + host median (ms), log-log",
        subtitle,
        &[
            plot::Panel {
                title: "against the pool's size".into(),
                x_label: "applications in the pool".into(),
                y_label: "ms".into(),
                series: by_pool,
                targets: targets.clone(),
            },
            plot::Panel {
                title: "against the cluster's size".into(),
                x_label: "applications in the cluster".into(),
                y_label: "ms".into(),
                series: by_cluster,
                targets,
            },
        ],
    )
}

/// `/proc/loadavg`'s three averages: the noise the figures were taken in.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_string())
}

pub fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}
