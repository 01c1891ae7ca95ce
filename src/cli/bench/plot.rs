//! `pnfs bench --plot FILE`: the report as a chart, one row per phase: on the left its
//! throughput (the median as a bar, a line from the minimum to the maximum run), on the
//! right its latency percentiles p50, p90 and p99, each server in its own colour.
//!
//! SVG or PNG by the file's extension, both drawn by `plotters`. Text is laid out (SVG)
//! and drawn (PNG) with DejaVu Sans compiled into the binary, so no system font or font
//! library is needed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::error::BenchError;
use super::report::Report;
use super::table::{fmt_ms, fmt_value};

/// The chart's file formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    /// Scalable vector graphics (text stays text).
    Svg,
    /// A PNG bitmap.
    Png,
}

impl Format {
    /// The format `path`'s extension names (case-insensitive), or a usage error.
    pub(crate) fn of(path: &Path) -> Result<Format, BenchError> {
        match path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref()
        {
            Some("svg") => Ok(Format::Svg),
            Some("png") => Ok(Format::Png),
            _ => Err(BenchError::Usage(format!(
                "--plot {}: the file name must end in .svg or .png",
                path.display()
            ))),
        }
    }
}

/// Pixels per phase row, and of the title.
const ROW: u32 = 230;
const TITLE: u32 = 70;
const WIDTH: u32 = 1100;

/// The servers' colours: A blue, B orange (distinct for colour-blind readers too).
const COLOURS: [RGBColor; 2] = [RGBColor(31, 119, 180), RGBColor(255, 127, 14)];

/// The font's family name in plotters' table.
const FONT: &str = "sans-serif";

fn register_font() -> Result<(), String> {
    static ONCE: Once = Once::new();
    let mut result = Ok(());
    ONCE.call_once(|| {
        result = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded font does not load".to_string());
    });
    result
}

/// Draws `r` into `path` (its extension says the format).
pub(crate) fn write(r: &Report, path: &Path) -> Result<(), BenchError> {
    let fail = |e: String| BenchError::Plot(PathBuf::from(path), e);
    let format = Format::of(path)?;
    register_font().map_err(fail)?;
    let size = (WIDTH, TITLE + ROW * r.phases.len().max(1) as u32);
    match format {
        Format::Svg => {
            let root = SVGBackend::new(path, size).into_drawing_area();
            draw(&root, r).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
        Format::Png => {
            let root = BitMapBackend::new(path, size).into_drawing_area();
            draw(&root, r).map_err(fail)?;
            root.present().map_err(|e| fail(e.to_string()))
        }
    }
}

/// One bar of a panel: where (a slot number), how high, its colour, the label under it and
/// the one over it, and optionally a line from a low to a high value (min-max of the runs).
struct Bar {
    slot: u32,
    value: f64,
    colour: RGBColor,
    under: String,
    over: String,
    whisker: Option<(f64, f64)>,
}

/// Draws one panel of bars in `area`: `slots` places, left to right (some empty, as gaps).
fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    area: &DrawingArea<DB, Shift>,
    caption: &str,
    slots: u32,
    bars: &[Bar],
) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let top = bars
        .iter()
        .map(|b| b.whisker.map_or(b.value, |w| w.1.max(b.value)))
        .fold(0.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, (FONT, 16))
        .margin(8)
        .x_label_area_size(22)
        .y_label_area_size(64)
        .build_cartesian_2d(0.0..f64::from(slots.max(1)), 0.0..nice_top(top))
        .map_err(e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_label_formatter(&|v| fmt_value(*v))
        .label_style((FONT, 12))
        .draw()
        .map_err(e)?;
    // Bars a third of a slot wide when there are few slots, most of it when many.
    let pad = if slots <= 3 { 0.3 } else { 0.1 };
    for b in bars {
        let x = f64::from(b.slot);
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x + pad, 0.0), (x + 1.0 - pad, b.value)],
                b.colour.mix(0.85).filled(),
            )))
            .map_err(e)?;
        let mut label_at = b.value;
        if let Some((lo, hi)) = b.whisker {
            chart
                .draw_series(std::iter::once(PathElement::new(
                    vec![(x + 0.5, lo), (x + 0.5, hi)],
                    BLACK.stroke_width(2),
                )))
                .map_err(e)?;
            label_at = label_at.max(hi);
        }
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((x + 0.5, label_at))
                    + Text::new(
                        b.over.clone(),
                        (0, -4),
                        (FONT, 12)
                            .into_font()
                            .into_text_style(area)
                            .pos(Pos::new(HPos::Center, VPos::Bottom)),
                    ),
            ))
            .map_err(e)?;
        // The name under the axis, in the root area's (absolute) pixels.
        let (px, py) = chart.backend_coord(&(x + 0.5, 0.0));
        root.draw_text(
            &b.under,
            &(FONT, 12)
                .into_font()
                .into_text_style(root)
                .pos(Pos::new(HPos::Center, VPos::Top)),
            (px, py + 5),
        )
        .map_err(e)?;
    }
    Ok(())
}

