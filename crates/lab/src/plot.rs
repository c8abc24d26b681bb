//! SVG line charts in the papers' style: lines over time or over a swept value, optional min/max
//! bars, and horizontal reference lines for target rates.

use plotters::prelude::*;

/// One line of a chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    /// Legend label.
    pub label: String,
    /// `(x, y)` points, in x order.
    pub points: Vec<(f64, f64)>,
    /// `(x, min, max)` bars drawn over the points (Fig. 5's min/max of the runs).
    pub bars: Vec<(f64, f64, f64)>,
    /// `(x, low, high)` of a band shaded under the line, in x order (the spread over runs).
    pub band: Vec<(f64, f64, f64)>,
}

/// A horizontal reference line, such as a target rate.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// Legend label.
    pub label: String,
    /// Its height.
    pub y: f64,
    /// The line it belongs to, whose colour it takes; `None` for a colour of its own.
    pub line: Option<usize>,
}

/// A span of x shaded grey behind the data, such as the warm-up left out of the means.
#[derive(Debug, Clone, PartialEq)]
pub struct Shade {
    /// Legend label.
    pub label: String,
    /// Where it starts.
    pub from: f64,
    /// Where it ends.
    pub to: f64,
}

/// A whole chart.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// Label of the x axis.
    pub x_label: String,
    /// Label of the y axis.
    pub y_label: String,
    /// The lines.
    pub lines: Vec<Line>,
    /// Dashed horizontal lines, drawn above the data.
    pub references: Vec<Reference>,
    /// A shaded span of x.
    pub shade: Option<Shade>,
    /// The y axis starts here instead of zero (a CDF or a zoom); `None`: at zero, as the papers.
    pub y_range: Option<(f64, f64)>,
    /// Points only: each line's points drawn as its marker, unjoined (a scatter plot, such as
    /// throughput against delay with one mark per flow and run).
    pub scatter: bool,
    /// Names of the x axis's categories (a categorical sweep): category i sits at x = i and is
    /// named under it instead of a number; empty for a numeric x axis.
    pub categories: Vec<String>,
}

/// Why a chart could not be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The drawing backend failed.
    #[error("cannot draw chart '{title}': {message}")]
    Draw {
        /// The chart's title.
        title: String,
        /// The backend's message.
        message: String,
    },
    /// The SVG could not be turned into a PDF.
    #[error("cannot convert chart '{title}' to PDF: {message}")]
    Pdf {
        /// The chart's title.
        title: String,
        /// The converter's message.
        message: String,
    },
}

/// The system's fonts, loaded once per process for the PDF figures.
fn fonts() -> std::sync::Arc<usvg::fontdb::Database> {
    static FONTS: std::sync::OnceLock<std::sync::Arc<usvg::fontdb::Database>> =
        std::sync::OnceLock::new();
    FONTS
        .get_or_init(|| {
            let mut db = usvg::fontdb::Database::new();
            db.load_system_fonts();
            // The charts ask for the generic `sans-serif`, which fontdb maps to Arial: map it to a
            // sans-serif family this system has.
            let families: Vec<String> = db
                .faces()
                .flat_map(|f| f.families.iter().map(|(name, _)| name.clone()))
                .collect();
            let preferred = [
                "DejaVu Sans",
                "Liberation Sans",
                "Noto Sans",
                "FreeSans",
                "Arial",
            ];
            if let Some(family) = preferred
                .iter()
                .find(|p| families.iter().any(|f| f == *p))
                .map(|p| p.to_string())
                .or_else(|| families.first().cloned())
            {
                keep_in_memory(&mut db, &family);
                db.set_sans_serif_family(family);
            }
            std::sync::Arc::new(db)
        })
        .clone()
}

/// Read the files of `family`'s faces into memory, in place of their paths.
///
/// The database names most faces by their file, and reads (maps) the file again each time text
/// is laid out in that face: many times per chart. Held in memory, the charts' own family is read
/// once per process. The faces and what they contain are the same, so the PDFs are too.
fn keep_in_memory(db: &mut usvg::fontdb::Database, family: &str) {
    use usvg::fontdb::Source;
    let mut paths: Vec<std::path::PathBuf> = db
        .faces()
        .filter(|f| f.families.iter().any(|(name, _)| name == family))
        .filter_map(|f| match &f.source {
            Source::File(path) => Some(path.clone()),
            _ => None,
        })
        .collect();
    paths.sort();
    paths.dedup();
    for path in paths {
        // A file that cannot be read stays named by its path, as before.
        let Ok(data) = std::fs::read(&path) else {
            continue;
        };
        let faces: Vec<_> = db
            .faces()
            .filter(|f| matches!(&f.source, Source::File(p) if *p == path))
            .map(|f| f.id)
            .collect();
        for id in faces {
            db.remove_face(id);
        }
        db.load_font_data(data);
    }
}

