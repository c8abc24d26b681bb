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
//!   [{ name, rate, borrow, groups = ["NAME", ..], limit }, ..] }`. A dumbbell's droptail or red
//!   takes `limit = "auto"`: RTT x C / sqrt(m) packets over its groups' flows (Free & Stunts
//!   §IV), and red then `curve = [limit / 4, limit, 0.1]` unless the file gives one.
//! - `loss`: `{ kind = "bernoulli", p }` or `{ kind = "gilbert-elliott", p_good_to_bad,
//!   p_bad_to_good, loss_good = 0, loss_bad = 1 }`.
//! - `[[group]]`: `name`, `protocol` (tcp, tfrc, tfrc-sack, gtfrc, qstp, cbr, onoff), `flows`
//!   (default 1), `rtt`, `target` (the group's negotiated rate; each flow's gTFRC floor is
//!   target / flows), `marker`, `start` (default 0s), `packet_size` (default the file's). TCP: `congestion` (default newreno),
//!   `delayed_ack` (default false), `window` (bytes, default 256 KiB). cbr and onoff: `rate` or
//!   `schedule = [["0s", "300k"], ["60s", "1000k"]]`; onoff also `mean_on`, `mean_off` (1s).
//!   Any tcp group: `onoff = { on, off, random = false, flows }` switches each flow's application
//!   (or its first `flows`) on and off (periods exactly `on` and `off`, or with `random` uniform in [0, 2x] around them).
//! - `marker`: `{ kind = "token-bucket", rate, bucket }`, `{ kind = "srtcm", cir, cbs, ebs }`,
//!   `{ kind = "trtcm", cir, cbs, pir, pbs }`, `{ kind = "tsw2", cir, window }`,
//!   `{ kind = "tsw3", cir, pir, window }` (window defaults to 1s), `{ kind = "gcra", pcr, cdvt,
//!   scr, mbs, tagging }` (ATM policing, ITU-T I.371).
//! - `[fluid]` (read by `qstp fluid` only; `qstp run` checks and ignores it): `step` (the fluid
//!   model's fixed integration step, default 1ms, at most the smallest delay of the model),
//!   `margin` (default false: the controller is handed T / 1.33 so that the fluid Free aims at
//!   T itself; true: T, as the packet simulator, so that it aims at 1.33 T).
//! - A group of `protocol = "command"` (the testbed only; `qstp run` and `qstp fluid` refuse it,
//!   [`Plan::refuse_testbed_only`]): `receiver` and `sender`, argv arrays of programs the
//!   testbed runs in each flow's two namespaces, with placeholders ([`PLACEHOLDERS`]); they are
//!   kept in the scenario's [`TestbedParams::commands`], and the group's spec is a source that
//!   sends nothing.
//! - `[testbed]` (read by `qstp testbed` only; `qstp run` checks and ignores it): `classify`
//!   (`"flow"`, the default: the router finds a packet's edge marker by its addresses; `"dscp"`:
//!   by the code point its sender set), `dscp = { <group> = "AF21" | number, .. }` (the code
//!   point each group's senders set; with `"dscp"`, groups not named get CS1, CS2, .. in order).
//! - `[sweep]`: `"dotted.key" = [values]`; every combination is a point. In a key, a list of tables
//!   is indexed by element `name` (`group.AB.protocol`) or number; keys joined with `+` move
//!   together (`"group.A.protocol+group.B.protocol" = ["tfrc", "gtfrc"]`), and so do keys joined
//!   with `,`, each value then a list with one element per key (`"bottleneck.rate,group.X.flows"
//!   = [["40M", 10], ["80M", 20]]`).

mod delegation;
mod fields;
mod fluid;
mod graph;
mod group;
mod network;
mod sizing;
mod sweep;
mod testbed;

pub use group::{protocol_name, protocols};
pub use testbed::{parse_dscp, Classify, CommandSpec, TestbedParams, PLACEHOLDERS};

