//! The ledger for people: one row per pool and key, aligned, the largest holders under the
//! row's last column. Styles are always written (over budget red, overcommitted yellow);
//! `anstream` strips them when stdout is not a terminal, honouring `NO_COLOR` and
//! `CLICOLOR_FORCE`.

use anstyle::{AnsiColor, Style};
use tenant_reservation_policy::ledger::{Ledger, PoolLine};

const HEADER: [&str; 8] = [
    "POOL",
    "KEY",
    "BUDGET",
    "CARVED (BY)",
    "RESERVED (BY)",
    "AVAILABLE",
    "STATUS",
    "LARGEST HOLDERS",
];

/// Columns right-aligned: the quantities.
const NUMERIC: [bool; 8] = [false, false, true, true, true, true, false, false];

/// The column `-o wide` adds before the holders.
const NAMESPACES: &str = "NAMESPACES";

/// The status column, styled by the line's standing.
const STATUS_COLUMN: usize = 6;

const OVER_BUDGET: Style = AnsiColor::Red.on_default().bold();
const OVERCOMMITTED: Style = AnsiColor::Yellow.on_default();
const HEADING: Style = Style::new().bold();

/// What a line's standing is, in words, and how to show it.
pub fn status(line: &PoolLine) -> (String, Style) {
    let mut words = Vec::new();
    if let Some(over) = line.over_budget {
        words.push(format!("over budget by {}", line.show(over)));
    }
    if line.standing.overcommitted() {
        words.push("overcommitted".to_string());
    }
    let style = match (line.over_budget.is_some(), line.standing.overcommitted()) {
        (true, _) => OVER_BUDGET,
        (false, true) => OVERCOMMITTED,
        (false, false) => Style::new(),
    };
    if words.is_empty() {
        words.push("ok".to_string());
    }
    (words.join(", "), style)
}

fn with_count(quantity: String, by: usize) -> String {
    if by == 0 {
        quantity
    } else {
        format!("{quantity} ({by})")
    }
}

/// A holder as shown: `VMInstance tenant-foo/vm3 8Gi`.
fn holder(
    line: &PoolLine,
    (charge, label): &(tenant_reservation_policy::quantity::Quantity, String),
) -> String {
    format!("{label} {}", line.show(*charge))
}

/// The cells of one line (with its namespaces when `wide`), its status style, and the
/// holders after the first.
fn cells(line: &PoolLine, wide: bool) -> (Vec<String>, Style, Vec<String>) {
    let (status, style) = status(line);
    let mut holders = line.standing.largest.iter().map(|h| holder(line, h));
    let first = holders.next().unwrap_or_else(|| "-".to_string());
    let mut cells = vec![
        line.standing.pool.clone(),
        line.standing.key.clone(),
        line.show(line.standing.budget),
        with_count(
            line.show(line.standing.carved.total),
            line.standing.carved.by,
        ),
        with_count(line.show(line.standing.reserved), line.standing.holders),
        line.show(line.available),
        status,
    ];
    if wide {
        cells.push(line.namespaces.join(","));
    }
    cells.push(first);
    (cells, style, holders.collect())
}

/// The table of `ledger`, with styles; `wide` adds each pool's namespaces.
pub fn render(ledger: &Ledger, wide: bool) -> String {
    if ledger.pools.is_empty() {
        return "no pool: no Tenant declares a budget (resourceQuotas)\n".to_string();
    }
    let mut header: Vec<String> = HEADER.map(str::to_string).to_vec();
    let mut numeric = NUMERIC.to_vec();
    if wide {
        header.insert(HEADER.len() - 1, NAMESPACES.to_string());
        numeric.insert(HEADER.len() - 1, false);
    }
    let rows: Vec<_> = ledger.pools.iter().map(|l| cells(l, wide)).collect();
    let mut widths: Vec<usize> = header.iter().map(String::len).collect();
    for (cells, _, _) in &rows {
        for (width, cell) in widths.iter_mut().zip(cells) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let layout = Layout {
        widths: &widths,
        numeric: &numeric,
    };
    let mut out = String::new();
    layout.push_row(&mut out, &header, HEADING, HEADING);
    for (cells, style, more) in &rows {
        layout.push_row(&mut out, cells, Style::new(), *style);
        for holder in more {
            let mut blank = vec![String::new(); header.len()];
            blank[header.len() - 1] = holder.clone();
            layout.push_row(&mut out, &blank, Style::new(), Style::new());
        }
    }
    out
}

/// The columns' widths and alignment.
struct Layout<'a> {
    widths: &'a [usize],
    numeric: &'a [bool],
}

impl Layout<'_> {
    fn push_row(&self, out: &mut String, cells: &[String], style: Style, status: Style) {
        let mut line = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let width = self.widths[i];
            // Padding is computed on the text alone and kept outside the escapes, so these do
            // not skew the columns.
            let pad = " ".repeat(width.saturating_sub(cell.chars().count()));
            let style = if i == STATUS_COLUMN { status } else { style };
            let styled = format!("{style}{cell}{style:#}");
            if i > 0 {
                line.push_str("  ");
            }
            match (i == cells.len() - 1, self.numeric[i]) {
                (true, _) => line.push_str(&styled),
                (false, true) => line.push_str(&(pad + &styled)),
                (false, false) => line.push_str(&(styled + &pad)),
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
}

/// The problems to show on stderr: the ledger's warnings, then each pool's unevaluable
/// objects once (a pool's lines repeat them key by key).
pub fn warnings(ledger: &Ledger) -> Vec<String> {
    let mut out: Vec<String> = ledger.warnings.clone();
    let mut seen = std::collections::BTreeSet::new();
    for line in &ledger.pools {
        for problem in &line.unevaluable {
            if seen.insert((line.standing.pool.clone(), problem.clone())) {
                out.push(format!(
                    "pool {}: {problem} (counted as zero)",
                    line.standing.pool
                ));
            }
        }
    }
    out
}