/// A vector PDF of a chart rendered by [`render`] (text in the system's sans-serif font; where
/// the system has no fonts, the text is left out and the lines stay).
pub fn pdf(title: &str, svg: &str) -> Result<Vec<u8>, PlotError> {
    let error = |message: String| PlotError::Pdf {
        title: title.to_string(),
        message,
    };
    let options = usvg::Options {
        fontdb: fonts(),
        ..usvg::Options::default()
    };
    let tree = usvg::Tree::from_str(svg, &options).map_err(|e| error(e.to_string()))?;
    let mut bytes = svg2pdf::to_pdf(
        &tree,
        svg2pdf::ConversionOptions::default(),
        svg2pdf::PageOptions::default(),
    )
    .map_err(|e| error(e.to_string()))?;
    sort_resource_entries(&mut bytes);
    Ok(bytes)
}

/// Put the entries of the PDF's resource dictionaries (`/XObject <<`, `/ExtGState <<`, ...,
/// one `/name N 0 R` per line) in name order.
///
/// The converter writes them from a hash map, in an order that changes from one process to the
/// next, so two runs of the same scenario gave PDFs that differed in those lines alone. Sorting
/// lines within a dictionary keeps every byte count, so the cross-reference table's offsets stay
/// right. A block is sorted only if every line in it is such an entry.
fn sort_resource_entries(pdf: &mut [u8]) {
    const OPENERS: [&[u8]; 6] = [
        b"/XObject <<",
        b"/ExtGState <<",
        b"/Pattern <<",
        b"/Shading <<",
        b"/Font <<",
        b"/ColorSpace <<",
    ];
    // Line spans (start, end without the newline).
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &b) in pdf.iter().enumerate() {
        if b == b'\n' {
            lines.push((start, i));
            start = i + 1;
        }
    }
    fn text(pdf: &[u8], (start, end): (usize, usize)) -> &[u8] {
        pdf[start..end].trim_ascii()
    }
    let is_entry = |line: &[u8]| {
        let fields: Vec<&[u8]> = line.split(|&b| b == b' ').collect();
        matches!(fields.as_slice(), [name, n, g, r]
            if name.len() > 1 && name[0] == b'/' && name[1..].iter().all(u8::is_ascii_alphanumeric)
                && !n.is_empty() && n.iter().all(u8::is_ascii_digit)
                && *g == b"0" && *r == b"R")
    };
    let mut i = 0;
    while i < lines.len() {
        if !OPENERS.contains(&text(pdf, lines[i])) {
            i += 1;
            continue;
        }
        let first = i + 1;
        let mut end = first;
        while end < lines.len() && is_entry(text(pdf, lines[end])) {
            end += 1;
        }
        if end < lines.len() && text(pdf, lines[end]) == b">>" && end > first + 1 {
            let region = (lines[first].0, lines[end - 1].1);
            let mut entries: Vec<Vec<u8>> = lines[first..end]
                .iter()
                .map(|&(a, b)| pdf[a..b].to_vec())
                .collect();
            // By name: its letters, then its number as a number (xo2 before xo10).
            let key = |line: &Vec<u8>| {
                let name = line
                    .trim_ascii()
                    .split(|&b| b == b' ')
                    .next()
                    .unwrap_or(&[])
                    .to_vec();
                let digits = name.iter().rev().take_while(|b| b.is_ascii_digit()).count();
                let (letters, number) = name.split_at(name.len() - digits);
                let number: u64 = std::str::from_utf8(number)
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                (letters.to_vec(), number, name.clone())
            };
            entries.sort_by_cached_key(key);
            let sorted = entries.join(&b'\n');
            pdf[region.0..region.1].copy_from_slice(&sorted);
        }
        i = end;
    }
}