use fields::{FieldError, Fields};
use qstp_dataplane::queue::QueueSpec;
use qstp_proto::Duration;
use qstp_sim::{GroupSpec, LinkSpec, SimError, SimSpec, Topology};
use std::path::Path;
use toml::{Table, Value};

/// Width of the recorded series' bins when the file gives none.
const DEFAULT_BIN: Duration = Duration::from_millis(100);
/// Most runs per point: a bound on the work one file can ask for.
const MAX_RUNS: u64 = 10_000;

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
    /// The Free & Stunts delegation group of `[delegation]`, its trace made feasible.
    pub delegation: Option<qstp_sim::spec::DelegationSpec>,
    /// The trace points the delegation's preprocessor lowered.
    pub delegation_changes: Vec<qstp_sim::delegation::Change>,
    /// How `qstp fluid` solves the fluid model (`[fluid]`; `qstp run` ignores it).
    pub fluid: qstp_fluid::FluidParams,
    /// How `qstp testbed` classifies and marks (`[testbed]`; `qstp run` ignores it).
    pub testbed: TestbedParams,
    /// The files it read besides itself (a trace's CSV), as written: relative to its folder.
    pub inputs: Vec<String>,
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
            delegation: self.delegation.clone(),
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
    /// What the run writes besides the summary and the per-run results.
    pub outputs: Outputs,
}

/// Which runs keep their time series (`series.csv`, the per-flow figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeriesRuns {
    /// Every run.
    All,
    /// The first run of each point (asked for, or every run's would exceed
    /// [`MAX_SERIES_VALUES`]).
    First,
    /// None: no `series.csv`, no per-flow figures.
    None,
}

/// Most series values (bins x flows x 3 metrics, over every run kept) a plan keeps in memory and
/// writes to `series.csv`: 4 M values, about 32 MiB in memory and 140 MB of CSV (the QSTP
/// paper's Fig. 4 keeps 3.87 M and writes 136 MB). A plan above it keeps the series of the first
/// run of each point only.
pub const MAX_SERIES_VALUES: u64 = 4 << 20;

/// The runs the plan's outputs ask for; by default every run's series if they fit
/// [`MAX_SERIES_VALUES`], else the first run's of each point.
pub fn series_runs(plan: &Plan) -> SeriesRuns {
    if let Some(asked) = plan.outputs.series {
        return asked;
    }
    let values: u64 = plan
        .points
        .iter()
        .map(|p| {
            let s = &p.scenario;
            let bins = s.duration.as_nanos().div_ceil(s.bin.as_nanos().max(1));
            let flows: u64 = s.groups.iter().map(|g| u64::from(g.flows)).sum();
            bins.saturating_mul(flows)
                .saturating_mul(3)
                .saturating_mul(u64::from(s.runs))
        })
        .fold(0u64, u64::saturating_add);
    if values <= MAX_SERIES_VALUES {
        SeriesRuns::All
    } else {
        SeriesRuns::First
    }
}

/// What a run writes besides `summary.json` and `runs.csv` (`qstp run --series`, `--no-plots`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    /// Which runs keep their series; `None`: every run's if they fit the bound, else the first.
    pub series: Option<SeriesRuns>,
    /// Whether to draw the figures and write `report.html`.
    pub figures: bool,
}

