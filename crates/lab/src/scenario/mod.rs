//! Scenario files: TOML experiments, their sweeps, and the simulation runs they stand for.
//!
//! A file is read as a TOML document; command-line overrides and then each sweep combination are
//! set into the document, and only then is it read into typed values and validated, so a swept or
//! overridden value is checked exactly as a written one. Any problem is one [`ScenarioError`]
//! naming the file, the key and the reason, and nothing runs.
//!
//! # Format
//!
//! Rates are strings parsed by `Rate::parse` (`"500k"`, `"1.5M"`, `"64kB/s"`), durations strings
//! parsed by `Duration::parse` (`"30ms"`, `"180s"`); sizes are integers in bytes.
//!
//! - Top level: `name` (names the output folder), `description`, `duration`, `warmup` (left out of
//!   the means, default 0s), `runs` (default 1), `seed` (default 1; run i uses seed + i),
//!   `packet_size` (default 1500), `bin` (width of the recorded series, default 100ms).
//! - `[bottleneck]`: `rate`, `delay` (one-way, part of every group's rtt, default 0s), `queue`,
//!   optional `loss`. Or, instead, `[[link]]` tables (a graph): `name`, `from`, `to`, `rate`,
//!   `delay`, `queue`, `loss`, `reverse = { .. }`, `bottleneck = true`; groups then name `source`
//!   and `sink` hosts instead of `rtt` (see docs/scenarios.md).
//! - `queue`: `{ kind = "droptail", limit }`, `{ kind = "red", limit, curve = [min, max, max_p],
//!   weight }`, `{ kind = "rio", limit, in = [..], out = [..], middle = [..] (optional, yellow),
//!   mode = "rio-c" | "rio-d", weight }` (weight defaults to 0.002), or `{ kind = "cbq", classes =
//!   [{ name, rate, borrow, groups = ["NAME", ..], limit }, ..] }`.
//! - `loss`: `{ kind = "bernoulli", p }` or `{ kind = "gilbert-elliott", p_good_to_bad,
//!   p_bad_to_good, loss_good = 0, loss_bad = 1 }`.
//! - `[[group]]`: `name`, `protocol` (tcp, tfrc, tfrc-sack, gtfrc, qstp, cbr, onoff), `flows`
//!   (default 1), `rtt`, `target` (the group's negotiated rate; each flow's gTFRC floor is
//!   target / flows), `marker`, `start` (default 0s), `packet_size` (default the file's). TCP: `congestion` (default newreno),
//!   `delayed_ack` (default false), `window` (bytes, default 256 KiB). cbr and onoff: `rate` or
//!   `schedule = [["0s", "300k"], ["60s", "1000k"]]`; onoff also `mean_on`, `mean_off` (1s).
//! - `marker`: `{ kind = "token-bucket", rate, bucket }`, `{ kind = "srtcm", cir, cbs, ebs }`,
//!   `{ kind = "trtcm", cir, cbs, pir, pbs }`, `{ kind = "tsw2", cir, window }`,
//!   `{ kind = "tsw3", cir, pir, window }` (window defaults to 1s).
//! - `[sweep]`: `"dotted.key" = [values]`; every combination is a point. In a key, a list of tables
//!   is indexed by element `name` (`group.AB.protocol`) or number; keys joined with `+` move
//!   together (`"group.A.protocol+group.B.protocol" = ["tfrc", "gtfrc"]`).

mod fields;
mod graph;
mod group;
mod network;
mod sweep;

pub use group::{protocol_name, PROTOCOLS};

use fields::{FieldError, Fields};
use qstp_proto::config::{MAX_DATAGRAM, MIN_DATAGRAM};
use qstp_proto::Duration;
use qstp_sim::{GroupSpec, LinkSpec, QueueSpec, SimSpec, Topology};
use std::path::Path;
use toml::{Table, Value};