/// Colours of the lines, in order, and the reference lines' colours after them: twelve that
/// stay apart (the first eight as before, then olive, grey, black and light blue).
const COLOURS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(127, 127, 127),
    RGBColor(0, 0, 0),
    RGBColor(174, 199, 232),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// How line `i` is stroked: after every twelve colours the dash changes (solid, dashed,
/// dotted), so 36 lines stay apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dash {
    Solid,
    Dashed,
    Dotted,
}

fn dash(i: usize) -> Dash {
    match (i / COLOURS.len()) % 3 {
        0 => Dash::Solid,
        1 => Dash::Dashed,
        _ => Dash::Dotted,
    }
}

/// A chart's plotting area with its two linear axes.
type Plot<'a, DB> = ChartContext<
    'a,
    DB,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Pixels between two markers along a line.
const MARKER_SPACING: i32 = 90;

/// Whether `line` carries markers: beside other lines, unless its points are already marked
/// (a line with error bars); always in a scatter plot.
fn has_markers(chart: &Chart, line: &Line) -> bool {
    chart.scatter || (chart.lines.len() > 1 && line.points.len() > 1 && line.bars.is_empty())
}

/// Draw line `i`'s markers through `points`: a shape of its own every [`MARKER_SPACING`] pixels,
/// the first shifted by the line's index, so lines drawn exactly over each other still show
/// each one's markers.
fn draw_markers<DB: DrawingBackend>(
    ctx: &mut Plot<'_, DB>,
    i: usize,
    points: &[(f64, f64)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let c = colour(i);
    let shift = (i as i32 * 23) % MARKER_SPACING;
    let points = points.iter().copied();
    let filled = c.filled();
    match i % 4 {
        0 => ctx.draw_series(DottedLineSeries::new(
            points,
            shift,
            MARKER_SPACING,
            move |p| Circle::new(p, 4, filled),
        ))?,
        1 => ctx.draw_series(DottedLineSeries::new(
            points,
            shift,
            MARKER_SPACING,
            move |p| TriangleMarker::new(p, 5, filled),
        ))?,
        2 => ctx.draw_series(DottedLineSeries::new(
            points,
            shift,
            MARKER_SPACING,
            move |p| Rectangle::new([(p.0 - 4, p.1 - 4), (p.0 + 4, p.1 + 4)], filled),
        ))?,
        _ => ctx.draw_series(DottedLineSeries::new(
            points,
            shift,
            MARKER_SPACING,
            move |p| Cross::new(p, 5, c.stroke_width(2)),
        ))?,
    };
    Ok(())
}

/// Draw line `i`'s marker at every one of `points`, unjoined (a scatter plot's marks).
fn draw_marks<DB: DrawingBackend>(
    ctx: &mut Plot<'_, DB>,
    i: usize,
    points: &[(f64, f64)],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let c = colour(i);
    let filled = c.filled();
    let points = points.iter().copied();
    match i % 4 {
        0 => ctx.draw_series(points.map(|p| Circle::new(p, 4, filled)))?,
        1 => ctx.draw_series(points.map(|p| TriangleMarker::new(p, 5, filled)))?,
        2 => ctx.draw_series(
            points.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], filled)),
        )?,
        _ => ctx.draw_series(points.map(|p| Cross::new(p, 5, c.stroke_width(2))))?,
    };
    Ok(())
}

/// Line `i`'s error bars `(x, low, high)`, capped `half` wide either side, in its colour.
fn draw_bars<DB: DrawingBackend>(
    ctx: &mut Plot<'_, DB>,
    i: usize,
    bars: &[(f64, f64, f64)],
    half: f64,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let c = colour(i);
    for &(x, lo, hi) in bars {
        let bar = vec![(x, lo), (x, hi)];
        let caps = [
            vec![(x - half, lo), (x + half, lo)],
            vec![(x - half, hi), (x + half, hi)],
        ];
        ctx.draw_series(std::iter::once(PathElement::new(bar, c.stroke_width(1))))?;
        ctx.draw_series(
            caps.into_iter()
                .map(|cap| PathElement::new(cap, c.stroke_width(1))),
        )?;
    }
    Ok(())
}

