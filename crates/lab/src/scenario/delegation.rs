//! The `[delegation]` table: a Free & Stunts group (Free & Stunts paper), its controller
//! and the trace its application asks for, made feasible by the paper's preprocessor.

use super::fields::{FieldError, FieldResult, Fields};
use qstp_dataplane::params::ParamTable;
use qstp_proto::{Duration, Rate};
use qstp_sim::delegation::{preprocess, Change, ControllerSpec, Feasibility, Trace, TraceError};
use qstp_sim::spec::{DelegationSpec, SignalPath};
use qstp_sim::GroupSpec;
use std::path::Path;

/// The control period when the file gives none.
const DEFAULT_PERIOD: Duration = Duration::from_millis(500);

/// The delegation group, and what the preprocessor changed in its trace.
pub(crate) fn delegation(
    mut f: Fields,
    groups: &[GroupSpec],
    packet_size: usize,
    bottleneck: Rate,
    dir: &Path,
) -> FieldResult<(DelegationSpec, Vec<Change>)> {
    let free = f.str("free")?;
    let stunts = f.str("stunts")?;
    let (controller, period) = controller(f.table("controller")?)?;
    let trace = trace(f.table("trace")?, dir)?;
    let reverse = f.opt_bool("reverse")?.unwrap_or(false);
    let check = f.opt_bool("preprocess")?.unwrap_or(true);
    let stunt_rate = f.opt_rate("stunt_rate")?;
    let by = match f.opt_str("by")?.as_deref() {
        None | Some("host") => SignalPath::Host,
        // Free & Stunts paper, footnote 2: an ISP moves ECN marks between Free and Stunts.
        Some("network") => SignalPath::Network,
        Some(other) => {
            return Err(f.error(
                "by",
                format!(
                    "'{other}' is not who delegates (use host: the senders defer their \
                     reactions, or network: the bottleneck moves ECN marks)"
                ),
            ))
        }
    };
    f.finish()?;
    let group = |name: &str| groups.iter().find(|g| g.name == name);
    // The simulator checks the names; the preprocessor needs the Free's RTT and packet size and
    // the Stunts' number, so it runs only when both groups exist.
    let (trace, changes) = match (check, group(&free), group(&stunts)) {
        (true, Some(fg), Some(sg)) => {
            let total: u32 = groups.iter().map(|g| g.flows).sum();
            let size = fg.packet_size.unwrap_or(packet_size) as u64;
            let feasibility = Feasibility {
                rtt: fg.rtt,
                segment_bits: match &fg.protocol {
                    // A qstp datagram's payload: the datagram less the largest data header.
                    qstp_sim::Protocol::Qstp(q) => {
                        q.config
                            .max_datagram
                            .saturating_sub(qstp_proto::wire::MAX_DATA_HEADER)
                            as u64
                            * 8
                    }
                    // The TCP payload of a segment.
                    _ => qstp_dataplane::headers::tcp_payload(size) * 8,
                },
                stunts: sg.flows,
                // Eq. (2)'s x̄_s: by default the fair share of the bottleneck.
                stunt_rate: stunt_rate
                    .unwrap_or_else(|| Rate::from_bps(bottleneck.bps() / u64::from(total.max(1)))),
            };
            preprocess(&trace, &feasibility)
        }
        _ => (trace, Vec::new()),
    };
    Ok((
        DelegationSpec {
            free,
            stunts,
            controller,
            period,
            trace,
            reverse,
            by,
        },
        changes,
    ))
}

/// `controller = { kind = "none" | "onoff" | "pi", gain (pi's K), period }`.
fn controller(mut f: Fields) -> FieldResult<(ControllerSpec, Duration)> {
    let kind = f.str("kind")?;
    // `gain` is the PI controller's; the others accept and ignore it, so that a sweep over
    // `kind` can keep one table.
    let gain = f.opt_f64("gain")?;
    let spec = match kind.as_str() {
        "none" => ControllerSpec::None,
        "onoff" => ControllerSpec::OnOff,
        "pi" => ControllerSpec::Pi {
            gain: gain.ok_or_else(|| f.error("gain", "missing (the PI controller's K)"))?,
        },
        other => {
            return Err(f.error(
                "kind",
                format!("'{other}' is not a controller (use none, onoff or pi)"),
            ))
        }
    };
    let period = f.opt_duration("period")?.unwrap_or(DEFAULT_PERIOD);
    f.finish()?;
    Ok((spec, period))
}