/// Width of the recorded series' bins when the file gives none.
const DEFAULT_BIN: Duration = Duration::from_millis(100);
/// Most runs per point: a bound on the work one file can ask for.
const MAX_RUNS: u64 = 10_000;
/// Most bins in one flow's series: a bound on memory.
const MAX_BINS: u64 = 10_000_000;

/// Why a scenario file was refused.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{file}: cannot read: {error}")]
    Read {
        /// The file.
        file: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// The file is not TOML.
    #[error("{file}: not valid TOML: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The parser's message, with line and column.
        message: String,
    },
    /// A key the scenario format does not know.
    #[error("{file}: {key}: unknown key")]
    UnknownKey {
        /// The file.
        file: String,
        /// Dotted path of the key.
        key: String,
    },
    /// A value that is missing, of the wrong kind or out of range.
    #[error("{file}: {key}: {reason}")]
    Invalid {
        /// The file.
        file: String,
        /// Dotted path of the key.
        key: String,
        /// Why.
        reason: String,
    },
}

impl ScenarioError {
    /// The dotted key the error is about, if any.
    pub fn key(&self) -> Option<&str> {
        match self {
            ScenarioError::UnknownKey { key, .. } | ScenarioError::Invalid { key, .. } => Some(key),
            _ => None,
        }
    }

    fn from_field(file: &str, e: FieldError) -> Self {
        if e.unknown {
            ScenarioError::UnknownKey {
                file: file.to_string(),
                key: e.key,
            }
        } else {
            ScenarioError::Invalid {
                file: file.to_string(),
                key: e.key,
                reason: e.reason,
            }
        }
    }
}

/// Values the command line sets over the file's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    /// Runs per point.
    pub runs: Option<u32>,
    /// Seed of the first run.
    pub seed: Option<u64>,
    /// Simulated time per run; the warm-up is scaled by the same factor, so that it stays the
    /// same share of the run.
    pub duration: Option<Duration>,
}

/// One fully resolved experiment: everything of a [`SimSpec`] but the seed, plus what the lab needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// Name, for output paths and reports.
    pub name: String,
    /// One line saying what the experiment shows.
    pub description: String,
    /// Simulated time per run.
    pub duration: Duration,
    /// Initial span excluded from the means.
    pub warmup: Duration,
    /// Runs per point.
    pub runs: u32,
    /// Seed of the first run; run `i` uses `seed + i`.
    pub seed: u64,
    /// Data packet size, bytes.
    pub packet_size: usize,
    /// Width of the recorded series' bins.
    pub bin: Duration,
    /// The network: a dumbbell around `[bottleneck]`, or the graph of the `[[link]]` tables.
    pub topology: Topology,
    /// The flow groups.
    pub groups: Vec<GroupSpec>,
}

impl Scenario {
    /// The link recorded as the bottleneck (in a graph, the one marked `bottleneck = true` or the
    /// slowest).
    pub fn bottleneck(&self) -> &LinkSpec {
        match &self.topology {
            Topology::Dumbbell { bottleneck } => bottleneck,
            Topology::Graph(g) => &g.links[g.bottleneck].link,
        }
    }

    /// The simulation of run `run` (seed `seed + run`).
    pub fn spec(&self, run: u32) -> SimSpec {
        SimSpec {
            duration: self.duration,
            seed: self.seed.wrapping_add(run as u64),
            packet_size: self.packet_size,
            topology: self.topology.clone(),
            groups: self.groups.clone(),
            bin: self.bin,
            warmup: self.warmup,
        }
    }
}

/// One sweep point: the swept values and the scenario they give.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// `(dotted key, value)` per swept key, in the sweep's order.
    pub params: Vec<(String, Value)>,
    /// The resolved scenario.
    pub scenario: Scenario,
}

/// A scenario file, resolved into its points.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Where it came from.
    pub file: String,
    /// The file's text, as written.
    pub source: String,
    /// The swept keys, in order (empty without a sweep).
    pub sweep_keys: Vec<String>,
    /// One per combination of swept values (one when nothing is swept).
    pub points: Vec<Point>,
}