/// Height of every chart and width of one plot panel, pixels: a figure is drawn at the size a
/// two-column paper prints it at about 45%, so fonts stay readable at column width.
const PANEL: (u32, u32) = (640, 420);
/// Font sizes: title, axis descriptions, tick labels and legend.
const TITLE_FONT: u32 = 20;
const AXIS_FONT: u32 = 16;
const TICK_FONT: u32 = 14;
const LEGEND_FONT: u32 = 14;

/// Draw `chart` and return the SVG text. The legend stands beside the plot, so it never hides data.
pub fn render(chart: &Chart) -> Result<String, PlotError> {
    render_panels(&chart.title, std::slice::from_ref(chart))
}

/// Draw `charts` side by side under one `title`, with one legend (the first chart's entries)
/// beside them: the papers' multi-panel figures (QSTP Fig. 4 a/b/c).
pub fn render_panels(title: &str, charts: &[Chart]) -> Result<String, PlotError> {
    let mut svg = String::new();
    draw_panels(title, charts, &mut svg).map_err(|message| PlotError::Draw {
        title: title.to_string(),
        message,
    })?;
    Ok(svg)
}

fn bounds(chart: &Chart) -> ((f64, f64), (f64, f64)) {
    let xs = chart
        .lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.0));
    let (mut x0, mut x1) = xs.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if !chart.categories.is_empty() {
        // Each category a unit wide, centred on its index.
        (x0, x1) = (-0.5, chart.categories.len() as f64 - 0.5);
    } else if chart.scatter {
        // Marks at the ends stay whole.
        let pad = (x1 - x0) * 0.05;
        (x0, x1) = (x0 - pad, x1 + pad);
    }
    if let Some(range) = chart.y_range {
        return ((x0, x1), range);
    }
    let ys = chart
        .lines
        .iter()
        .flat_map(|l| {
            l.points
                .iter()
                .map(|p| p.1)
                .chain(l.bars.iter().map(|b| b.2))
                .chain(l.band.iter().map(|b| b.2))
        })
        .chain(chart.references.iter().map(|r| r.y));
    let y1 = ys.filter(|y| y.is_finite()).fold(0.0f64, f64::max);
    // Start at zero as the papers do, with a little headroom.
    ((x0, x1), (0.0, if y1 > 0.0 { y1 * 1.08 } else { 1.0 }))
}

/// One legend entry: its label, colour and whether it is dashed (a reference) or a swatch.
struct Entry {
    label: String,
    colour: RGBAColor,
    kind: EntryKind,
}

enum EntryKind {
    /// Data line `index`: its dash (unless `joined` is false: a scatter plot's marks) and, where
    /// the plot draws them, its marker.
    Line {
        index: usize,
        marker: bool,
        joined: bool,
    },
    Dashed,
    Swatch,
}

fn legend_entries(chart: &Chart) -> Vec<Entry> {
    let mut entries: Vec<Entry> = chart
        .lines
        .iter()
        .enumerate()
        .map(|(i, l)| Entry {
            label: l.label.clone(),
            colour: colour(i).to_rgba(),
            kind: EntryKind::Line {
                index: i,
                marker: has_markers(chart, l),
                joined: !chart.scatter,
            },
        })
        .collect();
    entries.extend(chart.references.iter().enumerate().map(|(j, r)| Entry {
        label: r.label.clone(),
        colour: colour(r.line.unwrap_or(chart.lines.len() + j)).to_rgba(),
        kind: EntryKind::Dashed,
    }));
    if let Some(shade) = &chart.shade {
        entries.push(Entry {
            label: shade.label.clone(),
            colour: BLACK.mix(0.12),
            kind: EntryKind::Swatch,
        });
    }
    entries
}