impl Default for Outputs {
    fn default() -> Self {
        Outputs {
            series: None,
            figures: true,
        }
    }
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
            if let QueueSpec::Cbq(qstp_dataplane::queue::CbqSpec { classes }) =
                &s.bottleneck().queue
            {
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
            if let Some(first) = s.delegation_changes.first() {
                add(format!(
                    "delegation.trace: the preprocessor lowered {} point(s) the Free cannot reach \
                     (first at {}: {} asked, {} feasible, {:?} check)",
                    s.delegation_changes.len(),
                    first.at,
                    first.asked,
                    first.feasible,
                    first.check
                ));
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

    /// Refuse what only the testbed runs: a `protocol = "command"` group runs real programs,
    /// which neither the simulator nor the fluid model can stand for. `qstp run`, `qstp fluid`
    /// and the Python bindings call this before anything runs.
    pub fn refuse_testbed_only(&self) -> Result<(), ScenarioError> {
        for point in &self.points {
            let s = &point.scenario;
            if let Some(g) = s
                .testbed
                .commands
                .iter()
                .position(Option::is_some)
                .and_then(|g| s.groups.get(g))
            {
                return Err(ScenarioError::Invalid {
                    file: self.file.clone(),
                    key: format!("group.{}.protocol", g.name),
                    reason: "\"command\" runs programs in the testbed's namespaces (qstp \
                             testbed) and cannot be simulated: the lab and the fluid model have \
                             no model of what a program sends"
                        .into(),
                });
            }
        }
        Ok(())
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
            for (part, v) in sweep::assignments(key, value) {
                sweep::apply(&mut point_doc, &part, v).map_err(field)?;
            }
        }
        let dir = Path::new(file).parent().unwrap_or(Path::new("."));
        let scenario = read(point_doc, dir).map_err(|e| {
            // A key the format does not know that only the sweep brought in: say so.
            if e.unknown
                && sweep_keys
                    .iter()
                    .any(|k| sweep::parts(k).any(|part| part == e.key))
            {
                field(FieldError::new(
                    format!("sweep.{}", e.key),
                    "no such key in the scenario format",
                ))
            } else {
                field(e)
            }
        })?;
        // The simulator's checks, the only home of the rules on values, so that nothing runs
        // unless every point can; what it refuses is reported at the key that set it.
        qstp_sim::validate::validate(&scenario.spec(0)).map_err(|e| {
            let (key, mut reason) = sim_error_key(&e).unwrap_or_else(|| {
                (
                    params_key(&combination),
                    format!("the simulator refuses it: {e}"),
                )
            });
            // A value the sweep set: say which point refused it.
            let swept = combination.iter().any(|(k, _)| {
                sweep::parts(k).any(|part| key == part || key.starts_with(&format!("{part}.")))
            });
            if swept {
                reason = format!("{reason} (at sweep point {})", params_key(&combination));
            }
            ScenarioError::Invalid {
                file: file.to_string(),
                key,
                reason,
            }
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
        outputs: Outputs::default(),
    })
}

/// The scenario key a simulator key stands for: `groups[<name>].rest` is `group.<name>.rest`, the
/// others are written alike.
fn scenario_key(sim_key: &str) -> String {
    match sim_key
        .strip_prefix("groups[")
        .and_then(|rest| rest.rsplit_once(']'))
    {
        Some((name, rest)) => format!("group.{name}{rest}"),
        None => sim_key.to_string(),
    }
}

/// The scenario key and the reason for what the simulator refused, `None` for an error about
/// no key in particular.
fn sim_error_key(e: &SimError) -> Option<(String, String)> {
    let group = |name: &str, field: &str| format!("group.{name}.{field}");
    Some(match e {
        SimError::Invalid { key, reason } => (scenario_key(key), reason.clone()),
        SimError::Component { component, error } => {
            let field = error.field();
            let key = match field.as_str() {
                "" => scenario_key(component),
                // A segment too small for any payload: the packet size is at fault.
                "packet_size" => field,
                _ => format!("{}.{field}", scenario_key(component)),
            };
            (key, error.to_string())
        }
        SimError::RttShorterThanPath { group: name, .. } => (group(name, "rtt"), e.to_string()),
        SimError::CongestionControl { group: name, error } => {
            (group(name, "congestion"), error.to_string())
        }
        SimError::QstpConfig {
            group: name,
            source,
        } => (group(name, "protocol"), source.to_string()),
        SimError::TooManyFlows { .. } => ("group".into(), e.to_string()),
        SimError::TooManyBins { .. } => ("bin".into(), e.to_string()),
        _ => return None,
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
fn read(doc: Table, dir: &Path) -> Result<Scenario, FieldError> {
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
    let warmup = f.opt_duration("warmup")?.unwrap_or(Duration::ZERO);
    let runs = f.opt_u64("runs")?.unwrap_or(1);
    if runs == 0 || runs > MAX_RUNS {
        return Err(f.error("runs", format!("{runs} is outside 1..={MAX_RUNS}")));
    }
    let seed = f.opt_u64("seed")?.unwrap_or(1);
    let packet_size = f.opt_u64("packet_size")?.unwrap_or(1500);
    let packet_size = usize::try_from(packet_size)
        .map_err(|_| f.error("packet_size", format!("{packet_size} is too large")))?;
    let bin = f.opt_duration("bin")?.unwrap_or(DEFAULT_BIN);
    let links = graph::links(&mut f)?;
    let (groups, hosts, commands) = groups(&mut f, packet_size, links.is_some())?;
    let crossing = sizing::Crossing::of(&groups, packet_size);
    let bottleneck = match (&links, f.has("bottleneck")) {
        (Some(_), true) => {
            return Err(f.error(
                "bottleneck",
                "a file has either a [bottleneck] (the dumbbell) or [[link]] tables, not both",
            ))
        }
        (Some(_), false) => None,
        (None, true) => Some(network::link(f.table("bottleneck")?, Some(&crossing))?),
        (None, false) => {
            return Err(f.error(
                "bottleneck",
                "missing: give a [bottleneck] (the dumbbell) or [[link]] tables (a graph)",
            ))
        }
    };
    let topology = match (bottleneck, links) {
        (Some(bottleneck), _) => Topology::Dumbbell { bottleneck },
        (None, links) => Topology::Graph(graph::graph(
            links.as_deref().unwrap_or_default(),
            &groups,
            &hosts,
        )?),
    };
    let mut inputs = Vec::new();
    let (delegation, delegation_changes) = match f.opt_table("delegation")? {
        None => (None, Vec::new()),
        Some(t) => {
            let file = t.peek("trace").and_then(|v| v.get("file"));
            inputs.extend(file.and_then(Value::as_str).map(str::to_string));
            let rate = match &topology {
                Topology::Dumbbell { bottleneck } => bottleneck.rate,
                Topology::Graph(g) => g.links[g.bottleneck].link.rate,
            };
            let (d, changes) = delegation::delegation(t, &groups, packet_size, rate, dir)?;
            (Some(d), changes)
        }
    };
    let fluid = fluid::fluid(f.opt_table("fluid")?)?;
    let testbed = testbed::testbed(f.opt_table("testbed")?, &groups, commands)?;
    f.finish()?;
    Ok(Scenario {
        name,
        description,
        duration,
        warmup,
        runs: runs as u32,
        seed,
        packet_size,
        bin,
        topology,
        groups,
        delegation,
        delegation_changes,
        fluid,
        testbed,
        inputs,
    })
}

/// The `[[group]]` tables, with the hosts each names in a graph and the programs of each
/// `protocol = "command"` group.
#[allow(clippy::type_complexity)]
fn groups(
    f: &mut Fields,
    packet_size: usize,
    graph: bool,
) -> Result<(Vec<GroupSpec>, Vec<graph::Hosts>, Vec<Option<CommandSpec>>), FieldError> {
    let items = f
        .opt_array("group")?
        .ok_or_else(|| f.error("group", "missing (at least one [[group]])"))?;
    let mut groups: Vec<GroupSpec> = Vec::with_capacity(items.len());
    let mut hosts = Vec::with_capacity(items.len());
    let mut commands = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Table(t) = item else {
            return Err(f.error("group", format!("element {i} is not a table")));
        };
        let label = t
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| i.to_string());
        let (g, h, c) = group::group(Fields::new(format!("group.{label}"), t), packet_size, graph)?;
        groups.push(g);
        hosts.extend(h);
        commands.push(c);
    }
    if groups.is_empty() {
        return Err(f.error("group", "at least one [[group]] is needed"));
    }
    Ok((groups, hosts, commands))
}

#[cfg(test)]
mod graph_tests;
#[cfg(test)]
mod tests;
