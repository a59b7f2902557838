//! The bench's picture: log-log line charts side by side in one SVG, written by hand (no
//! plotting crate).

use std::fmt::Write;

/// One line of a chart.
pub struct Series {
    pub label: String,
    pub color: &'static str,
    pub dashed: bool,
    /// (x, y), both positive.
    pub points: Vec<(f64, f64)>,
}

/// One chart.
pub struct Panel {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Horizontal lines: (y, label).
    pub targets: Vec<(f64, String)>,
}

/// Colours that stay apart in print and for the common colour blindnesses (Okabe-Ito).
pub const COLORS: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];

const PANEL_W: f64 = 460.0;
const PANEL_H: f64 = 340.0;
const MARGIN_L: f64 = 64.0;
const MARGIN_R: f64 = 16.0;
const MARGIN_T: f64 = 36.0;
const MARGIN_B: f64 = 52.0;
const HEADER: f64 = 48.0;

/// `1k`, `10k`, `20`, `0.5`.
pub fn short(v: f64) -> String {
    if v >= 1000.0 && (v / 1000.0).fract() == 0.0 {
        format!("{}k", v / 1000.0)
    } else if v.fract() == 0.0 {
        format!("{v}")
    } else {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A log axis over [lo, hi] (whole decades around the data, or 1-2-5 steps when narrow).
struct LogAxis {
    lo: f64,
    hi: f64,
}

impl LogAxis {
    fn around(values: impl Iterator<Item = f64>) -> LogAxis {
        let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for v in values.filter(|v| v.is_finite() && *v > 0.0) {
            lo = lo.min(v);
            hi = hi.max(v);
        }
        if !lo.is_finite() {
            return LogAxis { lo: 1.0, hi: 10.0 };
        }
        // Round out to the 1-2-5 steps around.
        let down = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [5.0, 2.0, 1.0]
                .into_iter()
                .map(|m| m * d)
                .find(|s| *s <= v * 1.0001)
                .unwrap_or(d)
        };
        let up = |v: f64| {
            let d = 10f64.powf(v.log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .into_iter()
                .map(|m| m * d)
                .find(|s| *s >= v * 0.9999)
                .unwrap_or(10.0 * d)
        };
        let (lo, hi) = (down(lo), up(hi));
        if hi <= lo {
            LogAxis {
                lo: lo / 2.0,
                hi: lo * 2.0,
            }
        } else {
            LogAxis { lo, hi }
        }
    }

    /// Position in [0, 1].
    fn at(&self, v: f64) -> f64 {
        (v.max(self.lo * 1e-3).log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
    }

    /// 1-2-5 ticks in the range.
    fn ticks(&self) -> Vec<f64> {
        let mut ticks = Vec::new();
        let mut d = 10f64.powf(self.lo.log10().floor());
        while d <= self.hi * 1.0001 {
            for m in [1.0, 2.0, 5.0] {
                let t = m * d;
                if t >= self.lo * 0.9999 && t <= self.hi * 1.0001 {
                    ticks.push(t);
                }
            }
            d *= 10.0;
        }
        ticks
    }
}

fn panel(out: &mut String, p: &Panel, x0: f64, y0: f64) {
    let xs = LogAxis::around(p.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)));
    let ys = LogAxis::around(
        p.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(p.targets.iter().map(|t| t.0)),
    );
    let (w, h) = (PANEL_W - MARGIN_L - MARGIN_R, PANEL_H - MARGIN_T - MARGIN_B);
    let (left, top) = (x0 + MARGIN_L, y0 + MARGIN_T);
    let px = |v: f64| left + xs.at(v) * w;
    let py = |v: f64| top + (1.0 - ys.at(v)) * h;
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" font-weight="bold">{}</text>"#,
        x0 + MARGIN_L,
        y0 + 22.0,
        escape(&p.title)
    );
    let _ = writeln!(
        out,
        r##"<rect x="{left:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="none" stroke="#888"/>"##
    );
    // The x ticks: the data's own x values (pool or cluster sizes).
    let mut x_ticks: Vec<f64> = p
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    x_ticks.sort_by(f64::total_cmp);
    x_ticks.dedup();
    for t in &x_ticks {
        let x = px(*t);
        let _ = writeln!(
            out,
            r##"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{:.1}" stroke="#ddd"/><text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"##,
            top + h,
            top + h + 15.0,
            short(*t)
        );
    }
    for t in ys.ticks() {
        let y = py(t);
        let _ = writeln!(
            out,
            r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"##,
            left + w,
            left - 5.0,
            y + 4.0,
            short(t)
        );
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        left + w / 2.0,
        top + h + 34.0,
        escape(&p.x_label)
    );
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 {:.1} {:.1})">{}</text>"#,
        x0 + 16.0,
        top + h / 2.0,
        x0 + 16.0,
        top + h / 2.0,
        escape(&p.y_label)
    );
    for (y, label) in &p.targets {
        let y = py(*y);
        let _ = writeln!(
            out,
            r##"<line x1="{left:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#B00" stroke-width="1" stroke-dasharray="2 3"/><text x="{:.1}" y="{:.1}" font-size="10" fill="#B00" text-anchor="end">{}</text>"##,
            left + w,
            left + w - 3.0,
            y - 3.0,
            escape(label)
        );
    }
    for s in &p.series {
        let points: Vec<String> = s
            .points
            .iter()
            .map(|(x, y)| format!("{:.1},{:.1}", px(*x), py(*y)))
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{dash}/>"#,
            points.join(" "),
            s.color
        );
        for (x, y) in &s.points {
            let _ = writeln!(
                out,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{}"/>"#,
                px(*x),
                py(*y),
                s.color
            );
        }
    }
    // The legend, top left inside the frame.
    for (i, s) in p.series.iter().enumerate() {
        let y = top + 14.0 + 15.0 * i as f64;
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        let _ = writeln!(
            out,
            r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="2"{dash}/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            left + 8.0,
            left + 32.0,
            s.color,
            left + 37.0,
            y + 4.0,
            escape(&s.label)
        );
    }
}