impl Plan {
    /// Settings that are legal but probably not what was meant, one line each, for the user to
    /// read before the run (a group no CBQ class names, a target above the bottleneck rate).
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for point in &self.points {
            let s = &point.scenario;
            let mut add = |w: String| {
                if !out.contains(&w) {
                    out.push(w);
                }
            };
            if let QueueSpec::Cbq { classes } = &s.bottleneck().queue {
                for g in &s.groups {
                    if !classes.iter().any(|c| c.groups.contains(&g.name)) {
                        let last = classes.last().map_or("", |c| c.name.as_str());
                        add(format!(
                            "group.{}: in no CBQ class, so its packets go to the last class, '{last}'",
                            g.name
                        ));
                    }
                }
            }
            for g in &s.groups {
                if let Some(t) = g.target.filter(|t| t.bps() > s.bottleneck().rate.bps()) {
                    add(format!(
                        "group.{}.target: {t:?} is above the bottleneck rate {:?}: it cannot be met",
                        g.name, s.bottleneck().rate
                    ));
                }
            }
        }
        out
    }

    /// The scenario as written (the first point's).
    pub fn base(&self) -> &Scenario {
        &self.points[0].scenario
    }

    /// Total runs over all points.
    pub fn total_runs(&self) -> u64 {
        self.points.iter().map(|p| p.scenario.runs as u64).sum()
    }
}

/// Read and resolve a scenario file.
pub fn load(path: &Path, overrides: &Overrides) -> Result<Plan, ScenarioError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Read {
        file: file.clone(),
        error,
    })?;
    parse(&text, &file, overrides)
}

/// Resolve scenario text; `file` names it in errors.
pub fn parse(text: &str, file: &str, overrides: &Overrides) -> Result<Plan, ScenarioError> {
    let mut doc: Table = text
        .parse()
        .map_err(|e: toml::de::Error| ScenarioError::Syntax {
            file: file.into(),
            message: e.to_string(),
        })?;
    let field = |e| ScenarioError::from_field(file, e);
    apply_overrides(&mut doc, overrides).map_err(field)?;
    let axes = match doc.remove("sweep") {
        None => Vec::new(),
        Some(Value::Table(t)) => sweep::axes(t).map_err(field)?,
        Some(other) => {
            return Err(field(FieldError::new(
                "sweep",
                format!("expected a table, found {}", other.type_str()),
            )))
        }
    };
    let sweep_keys: Vec<String> = axes.iter().map(|a| a.key.clone()).collect();
    let mut points = Vec::new();
    for combination in sweep::combinations(&axes) {
        let mut point_doc = doc.clone();
        for (key, value) in &combination {
            for part in key.split('+') {
                sweep::apply(&mut point_doc, part, value.clone()).map_err(field)?;
            }
        }
        let scenario = read(point_doc).map_err(|e| {
            // A key the format does not know that only the sweep brought in: say so.
            if e.unknown
                && sweep_keys
                    .iter()
                    .any(|k| k.split('+').any(|part| part == e.key))
            {
                field(FieldError::new(
                    format!("sweep.{}", e.key),
                    "no such key in the scenario format",
                ))
            } else {
                field(e)
            }
        })?;
        // The simulator's own checks, so that nothing runs unless every point can.
        qstp_sim::validate::validate(&scenario.spec(0)).map_err(|e| ScenarioError::Invalid {
            file: file.to_string(),
            key: params_key(&combination),
            reason: format!("the simulator refuses it: {e}"),
        })?;
        points.push(Point {
            params: combination,
            scenario,
        });
    }
    Ok(Plan {
        file: file.to_string(),
        source: text.to_string(),
        sweep_keys,
        points,
    })
}