/// `trace = { kind = "step", at = [..], rate = [..] }`, `{ kind = "ramp", from, to, start, end,
/// every }`, `{ kind = "sine", mean, amplitude, period, end, every }` or `{ file = "x.csv" }`.
fn trace(mut f: Fields, dir: &Path) -> FieldResult<Trace> {
    if let Some(file) = f.opt_str("file")? {
        let key = f.key("file");
        f.finish()?;
        let path = dir.join(&file);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| FieldError::new(&key, format!("{}: {e}", path.display())))?;
        return Trace::from_csv(&text).map_err(|e| FieldError::new(&key, format!("{file}: {e}")));
    }
    let kind = f.str("kind")?;
    let every = |f: &mut Fields| -> FieldResult<Duration> {
        Ok(f.opt_duration("every")?.unwrap_or(Duration::from_secs(1)))
    };
    let made: Result<Trace, TraceError> = match kind.as_str() {
        "step" => {
            let at = strings(&mut f, "at")?
                .iter()
                .map(|s| Duration::parse(s).map_err(|e| f.error("at", e.to_string())))
                .collect::<FieldResult<Vec<_>>>()?;
            let rate = strings(&mut f, "rate")?
                .iter()
                .map(|s| Rate::parse(s).map_err(|e| f.error("rate", e.to_string())))
                .collect::<FieldResult<Vec<_>>>()?;
            Trace::step(&at, &rate)
        }
        "ramp" => {
            let (from, to) = (f.rate("from")?, f.rate("to")?);
            let (start, end) = (f.duration("start")?, f.duration("end")?);
            Trace::ramp(from, to, start, end, every(&mut f)?)
        }
        "sine" => {
            let (mean, amplitude) = (f.rate("mean")?, f.rate("amplitude")?);
            let (period, end) = (f.duration("period")?, f.duration("end")?);
            Trace::sine(mean, amplitude, period, end, every(&mut f)?)
        }
        other => {
            return Err(f.error(
                "kind",
                format!("'{other}' is not a trace (use step, ramp, sine, or file = \"x.csv\")"),
            ))
        }
    };
    let trace = made.map_err(|e| f.error("kind", e.to_string()))?;
    f.finish()?;
    Ok(trace)
}

/// A list of strings that must be there.
fn strings(f: &mut Fields, key: &str) -> FieldResult<Vec<String>> {
    ParamTable::opt_strings(f, key)?.ok_or_else(|| f.error(key, "missing (a list)"))
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Overrides};
    use qstp_proto::Rate;

    const BASE: &str = r#"
name = "d"
duration = "20s"
[bottleneck]
rate = "10M"
queue = { kind = "droptail", limit = 40 }
[[group]]
name = "F"
protocol = "tcp"
flows = 1
rtt = "100ms"
[[group]]
name = "S"
protocol = "tcp"
flows = 4
rtt = "100ms"
"#;

    fn plan(delegation: &str) -> Result<super::super::Plan, String> {
        parse(
            &format!("{BASE}[delegation]\n{delegation}"),
            "d.toml",
            &Overrides::default(),
        )
        .map_err(|e| e.to_string())
    }

    #[test]
    fn reads_the_table_and_preprocesses_the_trace() {
        let p = plan(
            "free = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"onoff\" }\n\
             trace = { kind = \"step\", at = [\"0s\", \"50s\"], rate = [\"1M\", \"9M\"] }",
        )
        .unwrap();
        let s = &p.points[0].scenario;
        let d = s.delegation.as_ref().unwrap();
        assert_eq!(d.period, qstp_proto::Duration::from_millis(500));
        // Eq. (2): 4 Stunts x a fair share of 10 Mbit/s / 5 flows = 8 Mbit/s at most (eq. 1
        // allows 1 + 50 x 1.168 Mbit/s by 50 s: 1460-byte segments, 100 ms).
        assert_eq!(d.trace.points()[1].rate, Rate::from_mbps(8));
        assert_eq!(s.delegation_changes.len(), 1);
        assert!(p
            .warnings()
            .iter()
            .any(|w| w.starts_with("delegation.trace:")));
        assert_eq!(s.spec(0).delegation.as_ref(), Some(d));
    }

    #[test]
    fn bad_tables_name_their_key() {
        let err = plan("free = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"pd\" }\ntrace = { kind = \"step\", at = [\"0s\"], rate = [\"1M\"] }").unwrap_err();
        assert!(err.contains("delegation.controller.kind"), "{err}");
        let err = plan("free = \"S\"\nstunts = \"F\"\ncontroller = { kind = \"onoff\" }\ntrace = { kind = \"step\", at = [\"0s\"], rate = [\"1M\"] }").unwrap_err();
        assert!(
            err.contains("delegation.free") && err.contains("4 flows"),
            "{err}"
        );
        let err = plan("free = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"pi\" }\ntrace = { kind = \"step\", at = [\"0s\"], rate = [\"1M\"] }").unwrap_err();
        assert!(err.contains("delegation.controller.gain"), "{err}");
        let err = plan("free = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"onoff\" }\ntrace = { file = \"missing.csv\" }").unwrap_err();
        assert!(err.contains("delegation.trace.file"), "{err}");
    }

    #[test]
    fn by_names_who_delegates() {
        let table = "free = \"F\"\nstunts = \"S\"\ncontroller = { kind = \"onoff\" }\n\
                     trace = { kind = \"step\", at = [\"0s\"], rate = [\"1M\"] }\n";
        let p = plan(table).unwrap();
        let by = |p: &super::super::Plan| p.points[0].scenario.delegation.as_ref().unwrap().by;
        assert_eq!(by(&p), qstp_sim::spec::SignalPath::Host);
        // Read, then checked: the groups here are TCP without ECN, which has no marks to move.
        let err = plan(&format!("{table}by = \"network\"")).unwrap_err();
        assert!(err.contains("ecn = true"), "{err}");
        let err = plan(&format!("{table}by = \"isp\"")).unwrap_err();
        assert!(
            err.contains("delegation.by") && err.contains("'isp'"),
            "{err}"
        );
    }
}
