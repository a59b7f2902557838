//! Every figure a refusal shows: a pool's standing on one key (budget, carve-outs,
//! reservations and their largest holders, what is available) and how far past its budget a
//! write takes it. Both gates' messages end with these, worded the same.

use crate::keys::{plural, show};
use crate::pool::Standing;
use crate::quantity::Quantity;

/// ` by N`, how far past its budget the write takes the pool.
pub fn by(key: &str, over: Option<Quantity>) -> String {
    match over {
        Some(over) => format!(" by {}", show(key, over)),
        None => String::new(),
    }
}

/// `budget B, C carved out by n sub-tenants, reserved R by m applications, available A`.
pub fn figures(standing: &Standing) -> String {
    let Standing {
        key,
        budget,
        carved,
        reserved,
        holders,
        largest,
        ..
    } = standing;
    let (key, budget, carved, reserved, holders) =
        (key.as_str(), *budget, *carved, *reserved, *holders);
    let mut figures = vec![format!("budget {}", show(key, budget))];
    if !carved.total.is_zero() {
        figures.push(format!(
            "{} carved out by {} sub-tenant{}",
            show(key, carved.total),
            carved.by,
            plural(carved.by)
        ));
    }
    let mut held = format!(
        "reserved {} by {holders} application{}",
        show(key, reserved),
        plural(holders)
    );
    if !largest.is_empty() {
        let named: Vec<String> = largest
            .iter()
            .map(|(q, label)| format!("{label} {}", show(key, *q)))
            .collect();
        held.push_str(&format!(" (largest: {})", named.join(", ")));
    }
    figures.push(held);
    match (standing.left(), standing.over_budget()) {
        (Ok(left), Ok(None)) => figures.push(format!("available {}", show(key, left))),
        (Ok(_), Ok(Some(over))) => {
            figures.push(format!("available 0 (over budget by {})", show(key, over)))
        }
        (Ok(_), Err(_)) => {
            figures.push("available 0 (over budget by more than can be shown)".to_string())
        }
        (Err(_), _) => figures.push(format!("available {}", show(key, Quantity::ZERO))),
    }
    figures.join(", ")
}