/// The swept keys of a point, to name in an error about the point as a whole.
fn params_key(combination: &[(String, Value)]) -> String {
    if combination.is_empty() {
        "(scenario)".into()
    } else {
        combination
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn apply_overrides(doc: &mut Table, o: &Overrides) -> Result<(), FieldError> {
    if let Some(runs) = o.runs {
        doc.insert("runs".into(), Value::Integer(runs as i64));
    }
    if let Some(seed) = o.seed {
        let seed =
            i64::try_from(seed).map_err(|_| FieldError::new("seed", "must be below 2^63"))?;
        doc.insert("seed".into(), Value::Integer(seed));
    }
    if let Some(d) = o.duration {
        let written = doc
            .get("duration")
            .map(fields::duration)
            .transpose()
            .map_err(|r| FieldError::new("duration", r))?;
        let warmup = doc
            .get("warmup")
            .map(fields::duration)
            .transpose()
            .map_err(|r| FieldError::new("warmup", r))?;
        if let (Some(written), Some(warmup)) = (written, warmup) {
            if !written.is_zero() {
                // Whole milliseconds, so that the text parses back to exactly this span.
                let scaled = warmup.as_secs_f64() * d.as_secs_f64() / written.as_secs_f64();
                let scaled = Duration::from_millis((scaled * 1e3).round() as u64);
                doc.insert("warmup".into(), Value::String(scaled.to_string()));
            }
        }
        doc.insert("duration".into(), Value::String(d.to_string()));
    }
    Ok(())
}

/// Read a document (sweep removed) into a validated scenario.
fn read(doc: Table) -> Result<Scenario, FieldError> {
    let mut f = Fields::new("", doc);
    let name = f.str("name")?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        return Err(f.error(
            "name",
            "use letters, digits, '-', '_' or '.' only (it names the output folder)",
        ));
    }
    let description = f.opt_str("description")?.unwrap_or_default();
    let duration = f.duration("duration")?;
    if duration.is_zero() {
        return Err(f.error("duration", "must be positive"));
    }
    let warmup = f.opt_duration("warmup")?.unwrap_or(Duration::ZERO);
    if warmup >= duration {
        return Err(f.error("warmup", "must be shorter than the duration"));
    }
    let runs = f.opt_u64("runs")?.unwrap_or(1);
    if runs == 0 || runs > MAX_RUNS {
        return Err(f.error("runs", format!("{runs} is outside 1..={MAX_RUNS}")));
    }
    let seed = f.opt_u64("seed")?.unwrap_or(1);
    let packet_size = f.opt_u64("packet_size")?.unwrap_or(1500);
    if !(MIN_DATAGRAM as u64..=MAX_DATAGRAM as u64).contains(&packet_size) {
        return Err(f.error(
            "packet_size",
            format!("{packet_size} is outside {MIN_DATAGRAM}..={MAX_DATAGRAM} bytes"),
        ));
    }
    let bin = f.opt_duration("bin")?.unwrap_or(DEFAULT_BIN);
    if bin.is_zero() || bin > duration {
        return Err(f.error("bin", "must be positive and no longer than the duration"));
    }
    if duration.as_nanos() / bin.as_nanos() > MAX_BINS {
        return Err(f.error(
            "bin",
            format!("more than {MAX_BINS} bins per run; use wider bins"),
        ));
    }
    let links = graph::links(&mut f)?;
    let bottleneck = match (&links, f.has("bottleneck")) {
        (Some(_), true) => {
            return Err(f.error(
                "bottleneck",
                "a file has either a [bottleneck] (the dumbbell) or [[link]] tables, not both",
            ))
        }
        (Some(_), false) => None,
        (None, true) => Some(network::link(f.table("bottleneck")?)?),
        (None, false) => {
            return Err(f.error(
                "bottleneck",
                "missing: give a [bottleneck] (the dumbbell) or [[link]] tables (a graph)",
            ))
        }
    };
    let (groups, hosts) = groups(&mut f, packet_size as usize, links.is_some())?;
    let topology = match (bottleneck, links) {
        (Some(bottleneck), _) => {
            check_paths(&bottleneck, &groups)?;
            check_cbq(&bottleneck, "bottleneck", &groups)?;
            Topology::Dumbbell { bottleneck }
        }
        (None, links) => {
            let graph = graph::graph(links.as_deref().unwrap_or_default(), &groups, &hosts)?;
            for l in &graph.links {
                let key = match l.name.strip_suffix(".reverse") {
                    Some(name) => format!("link.{name}.reverse"),
                    None => format!("link.{}", l.name),
                };
                check_cbq(&l.link, &key, &groups)?;
            }
            Topology::Graph(graph)
        }
    };
    f.finish()?;
    Ok(Scenario {
        name,
        description,
        duration,
        warmup,
        runs: runs as u32,
        seed,
        packet_size: packet_size as usize,
        bin,
        topology,
        groups,
    })
}

/// The `[[group]]` tables, with the hosts each names in a graph.
fn groups(
    f: &mut Fields,
    packet_size: usize,
    graph: bool,
) -> Result<(Vec<GroupSpec>, Vec<graph::Hosts>), FieldError> {
    let items = f
        .opt_array("group")?
        .ok_or_else(|| f.error("group", "missing (at least one [[group]])"))?;
    let mut groups: Vec<GroupSpec> = Vec::with_capacity(items.len());
    let mut hosts = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Table(t) = item else {
            return Err(f.error("group", format!("element {i} is not a table")));
        };
        let label = t
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| i.to_string());
        let (g, h) = group::group(Fields::new(format!("group.{label}"), t), packet_size, graph)?;
        if groups.iter().any(|other| other.name == g.name) {
            return Err(FieldError::new(
                format!("group.{label}.name"),
                format!("duplicate group name '{}'", g.name),
            ));
        }
        groups.push(g);
        hosts.extend(h);
    }
    if groups.is_empty() {
        return Err(f.error("group", "at least one [[group]] is needed"));
    }
    Ok((groups, hosts))
}

