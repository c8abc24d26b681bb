//! The network parts of a scenario: the bottleneck link, its queue, its loss model, edge markers.

use super::fields::{FieldResult, Fields};
use qstp_dataplane::atm::{AtmSpec, ProbeSpec, Service, DEFAULT_PROBE};
use qstp_dataplane::loss::LossSpec;
use qstp_dataplane::marker::MarkerSpec;
use qstp_dataplane::queue::QueueSpec;
use qstp_proto::Duration;
use qstp_sim::LinkSpec;

// Each queue, marker and loss model reads its own keys in its own file of qstp-sim (through
// `ParamTable`, which `Fields` implements), where its rules (`QueueSpec::validate`, ...) live too:
// this module only places the tables, and `super::parse` maps what the simulator refuses to the key.

/// Read `[bottleneck]`. Its queue may be sized from the flows that cross it (`limit = "auto"`, with `flows`).
pub(crate) fn link(
    mut f: Fields,
    flows: Option<&super::sizing::Crossing>,
) -> FieldResult<LinkSpec> {
    let rate = f.rate("rate")?;
    let delay = f.opt_duration("delay")?.unwrap_or(Duration::ZERO);
    if let Some(a) = f.opt_table("atm")? {
        let atm = atm(a)?;
        for key in ["queue", "loss"] {
            if f.has(key) {
                return Err(f.error(
                    key,
                    "an ATM trunk has its own buffers and loses only cells (see atm)",
                ));
            }
        }
        f.finish()?;
        return Ok(LinkSpec {
            rate,
            delay,
            // Not used: the port's buffers take its place.
            queue: QueueSpec::drop_tail(atm.buffer.max(1)),
            loss: None,
            atm: Some(atm),
        });
    }
    let mut q = f.table("queue")?;
    super::sizing::resolve_auto(&mut q, rate, flows)?;
    let queue = queue(q)?;
    let loss = f.opt_table("loss")?.map(loss).transpose()?;
    f.finish()?;
    Ok(LinkSpec {
        rate,
        delay,
        queue,
        loss,
        atm: None,
    })
}

/// Read an `atm` table: the cell-level trunk port (AF-over-ATM paper §3.2 gives the
/// defaults: 10000-cell buffers, SCD at 90%).
fn atm(mut f: Fields) -> FieldResult<AtmSpec> {
    let buffer = f.opt_u64("buffer")?.unwrap_or(10_000);
    // The service that reproduces the AF-over-ATM paper best (docs/atm.md).
    let name = f.opt_str("service")?.unwrap_or_else(|| "weighted".into());
    let weights = f.opt_array("weights")?;
    let service = match (name.as_str(), weights) {
        ("fifo", None) => Service::Fifo,
        ("shared", None) => Service::Shared,
        ("priority", None) => Service::Priority,
        ("weighted", None) => Service::Weighted { af: 1, df: 1 },
        ("weighted", Some(w)) => {
            let count = |v: &toml::Value| v.as_integer().and_then(|n| u32::try_from(n).ok());
            match &w[..] {
                [af, df] => match (count(af), count(df)) {
                    (Some(af), Some(df)) => Service::Weighted { af, df },
                    _ => return Err(f.error("weights", "two cell counts per round, [af, df]")),
                },
                _ => return Err(f.error("weights", "two cell counts per round, [af, df]")),
            }
        }
        ("fifo" | "shared" | "priority", Some(_)) => {
            return Err(f.error("weights", "only with service = \"weighted\""))
        }
        (other, _) => {
            return Err(f.error(
                "service",
                format!("'{other}' is not a service (use fifo, shared, priority or weighted)"),
            ))
        }
    };
    let probe = match f.peek("probe") {
        None => Some(DEFAULT_PROBE),
        Some(toml::Value::Boolean(on)) => {
            let on = *on;
            f.take("probe");
            on.then_some(DEFAULT_PROBE)
        }
        Some(_) => {
            let mut p = f.table("probe")?;
            let size = p
                .opt_u64("size")?
                .map_or(DEFAULT_PROBE.size, |s| s as usize);
            let interval = p
                .opt_duration("interval")?
                .unwrap_or(DEFAULT_PROBE.interval);
            p.finish()?;
            Some(ProbeSpec { size, interval })
        }
    };
    let spec = AtmSpec {
        buffer: usize::try_from(buffer).unwrap_or(usize::MAX),
        scd: f
            .opt_f64("scd")?
            .unwrap_or(qstp_dataplane::queue::DEFAULT_SCD_THRESHOLD),
        service,
        epd: f.opt_f64("epd")?,
        ppd: f.opt_bool("ppd")?.unwrap_or(false),
        shaping: f.opt_rate("shaping")?,
        hosts: match f.opt_array("hosts")? {
            None => None,
            Some(lists) => {
                let bad = || {
                    f.error(
                        "hosts",
                        "one list of host numbers per group, in group order",
                    )
                };
                let mut hosts = Vec::with_capacity(lists.len());
                for list in &lists {
                    let list = list.as_array().ok_or_else(bad)?;
                    let numbers: Option<Vec<u32>> = list
                        .iter()
                        .map(|v| v.as_integer().and_then(|n| u32::try_from(n).ok()))
                        .collect();
                    hosts.push(numbers.ok_or_else(bad)?);
                }
                Some(hosts)
            }
        },
        probe,
        line: f.opt_rate("line")?,
    };
    f.finish()?;
    Ok(spec)
}