/// The SVG of `panels` side by side under `title` and `subtitle`.
pub fn render(title: &str, subtitle: &str, panels: &[Panel]) -> String {
    let width = PANEL_W * panels.len().max(1) as f64;
    let height = PANEL_H + HEADER;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="sans-serif">"#
    );
    let _ = writeln!(
        out,
        r##"<rect width="100%" height="100%" fill="white"/><text x="12" y="20" font-size="15" font-weight="bold">{}</text><text x="12" y="38" font-size="11" fill="#444">{}</text>"##,
        escape(title),
        escape(subtitle)
    );
    for (i, p) in panels.iter().enumerate() {
        panel(&mut out, p, PANEL_W * i as f64, HEADER);
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_round_out_and_map_monotonically() {
        let a = LogAxis::around([0.7, 30.0].into_iter());
        assert_eq!((a.lo, a.hi), (0.5, 50.0));
        assert!(a.at(1.0) < a.at(2.0) && a.at(2.0) < a.at(20.0));
        assert!((a.at(0.5) - 0.0).abs() < 1e-9 && (a.at(50.0) - 1.0).abs() < 1e-9);
        assert_eq!(a.ticks(), vec![0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0]);
        assert_eq!(short(10_000.0), "10k");
        assert_eq!(short(20.0), "20");
        assert_eq!(short(0.25), "0.25");
    }

    #[test]
    fn one_line_per_series_and_the_text_escaped() {
        let panel = |title: &str| Panel {
            title: title.into(),
            x_label: "pool".into(),
            y_label: "ms".into(),
            series: vec![
                Series {
                    label: "a".into(),
                    color: COLORS[0],
                    dashed: false,
                    points: vec![(20.0, 0.8), (1000.0, 3.0)],
                },
                Series {
                    label: "b".into(),
                    color: COLORS[1],
                    dashed: true,
                    points: vec![(20.0, 1.0), (1000.0, 4.0), (10000.0, 30.0)],
                },
            ],
            targets: vec![(25.0, "25 ms".into())],
        };
        let svg = render("t <&>", "s", &[panel("one"), panel("two")]);
        assert!(svg.starts_with("<svg ") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 10);
        assert!(svg.contains("t &lt;&amp;&gt;"));
        assert!(!svg.contains("NaN") && !svg.contains("inf"));
    }
}