/// Cross-checks between the dumbbell's bottleneck and the groups' round trips.
fn check_paths(link: &LinkSpec, groups: &[GroupSpec]) -> Result<(), FieldError> {
    for g in groups {
        let access = g.access.map_or(Duration::ZERO, |a| a.delay);
        if g.rtt < (link.delay + access.saturating_mul(2)).saturating_mul(2) {
            return Err(FieldError::new(
                format!("group.{}.rtt", g.name),
                if access.is_zero() {
                    format!("shorter than twice the bottleneck delay ({:?})", link.delay)
                } else {
                    format!(
                        "shorter than the path both ways (bottleneck {:?} and twice the access delay {:?})",
                        link.delay, access
                    )
                },
            ));
        }
    }
    Ok(())
}

/// The CBQ classes of the link at `key` (if it has CBQ) name groups that exist, each once, and
/// guarantee no more than the link's rate.
fn check_cbq(link: &LinkSpec, key: &str, groups: &[GroupSpec]) -> Result<(), FieldError> {
    if let QueueSpec::Cbq { classes } = &link.queue {
        let mut guaranteed = 0u64;
        for c in classes {
            guaranteed = guaranteed.saturating_add(c.rate.bps());
            for name in &c.groups {
                let key = format!("{key}.queue.classes.{}.groups", c.name);
                if !groups.iter().any(|g| &g.name == name) {
                    return Err(FieldError::new(key, format!("no group named '{name}'")));
                }
                if classes.iter().filter(|k| k.groups.contains(name)).count() > 1 {
                    return Err(FieldError::new(
                        key,
                        format!("group '{name}' is in more than one class"),
                    ));
                }
            }
        }
        if guaranteed > link.rate.bps() {
            return Err(FieldError::new(
                format!("{key}.queue.classes"),
                format!("the classes guarantee more than the link's {:?}", link.rate),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod tests;