/// The chart on any backend.
fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &Report) -> Result<(), String> {
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let (head, body) = root.split_vertically(TITLE);
    let s = &r.settings;
    head.draw_text(
        &format!(
            "pnfs bench: median of {} run{} (min-max as lines); latency percentiles over every request",
            s.runs,
            if s.runs == 1 { "" } else { "s" }
        ),
        &(FONT, 18).into_text_style(&head),
        (10, 8),
    )
    .map_err(e)?;
    for (i, srv) in r.servers.iter().enumerate() {
        let style = (FONT, 15).into_font().color(&colour(i));
        head.draw_text(
            &format!(
                "{} = {}{}",
                srv.label,
                srv.url,
                if srv.pnfs { " (pNFS)" } else { "" }
            ),
            &style,
            (10 + 540 * i as i32, 38),
        )
        .map_err(e)?;
    }
    let cells = body.split_evenly((r.phases.len().max(1), 2));
    let servers = r.servers.len() as u32;
    let compare = servers > 1;
    for (ph, pair) in r.phases.iter().zip(cells.chunks(2)) {
        let [left, right] = pair else { continue };
        // Throughput: a bar per server.
        let bars: Vec<Bar> = ph
            .servers
            .iter()
            .enumerate()
            .filter_map(|(i, runs)| {
                let sp = runs.spread(ph.phase)?;
                Some(Bar {
                    slot: i as u32,
                    value: sp.median,
                    colour: colour(i),
                    under: r.servers[i].label.clone(),
                    over: fmt_value(sp.median),
                    whisker: Some((sp.min, sp.max)),
                })
            })
            .collect();
        panel(
            root,
            left,
            &format!("{}  ({})", ph.phase.name(), ph.phase.unit()),
            servers,
            &bars,
        )?;
        // Latency: groups p50, p90, p99 with a bar per server, a gap between groups.
        let group = servers + 1;
        let mut bars = Vec::new();
        for (i, runs) in ph.servers.iter().enumerate() {
            let Some(l) = runs.latency() else { continue };
            for (p, (name, d)) in [("p50", l.p50), ("p90", l.p90), ("p99", l.p99)]
                .into_iter()
                .enumerate()
            {
                bars.push(Bar {
                    slot: p as u32 * group + i as u32,
                    value: d.as_secs_f64() * 1e3,
                    colour: colour(i),
                    under: if compare {
                        format!("{name} {}", r.servers[i].label)
                    } else {
                        name.to_string()
                    },
                    over: fmt_ms(d),
                    whisker: None,
                });
            }
        }
        panel(
            root,
            right,
            &format!("{} latency (ms)", ph.phase.name()),
            3 * group - 1,
            &bars,
        )?;
    }
    Ok(())
}

/// Server `i`'s colour.
fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// The top of a value axis: a little above the highest value (room for its label), and
/// not empty when everything is 0.
fn nice_top(max: f64) -> f64 {
    if max > 0.0 && max.is_finite() {
        max * 1.2
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::bench::report::tests::sample;

    #[test]
    fn the_extension_picks_the_format() {
        assert_eq!(Format::of(Path::new("a/x.svg")).unwrap(), Format::Svg);
        assert_eq!(Format::of(Path::new("X.PNG")).unwrap(), Format::Png);
        for bad in ["x.pdf", "x", "svg"] {
            let e = Format::of(Path::new(bad)).unwrap_err();
            assert_eq!(e.exit_code(), crate::cli::EXIT_USAGE, "{bad}");
        }
    }

    #[test]
    fn svg_and_png_charts_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let svg = dir.path().join("r.svg");
        write(&sample(), &svg).unwrap();
        let text = std::fs::read_to_string(&svg).unwrap();
        assert!(text.contains("<svg"), "{text}");
        for word in ["seq-write", "meta-create", "p99", "files/s"] {
            assert!(text.contains(word), "{word} missing");
        }
        let png = dir.path().join("r.png");
        write(&sample(), &png).unwrap();
        let bytes = std::fs::read(&png).unwrap();
        assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
        assert!(bytes.len() > 10_000, "{} bytes", bytes.len());
        // A directory that does not exist: an error naming the file, no panic.
        let e = write(&sample(), &dir.path().join("no/such/r.png")).unwrap_err();
        assert!(e.to_string().contains("r.png"), "{e}");
    }
}
