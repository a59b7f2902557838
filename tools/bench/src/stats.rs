//! Order statistics of a sample of durations.

use std::fmt;
use std::time::Duration;

#[derive(Clone, Copy, Debug)]
pub struct Summary {
    pub median: Duration,
    pub p99: Duration,
}

impl Summary {
    pub fn of(samples: &mut [Duration]) -> Summary {
        assert!(!samples.is_empty(), "no samples");
        samples.sort_unstable();
        Summary {
            median: quantile(samples, 0.5),
            p99: quantile(samples, 0.99),
        }
    }
}

/// Nearest-rank quantile of sorted samples.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A duration in the unit that keeps three significant figures readable.
pub struct Human(pub Duration);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0.as_nanos() as f64;
        let (value, unit) = if ns >= 1e9 {
            (ns / 1e9, "s")
        } else if ns >= 1e6 {
            (ns / 1e6, "ms")
        } else if ns >= 1e3 {
            (ns / 1e3, "µs")
        } else {
            (ns, "ns")
        };
        let text = if value >= 100.0 {
            format!("{value:.0} {unit}")
        } else if value >= 10.0 {
            format!("{value:.1} {unit}")
        } else {
            format!("{value:.2} {unit}")
        };
        f.pad(&text)
    }
}

/// Bytes in KiB/MiB.
pub struct Bytes(pub usize);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0 as f64;
        let text = if b >= (1 << 20) as f64 {
            format!("{:.2} MiB", b / (1 << 20) as f64)
        } else {
            format!("{:.1} KiB", b / 1024.0)
        };
        f.pad(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_quantiles() {
        let mut s: Vec<Duration> = (1..=100).rev().map(Duration::from_micros).collect();
        let sum = Summary::of(&mut s);
        assert_eq!(sum.median, Duration::from_micros(50));
        assert_eq!(sum.p99, Duration::from_micros(99));
        let mut one = vec![Duration::from_millis(3)];
        let sum = Summary::of(&mut one);
        assert_eq!(
            (sum.median, sum.p99),
            (Duration::from_millis(3), Duration::from_millis(3))
        );
    }

    #[test]
    fn human_units() {
        assert_eq!(
            Human(Duration::from_nanos(1_234_567)).to_string(),
            "1.23 ms"
        );
        assert_eq!(Human(Duration::from_micros(250)).to_string(), "250 µs");
        assert_eq!(Bytes(3 << 20).to_string(), "3.00 MiB");
    }
}
