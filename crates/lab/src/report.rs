//! `report.html`: one self-contained page (inline SVG, inline CSS): the settings, a table of
//! contents, the figures (the comparison across the sweep first, each fitted to the window and
//! linked to its full-size file) and every point's tables, folded.

use crate::metrics::Stats;
use crate::summary::{params_label, Summary};

/// A figure already drawn.
pub struct RenderedFigure<'a> {
    /// File stem (also the anchor).
    pub stem: &'a str,
    /// Title for the figure's caption.
    pub title: &'a str,
    /// The SVG text.
    pub svg: &'a str,
    /// Whether it shows one sweep point (a time series) rather than the whole sweep.
    pub per_point: bool,
}

/// Beyond this many points, per-point figures are linked rather than inlined.
pub const MAX_INLINE_POINTS: usize = 12;

/// Escape text for HTML.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn kbps(v: f64) -> String {
    format!("{:.1}", v / 1e3)
}

fn stats_cells(s: &Stats, scale: fn(f64) -> String) -> String {
    format!(
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
        scale(s.mean),
        scale(s.min),
        scale(s.max),
        scale(s.std)
    )
}

/// The page's style: figures shrink to the page's width (their files keep the full size, a click
/// away), wide tables scroll inside their own box, so nothing makes the page wider than the
/// window.
const STYLE: &str = "body{font-family:sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:0.5em 0 1.5em}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}figure{margin:1em 0}\
figure svg{max-width:100%;height:auto;display:block}figure a{display:block}\
.wide{overflow-x:auto;max-width:100%}details{margin:0.5em 0}summary{cursor:pointer}\
nav.toc li{margin:0.15em 0}pre{white-space:pre-wrap;overflow-wrap:anywhere}\
figcaption{font-size:0.9em;color:#555}.short{color:#b00}pre.notes{white-space:pre-wrap;background:#f8f8f8;padding:0.5em}";

/// The whole page; `file` names the scenario file and `source` is its text, shown folded at the
/// end. Like summary.json it holds no wall-clock time: the same inputs give the same page.
pub fn html(summary: &Summary, figures: &[RenderedFigure<'_>], file: &str, source: &str) -> String {
    let mut h = String::new();
    h.push_str(&format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{name}</title><style>{STYLE}</style></head><body>\n",
        name = esc(&summary.scenario)
    ));
    h.push_str(&format!(
        "<h1>{}</h1>\n<p>{}</p>\n",
        esc(&summary.scenario),
        esc(&summary.description)
    ));
    h.push_str(&format!(
        "<p>Scenario file <code>{}</code>; {} run(s) per point with seeds {}..{}; {:.0} s simulated per run, the first {:.0} s left out of the means; \
         {} point(s); {:.0} s simulated in all, {} events.</p>\n",
        esc(file),
        summary.runs,
        summary.seed,
        summary.seed + summary.runs as u64 - 1,
        summary.duration_s,
        summary.warmup_s,
        summary.points.len(),
        summary.simulated_s,
        summary.events
    ));
    // The file's opening comments: where the experiment comes from, what the paper found, the
    // choices made where it is silent.
    let notes: Vec<&str> = source
        .lines()
        .take_while(|l| l.trim_start().starts_with('#') || l.trim().is_empty())
        .map(|l| {
            l.trim_start()
                .trim_start_matches('#')
                .strip_prefix(' ')
                .unwrap_or("")
        })
        .collect();
    if notes.iter().any(|l| !l.trim().is_empty()) {
        h.push_str(&format!(
            "<h2>About this experiment</h2>\n<pre class=\"notes\">{}</pre>\n",
            esc(notes.join("\n").trim())
        ));
    }
    // A table of contents: the figures first, then the points' tables, then the file.
    h.push_str("<nav class=\"toc\"><h2>Contents</h2><ol>\n");
    if !figures.is_empty() {
        h.push_str("<li><a href=\"#figures\">Figures</a></li>\n");
    }
    h.push_str(&format!(
        "<li><a href=\"#points\">Tables of the {} point(s)</a></li>\n<li><a href=\"#scenario\">Scenario file</a></li>\n</ol></nav>\n",
        summary.points.len()
    ));
    if !figures.is_empty() {
        h.push_str("<h2 id=\"figures\">Figures</h2>\n");
        h.push_str(&figures_html(summary, figures));
    }
    h.push_str("<h2 id=\"points\">Points</h2>\n");
    h.push_str(
        "<p>Throughput is measured at the receiver at the network level (retransmissions included); goodput is what \
         reached the application in order. <em>Per flow</em> statistics take every flow of every run as a sample; \
         <em>group</em> statistics the group's total in each run. Rates in kbit/s; a group total below its target \
         is shown <span class=\"short\">in red</span>. Queue counts are means per run after the warm-up; in-profile is green, \
         out-profile yellow and red.</p>\n",
    );
    h.push_str(&points_html(summary));
    h.push_str(&format!(
        "<details id=\"scenario\"><summary>Scenario file <code>{}</code></summary><pre>{}</pre></details>\n",
        esc(file),
        esc(source)
    ));
    h.push_str("</body></html>\n");
    h
}