fn draw_panels(title: &str, charts: &[Chart], svg: &mut String) -> Result<(), String> {
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let entries = charts.first().map(legend_entries).unwrap_or_default();
    let longest = entries
        .iter()
        .map(|x| x.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let legend_width = if entries.is_empty() {
        0
    } else {
        (longest * LEGEND_FONT * 6 / 10 + 48).clamp(120, 360)
    };
    let panels = charts.len().max(1) as u32;
    let size = (PANEL.0 * panels + legend_width, PANEL.1);
    let root = SVGBackend::with_string(svg, size).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let root = root
        .titled(title, ("sans-serif", TITLE_FONT))
        .map_err(|x| e(&x))?;
    let (plots, legend) = root.split_horizontally(PANEL.0 * panels);
    let areas = plots.split_evenly((1, panels as usize));
    for (chart, area) in charts.iter().zip(&areas) {
        draw_chart(chart, area, charts.len() > 1).map_err(|x| e(&x))?;
    }
    // The legend, beside the plots.
    for (i, entry) in entries.iter().enumerate() {
        let y = 40 + i as i32 * (LEGEND_FONT as i32 + 8);
        let style = ShapeStyle::from(entry.colour).stroke_width(3);
        match entry.kind {
            EntryKind::Line {
                index: i,
                marker,
                joined,
            } => {
                let segments: Vec<Vec<(i32, i32)>> = match dash(i) {
                    _ if !joined => Vec::new(),
                    Dash::Solid => vec![vec![(8, y), (34, y)]],
                    Dash::Dashed => vec![vec![(8, y), (18, y)], vec![(24, y), (34, y)]],
                    Dash::Dotted => (0..4)
                        .map(|k| vec![(8 + 7 * k, y), (11 + 7 * k, y)])
                        .collect(),
                };
                let mut drawn = segments
                    .into_iter()
                    .try_for_each(|s| legend.draw(&PathElement::new(s, style)));
                if drawn.is_ok() && marker {
                    let c = colour(i);
                    let at = (21, y);
                    drawn = match i % 4 {
                        0 => legend.draw(&Circle::new(at, 4, c.filled())),
                        1 => legend.draw(&TriangleMarker::new(at, 5, c.filled())),
                        2 => legend.draw(&Rectangle::new([(17, y - 4), (25, y + 4)], c.filled())),
                        _ => legend.draw(&Cross::new(at, 5, c.stroke_width(2))),
                    };
                }
                drawn
            }
            EntryKind::Dashed => legend
                .draw(&PathElement::new(vec![(8, y), (16, y)], style))
                .and_then(|_| legend.draw(&PathElement::new(vec![(22, y), (30, y)], style))),
            EntryKind::Swatch => legend.draw(&Rectangle::new(
                [(8, y - 6), (34, y + 6)],
                ShapeStyle::from(entry.colour).filled(),
            )),
        }
        .map_err(|x| e(&x))?;
        legend
            .draw(&Text::new(
                entry.label.clone(),
                (42, y - LEGEND_FONT as i32 / 2),
                ("sans-serif", LEGEND_FONT),
            ))
            .map_err(|x| e(&x))?;
    }
    root.present().map_err(|x| e(&x))?;
    Ok(())
}

fn draw_chart<DB: DrawingBackend>(
    chart: &Chart,
    area: &DrawingArea<DB, plotters::coord::Shift>,
    subtitle: bool,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    let ((x0, x1), (y0, y1)) = bounds(chart);
    let mut builder = ChartBuilder::on(area);
    if subtitle {
        builder.caption(&chart.title, ("sans-serif", AXIS_FONT));
    }
    let mut ctx = builder
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let x_decimals = decimals(x1 - x0);
    let y_decimals = decimals(y1 - y0);
    let categories = &chart.categories;
    let x_fmt = move |x: &f64| {
        if categories.is_empty() {
            return format!("{x:.x_decimals$}");
        }
        // A category's name at its index, nothing between.
        let i = x.round();
        match ((x - i).abs() < 1e-6 && i >= 0.0).then(|| categories.get(i as usize)) {
            Some(Some(name)) => name.clone(),
            _ => String::new(),
        }
    };
    let y_fmt = move |y: &f64| format!("{y:.y_decimals$}");
    let mut mesh = ctx.configure_mesh();
    if !categories.is_empty() {
        // Ticks at every half unit at most, so that each index has one.
        mesh.x_labels(2 * categories.len() + 1);
    }
    mesh.x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style(("sans-serif", AXIS_FONT))
        .label_style(("sans-serif", TICK_FONT))
        .light_line_style(WHITE.mix(0.0))
        .draw()?;
    if let Some(shade) = &chart.shade {
        // Behind everything: the span left out of the means.
        ctx.draw_series(std::iter::once(Rectangle::new(
            [(shade.from.max(x0), y0), (shade.to.min(x1), y1)],
            BLACK.mix(0.08).filled(),
        )))?;
    }
    for (i, line) in chart.lines.iter().enumerate() {
        if line.band.len() > 1 {
            let c = colour(i);
            let outline: Vec<(f64, f64)> = line
                .band
                .iter()
                .map(|&(x, lo, _)| (x, lo))
                .chain(line.band.iter().rev().map(|&(x, _, hi)| (x, hi)))
                .collect();
            ctx.draw_series(std::iter::once(Polygon::new(outline, c.mix(0.18).filled())))?;
        }
    }
    for (i, line) in chart.lines.iter().enumerate() {
        let c = colour(i);
        if chart.scatter {
            draw_marks(&mut ctx, i, &line.points)?;
            draw_bars(&mut ctx, i, &line.bars, (x1 - x0) / 200.0)?;
            continue;
        }
        let points = line.points.iter().copied();
        match dash(i) {
            Dash::Solid => ctx.draw_series(LineSeries::new(points, c.stroke_width(2)))?,
            Dash::Dashed => {
                ctx.draw_series(DashedLineSeries::new(points, 10, 6, c.stroke_width(2)))?
            }
            Dash::Dotted => {
                ctx.draw_series(DashedLineSeries::new(points, 3, 4, c.stroke_width(2)))?
            }
        };
        if has_markers(chart, line) {
            draw_markers(&mut ctx, i, &line.points)?;
        }
        if !line.bars.is_empty() {
            ctx.draw_series(line.points.iter().map(|&p| Circle::new(p, 3, c.filled())))?;
            draw_bars(&mut ctx, i, &line.bars, (x1 - x0) / 200.0)?;
        }
    }
    for (j, r) in chart.references.iter().enumerate() {
        // Above the data, in the colour of the line it belongs to, dashed and as thick as the
        // data, so a target reads at a glance against its flow.
        let c = colour(r.line.unwrap_or(chart.lines.len() + j)).mix(0.9);
        ctx.draw_series(
            dashed(x0, x1, r.y)
                .into_iter()
                .map(|d| PathElement::new(d, c.stroke_width(2))),
        )?;
    }
    Ok(())
}

/// Decimals for tick labels over an axis spanning `span`.
fn decimals(span: f64) -> usize {
    if span >= 10.0 {
        0
    } else if span >= 1.0 {
        1
    } else {
        3
    }
}

/// Segments of a dashed horizontal line at `y` from `x0` to `x1`.
fn dashed(x0: f64, x1: f64, y: f64) -> Vec<Vec<(f64, f64)>> {
    let step = (x1 - x0) / 60.0;
    (0..60)
        .step_by(2)
        .map(|i| vec![(x0 + step * i as f64, y), (x0 + step * (i + 1) as f64, y)])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two PDFs of one chart are the same bytes (the converter lists a page's resources from a
    /// hash map, in another order in every process and for every map).
    #[test]
    fn a_chart_gives_the_same_pdf_every_time() {
        let chart = Chart {
            title: "same".into(),
            lines: (0..12)
                .map(|i| Line {
                    label: format!("flow {i}"),
                    points: (0..20).map(|x| (x as f64, (x * i) as f64)).collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let svg = render(&chart).unwrap();
        let first = pdf("same", &svg).unwrap();
        for _ in 0..3 {
            assert!(pdf("same", &svg).unwrap() == first, "the PDF changed");
        }
        let text = String::from_utf8_lossy(&first);
        assert!(
            text.contains("/XObject <<"),
            "the chart's PDF has resources to order"
        );
    }

    #[test]
    fn resource_entries_are_sorted_in_place_and_nothing_else_moves() {
        let pdf = b"x\n  /XObject <<\n    /xo10 28 0 R\n    /xo2 12 0 R\n    /xo1 10 0 R\n  >>\n\
            /Font <<\n    /fo0 1 0 R\n  >>\n/ExtGState <<\n  /gs1 9 0 R\n  stream data\n  /gs0 7 0 R\n>>\n";
        let mut sorted = pdf.to_vec();
        sort_resource_entries(&mut sorted);
        assert_eq!(sorted.len(), pdf.len());
        let text = String::from_utf8(sorted).unwrap();
        assert!(
            text.starts_with(
                "x\n  /XObject <<\n    /xo1 10 0 R\n    /xo2 12 0 R\n    /xo10 28 0 R\n  >>\n"
            ),
            "{text}"
        );
        // A block with a line that is not an entry is left as it was.
        assert!(
            text.contains("/gs1 9 0 R\n  stream data\n  /gs0 7 0 R"),
            "{text}"
        );
    }

    /// The charts' family is read once, not mapped again for every text run (which cost a
    /// 60-second run's figures a quarter of their time). A system without fonts has nothing to
    /// check.
    #[test]
    fn the_charts_font_family_is_held_in_memory() {
        let db = fonts();
        let family = db.family_name(&usvg::fontdb::Family::SansSerif).to_string();
        let faces: Vec<_> = db
            .faces()
            .filter(|f| f.families.iter().any(|(name, _)| *name == family))
            .collect();
        if db.is_empty() {
            return;
        }
        assert!(
            !faces.is_empty(),
            "the sans-serif family {family} has faces"
        );
        for face in faces {
            assert!(
                matches!(face.source, usvg::fontdb::Source::Binary(_)),
                "{family}: {:?} is read from its file on every use",
                face.post_script_name
            );
        }
    }

    #[test]
    fn a_scatter_plot_marks_every_point_and_joins_none() {
        let line = |label: &str, points: Vec<(f64, f64)>| Line {
            label: label.into(),
            points,
            ..Default::default()
        };
        let mut chart = Chart {
            title: "delay".into(),
            lines: vec![
                line("A", vec![(10.0, 1.0), (12.0, 3.0), (11.0, 2.0)]),
                line("B", vec![(30.0, 5.0), (31.0, 4.0)]),
            ],
            scatter: true,
            ..Default::default()
        };
        let svg = render(&chart).unwrap();
        // A's three circles (and its legend's one), B's two triangles (and its legend's one).
        assert_eq!(svg.matches("<circle").count(), 4);
        let joined = |svg: &str| svg.matches("<polyline").count();
        chart.scatter = false;
        let lines = render(&chart).unwrap();
        assert!(
            joined(&lines) >= joined(&svg) + 4,
            "a joined chart adds at least the two lines and their legend strokes"
        );
    }

    #[test]
    fn a_chart_shows_its_title_axes_legend_and_lines() {
        let chart = Chart {
            title: "Throughput of AB".into(),
            x_label: "time (s)".into(),
            y_label: "kbit/s".into(),
            lines: vec![
                Line {
                    label: "AB qstp".into(),
                    points: vec![(0.0, 0.0), (1.0, 480.0), (2.0, 510.0)],
                    bars: vec![],
                    ..Default::default()
                },
                Line {
                    label: "CD tcp".into(),
                    points: vec![(0.0, 0.0), (2.0, 400.0)],
                    bars: vec![(2.0, 300.0, 450.0)],
                    ..Default::default()
                },
            ],
            references: vec![Reference {
                label: "target 500".into(),
                y: 500.0,
                line: Some(0),
            }],
            ..Default::default()
        };
        let svg = render(&chart).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..50]);
        for text in [
            "Throughput of AB",
            "time (s)",
            "kbit/s",
            "AB qstp",
            "CD tcp",
            "target 500",
        ] {
            assert!(svg.contains(text), "missing {text}");
        }
        assert!(
            svg.matches("<polyline").count() >= 3,
            "lines, bars and dashes are drawn"
        );
    }

    #[test]
    fn an_empty_chart_still_draws() {
        let chart = Chart {
            title: "nothing".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            lines: vec![],
            references: vec![],
            ..Default::default()
        };
        assert!(render(&chart).unwrap().contains("nothing"));
    }

    #[test]
    fn thirty_six_lines_stay_apart_and_lines_drawn_over_each_other_show_their_markers() {
        let styles: std::collections::BTreeSet<(u8, u8, u8, u8)> = (0..36)
            .map(|i| {
                let c = colour(i);
                (c.0, c.1, c.2, dash(i) as u8)
            })
            .collect();
        assert_eq!(styles.len(), 36, "a colour and dash repeat within 36 lines");
        // Two identical lines: each one's markers are drawn, at different places.
        let same = vec![(0.0, 10.0), (100.0, 10.0)];
        let chart = Chart {
            title: "two".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            lines: (0..2)
                .map(|i| Line {
                    label: format!("line {i}"),
                    points: same.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let svg = render(&chart).unwrap();
        assert!(svg.contains("<circle"), "the first line's markers");
        assert!(svg.contains("<polygon"), "the second line's (triangles)");
    }
}