/// Read a queue table: its `kind` (one of [`QueueSpec::KINDS`]) and that kind's keys.
pub(crate) fn queue(mut f: Fields) -> FieldResult<QueueSpec> {
    let spec = QueueSpec::read(&mut f)?;
    f.finish()?;
    Ok(spec)
}

/// Read a loss table: its `kind` (one of [`LossSpec::KINDS`]) and that kind's keys.
pub(crate) fn loss(mut f: Fields) -> FieldResult<LossSpec> {
    let spec = LossSpec::read(&mut f)?;
    f.finish()?;
    Ok(spec)
}

/// Read a marker table: its `kind` (one of [`MarkerSpec::KINDS`]) and that kind's keys.
pub(crate) fn marker(mut f: Fields) -> FieldResult<MarkerSpec> {
    let spec = MarkerSpec::read(&mut f)?;
    f.finish()?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_dataplane::loss::{BernoulliSpec, LossSpec};
    use qstp_dataplane::marker::{MarkerSpec, SrtcmSpec, TokenBucketSpec, TrtcmSpec, Tsw2Spec};
    use qstp_dataplane::queue::{CbqSpec, QueueSpec, RedParams, RioMode, RioSpec};
    use qstp_proto::Rate;

    fn read_link(text: &str) -> FieldResult<LinkSpec> {
        link(
            Fields::new("bottleneck", text.parse::<toml::Table>().unwrap()),
            None,
        )
    }

    #[test]
    fn reads_the_qstp_testbed_queue() {
        // QSTP paper §5.1: 50-packet queues, RIO (10, 20, 0.1) out and (20, 40, 0.02) in.
        let l = read_link(
            "rate = \"1000k\"\nqueue = { kind = \"rio\", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }",
        )
        .unwrap();
        assert_eq!(l.rate, Rate::from_kbps(1000));
        let QueueSpec::Rio(RioSpec {
            limit,
            in_profile,
            out_profile,
            weight,
            mode,
            middle,
            ..
        }) = l.queue
        else {
            panic!()
        };
        assert_eq!(
            (limit, weight, mode, middle),
            (50, 0.002, RioMode::Coupled, None)
        );
        assert_eq!(
            in_profile,
            RedParams {
                min_th: 20.0,
                max_th: 40.0,
                max_p: 0.02
            }
        );
        assert_eq!(
            out_profile,
            RedParams {
                min_th: 10.0,
                max_th: 20.0,
                max_p: 0.1
            }
        );
    }

    #[test]
    fn reads_cbq_classes_and_loss() {
        let l = read_link(
            "rate = \"1M\"\nloss = { kind = \"bernoulli\", p = 0.01 }\n[queue]\nkind = \"cbq\"\nclasses = [\
             { name = \"pipe\", rate = \"300k\", borrow = true, groups = [\"AB\"], limit = 50 },\
             { name = \"be\", rate = \"700k\", borrow = true, limit = 50 }]",
        )
        .unwrap();
        assert_eq!(l.loss, Some(LossSpec::Bernoulli(BernoulliSpec { p: 0.01 })));
        let QueueSpec::Cbq(CbqSpec { classes }) = l.queue else {
            panic!()
        };
        assert_eq!(classes[0].groups, vec!["AB".to_string()]);
        assert_eq!(classes[1].rate, Rate::from_kbps(700));

        let err = read_link("rate = \"1M\"\nqueue = { kind = \"droptail\", limit = 5 }\nloss = { kind = \"bernoulli\" }")
            .unwrap_err();
        assert_eq!(
            (err.key.as_str(), err.reason.as_str()),
            ("bottleneck.loss.p", "missing")
        );
    }

    #[test]
    fn reads_every_marker() {
        let m = |text: &str| marker(Fields::new("m", text.parse::<toml::Table>().unwrap()));
        assert_eq!(
            m("kind = \"token-bucket\"\nrate = \"500k\"\nbucket = 10000").unwrap(),
            MarkerSpec::TokenBucket(TokenBucketSpec {
                rate: Rate::from_kbps(500),
                bucket: 10_000
            })
        );
        assert!(matches!(
            m("kind = \"srtcm\"\ncir = \"1M\"\ncbs = 3000\nebs = 3000").unwrap(),
            MarkerSpec::Srtcm(SrtcmSpec {
                mode: qstp_dataplane::marker::ColorMode::Blind,
                ..
            })
        ));
        assert!(matches!(
            m("kind = \"srtcm\"\ncir = \"1M\"\ncbs = 3000\nebs = 0\nmode = \"aware\"").unwrap(),
            MarkerSpec::Srtcm(SrtcmSpec {
                mode: qstp_dataplane::marker::ColorMode::Aware,
                ..
            })
        ));
        assert_eq!(
            m("kind = \"trtcm\"\ncir = \"1M\"\ncbs = 1\npir = \"2M\"\npbs = 1\nmode = \"deaf\"")
                .unwrap_err()
                .key,
            "m.mode"
        );
        assert!(matches!(
            m("kind = \"trtcm\"\ncir = \"1M\"\ncbs = 3000\npir = \"2M\"\npbs = 3000").unwrap(),
            MarkerSpec::Trtcm(TrtcmSpec { .. })
        ));
        assert_eq!(
            m("kind = \"tsw2\"\ncir = \"1M\"").unwrap(),
            MarkerSpec::Tsw2(Tsw2Spec {
                cir: Rate::from_mbps(1),
                window: Duration::from_secs(1)
            })
        );
        assert_eq!(m("kind = \"tsw3\"\ncir = \"2M\"").unwrap_err().key, "m.pir");
        assert_eq!(
            m("kind = \"token-bucket\"\nrate = \"-5k\"\nbucket = 1")
                .unwrap_err()
                .key,
            "m.rate"
        );
    }

    #[test]
    fn every_registered_kind_is_read_by_its_name_and_unknown_ones_are_listed() {
        let q = |text: &str| queue(Fields::new("q", text.parse::<toml::Table>().unwrap()));
        let err = q("kind = \"fifo\"\nlimit = 5").unwrap_err();
        assert_eq!(
            (err.key.as_str(), err.reason.as_str()),
            (
                "q.kind",
                "'fifo' is not a queue (use droptail, red, rio, cbq, scd, codel, pie or fq-codel)"
            )
        );
        let err = loss(Fields::new(
            "l",
            "kind = \"burst\"".parse::<toml::Table>().unwrap(),
        ))
        .unwrap_err();
        assert_eq!(
            err.reason,
            "'burst' is not a loss model (use bernoulli or gilbert-elliott)"
        );
        let err = marker(Fields::new(
            "m",
            "kind = \"gcrb\"".parse::<toml::Table>().unwrap(),
        ))
        .unwrap_err();
        assert_eq!(
            err.reason,
            "'gcrb' is not a marker (use token-bucket, srtcm, trtcm, tsw2, tsw3 or gcra)"
        );
        // The ATM policer (issue 13's UPC): SBR3 from the KDD testbed's numbers.
        let m = |text: &str| marker(Fields::new("m", text.parse::<toml::Table>().unwrap()));
        let spec = m("kind = \"gcra\"\npcr = \"149.76M\"\nscr = \"18.72M\"\nmbs = 8256").unwrap();
        assert_eq!(spec.kind(), "gcra");
        spec.validate().unwrap();
        let err = m("kind = \"gcra\"\npcr = \"149.76M\"\nscr = \"18.72M\"").unwrap_err();
        assert_eq!(err.key, "m.mbs");
        let spec = m("kind = \"gcra\"\npcr = \"10M\"\nscr = \"20M\"\nmbs = 5").unwrap();
        assert_eq!(spec.validate().unwrap_err().field(), "scr");
        // A key the kind does not read is refused, with the nearest it knows.
        let err = q("kind = \"droptail\"\nlimit = 5\nlimt = 6").unwrap_err();
        assert_eq!(
            (err.key.as_str(), err.reason.as_str()),
            ("q.limt", "unknown key (did you mean limit?)")
        );
        // Each registry entry's name reads back into a spec of that kind.
        let bodies = [
            ("droptail", "limit = 5"),
            ("red", "limit = 50\ncurve = [5, 15, 0.1]"),
            (
                "rio",
                "limit = 50\nin = [20, 40, 0.02]\nout = [10, 20, 0.1]\nmode = \"rio-d\"",
            ),
            (
                "cbq",
                "classes = [{ name = \"a\", rate = \"1M\", limit = 5 }]",
            ),
            ("scd", "limit = 10000\nthreshold = 0.9"),
            ("codel", "limit = 1000\ntarget = \"5ms\"\ninterval = \"100ms\"\necn = true"),
            (
                "pie",
                "limit = 1000\ntarget = \"15ms\"\ntupdate = \"15ms\"\nalpha = 0.125\nbeta = 1.25\nmax_burst = \"150ms\"",
            ),
            ("fq-codel", "limit = 10240\nflows = 1024\nquantum = 1514"),
        ];
        assert_eq!(bodies.len(), QueueSpec::KINDS.len());
        for (kind, body) in bodies {
            let spec = q(&format!("kind = \"{kind}\"\n{body}")).unwrap();
            assert_eq!(spec.kind(), kind);
            spec.validate().unwrap();
        }
        let err = q("kind = \"rio\"\nlimit = 50\nin = [20, 40, 0.02]\nout = [10, 20, 0.1]\nmode = \"rio-x\"")
            .unwrap_err();
        assert_eq!(
            (err.key.as_str(), err.reason.as_str()),
            ("q.mode", "'rio-x' is not a RIO mode (rio-c, rio-d)")
        );
        let err = q(
            "kind = \"cbq\"\nclasses = [{ name = \"a\", rate = \"1M\", limit = 5, groups = [1] }]",
        )
        .unwrap_err();
        assert_eq!(err.key, "q.classes.a.groups");
    }
}