/// The figures, the comparison across the sweep first (the papers' side-by-side panels ahead of
/// the rest), then each point's.
fn figures_html(summary: &Summary, figures: &[RenderedFigure<'_>]) -> String {
    let mut h = String::new();
    let mut ordered: Vec<&RenderedFigure<'_>> = figures.iter().collect();
    // Stable: within each rank the drawing order stays.
    ordered.sort_by_key(|f| (f.per_point, !f.stem.ends_with("panels")));
    // With many points, the per-point time series stay in their files, linked, to keep the page light.
    let (inline, linked): (Vec<_>, Vec<_>) = ordered
        .into_iter()
        .partition(|f| summary.points.len() <= MAX_INLINE_POINTS || !f.per_point);
    if !linked.is_empty() {
        h.push_str("<p>Time series of every point (one run each):</p><ul>\n");
        for f in &linked {
            h.push_str(&format!(
                "<li><a href=\"plots/{stem}.svg\">{title}</a></li>\n",
                stem = esc(f.stem),
                title = esc(f.title)
            ));
        }
        h.push_str("</ul>\n");
    }
    for f in inline {
        h.push_str(&format!(
            "<figure id=\"{stem}\"><a href=\"plots/{stem}.svg\" title=\"full size\">{svg}</a><figcaption>{title} (<code>plots/{stem}.svg</code>, click for full size)</figcaption></figure>\n",
            stem = esc(f.stem),
            svg = f.svg,
            title = esc(f.title)
        ));
    }
    h
}

/// Each point's tables, folded.
fn points_html(summary: &Summary) -> String {
    let mut h = String::new();
    for (p, point) in summary.points.iter().enumerate() {
        // Folded: a long sweep's tables would bury the figures; the first point is open.
        h.push_str(&format!(
            "<details id=\"p{p}\"{open}><summary>Point {p}: {}</summary>\n",
            esc(&params_label(&point.params)),
            open = if p == 0 { " open" } else { "" }
        ));
        if let Some(m) = &point.metrics {
            let perf: Vec<String> = m
                .performance
                .iter()
                .map(|(a, v)| format!("{v:.3} (a = {a})"))
                .collect();
            h.push_str(&format!(
                "<p>All flows: efficiency E = {:.3}{}, Jain's fairness F = {:.3}, performance a E + (1 - a) F = {}.</p>\n",
                m.efficiency.mean,
                m.efficiency
                    .ci95
                    .map_or(String::new(), |ci| format!(" ± {ci:.3}")),
                m.jain.mean,
                perf.join(", ")
            ));
        }
        h.push_str(
            "<div class=\"wide\"><table><tr><th>group</th><th>protocol</th><th>flows</th><th>target</th>\
             <th>group mean</th><th>group min</th><th>group max</th><th>group std</th>\
             <th>per-flow mean</th><th>per-flow min</th><th>per-flow max</th><th>per-flow std</th>\
             <th>goodput/flow</th><th>jitter (ms)</th><th>delay mean (ms)</th><th>delay p50</th>\
             <th>delay p95</th><th>delay p99</th><th>Jain</th><th>retransmitted</th></tr>\n",
        );
        for g in &point.flows {
            let short = g
                .target_bps
                .is_some_and(|t| g.aggregate_bps.mean < t as f64);
            let cls = if short { " class=\"short\"" } else { "" };
            h.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td>{}{}<td>{}</td><td>{}</td>{}<td>{}</td><td>{:.2}%</td></tr>\n",
                esc(&g.group),
                esc(&g.protocol),
                g.flows,
                g.target_bps.map_or("-".into(), |t| kbps(t as f64)),
                stats_cells(&g.aggregate_bps, kbps).replacen("<td>", &format!("<td{cls}>"), 1),
                stats_cells(&g.throughput_bps, kbps),
                kbps(g.goodput_bps.mean),
                g.jitter_ms.map_or("-".into(), |j| format!("{:.2}", j.mean)),
                ["delay_mean_ms", "delay_p50_ms", "delay_p95_ms", "delay_p99_ms"]
                    .map(|m| format!(
                        "<td>{}</td>",
                        g.metrics.get(m).map_or("-".into(), |d| format!("{:.2}", d.mean))
                    ))
                    .concat(),
                g.fairness.map_or("-".into(), |f| format!("{f:.3}")),
                g.retransmitted * 100.0
            ));
        }
        h.push_str("</table></div>\n");
        if let Some(f) = point.target_fairness {
            h.push_str(&format!(
                "<p>Jain's index of throughput over target share, all flows: {f:.3}</p>\n"
            ));
        }
        if !point.queues.is_empty() {
            h.push_str(
                "<div class=\"wide\"><table><tr><th>queue</th><th>code point</th><th>packets</th><th>share</th><th>ldrops</th>\
                 <th>ldrops %</th><th>edrops</th><th>edrops %</th></tr>\n",
            );
            for q in &point.queues {
                let mut rows = vec![
                    ("in-profile", &q.in_profile),
                    ("out-profile", &q.out_profile),
                ];
                if q.yellow.packets > 0.0 {
                    rows.push(("of which yellow", &q.yellow));
                }
                for (cp, c) in rows {
                    h.push_str(&format!(
                        "<tr><td>{}</td><td>{cp}</td><td>{:.0}</td><td>{:.2}%</td><td>{:.0}</td><td>{:.2}%</td><td>{:.0}</td><td>{:.2}%</td></tr>\n",
                        esc(&q.name),
                        c.packets,
                        c.share * 100.0,
                        c.ldrops,
                        c.ldrop_rate * 100.0,
                        c.edrops,
                        c.edrop_rate * 100.0
                    ));
                }
            }
            h.push_str("</table></div>\n");
        }
        h.push_str("</details>\n");
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::execute;
    use crate::scenario::{parse, Overrides};
    use crate::summary::build;
    use crate::testkit::{fake, PLAN};

    #[test]
    fn the_page_opens_with_the_files_notes_and_gives_each_points_metrics() {
        let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
        let results = execute(&plan, 1, fake, &|_| {}).unwrap();
        let summary = build(&plan, &results, &Overrides::default());
        let source = format!("# Paper: 96% at 1 flow <b>\n#\n# Lab: see below\n\n{PLAN}");
        let page = html(&summary, &[], "t.toml", &source);
        assert!(page.contains("<h2>About this experiment</h2>"));
        assert!(
            page.contains("Paper: 96% at 1 flow &lt;b&gt;\n\nLab: see below</pre>"),
            "{page}"
        );
        assert_eq!(page.matches("All flows: efficiency E = ").count(), 2);
        // No notes, no section.
        assert!(!html(&summary, &[], "t.toml", PLAN).contains("About this experiment"));
    }

    #[test]
    fn the_page_leads_with_contents_and_the_comparison_figure_and_folds_the_point_tables() {
        let plan = parse(PLAN, "t.toml", &Overrides::default()).unwrap();
        let results = execute(&plan, 1, fake, &|_| {}).unwrap();
        let summary = build(&plan, &results, &Overrides::default());
        let svg = "<svg width=\"2000\" height=\"400\" viewBox=\"0 0 2000 400\"></svg>";
        let figure = |stem, per_point| RenderedFigure {
            stem,
            title: stem,
            svg,
            per_point,
        };
        let figures = [
            figure("throughput-p00", true),
            figure("jitter-cdf", false),
            figure("throughput-panels", false),
        ];
        let page = html(&summary, &figures, "t.toml", PLAN);
        let at = |needle: &str| page.find(needle).unwrap_or_else(|| panic!("no {needle}"));
        assert!(at("<nav class=\"toc\">") < at("<h2 id=\"figures\">"));
        assert!(at("<h2 id=\"figures\">") < at("<h2 id=\"points\">"));
        // The comparison panels first, then the sweep's other figures, then each point's.
        assert!(at("id=\"throughput-panels\"") < at("id=\"jitter-cdf\""));
        assert!(at("id=\"jitter-cdf\"") < at("id=\"throughput-p00\""));
        // A click opens the full-size file; figures shrink to the page.
        assert!(page.contains("<a href=\"plots/throughput-panels.svg\""));
        assert!(STYLE.contains("figure svg{max-width:100%"));
        // Point tables folded (the first open), wide tables scrolling in their box.
        assert!(page.contains("<details id=\"p0\" open>"));
        assert!(page.contains("<details id=\"p1\">"));
        assert!(page.contains("<div class=\"wide\"><table>"));
    }
}
