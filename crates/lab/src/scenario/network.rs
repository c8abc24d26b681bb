//! The network parts of a scenario: the bottleneck link, its queue, its loss model, edge markers.

use super::fields::{number, FieldResult, Fields};
use qstp_proto::Duration;
use qstp_sim::{CbqClass, LinkSpec, LossSpec, MarkerSpec, QueueSpec, RedParams, RioMode};
use toml::Value;

/// Weight of the average-queue EWMA when the file gives none.
const DEFAULT_WEIGHT: f64 = qstp_sim::DEFAULT_QUEUE_WEIGHT;

// The rules on these values (ranges, curves, classes, probabilities, marker rates) live with the
// spec types in qstp-sim (`QueueSpec::validate`, `MarkerSpec::validate`, ...): this module only
// reads the document, and `super::parse` maps what the simulator refuses to the key.

/// Read `[bottleneck]`.
pub(crate) fn link(mut f: Fields) -> FieldResult<LinkSpec> {
    let rate = f.rate("rate")?;
    let delay = f.opt_duration("delay")?.unwrap_or(Duration::ZERO);
    let queue = queue(f.table("queue")?)?;
    let loss = f.opt_table("loss")?.map(loss).transpose()?;
    f.finish()?;
    Ok(LinkSpec {
        rate,
        delay,
        queue,
        loss,
    })
}

fn limit(f: &mut Fields) -> FieldResult<usize> {
    let limit = f
        .opt_u64("limit")?
        .ok_or_else(|| f.error("limit", "missing (queue capacity in packets)"))?;
    usize::try_from(limit).map_err(|_| f.error("limit", format!("{limit} is too large")))
}

fn weight(f: &mut Fields) -> FieldResult<f64> {
    Ok(f.opt_f64("weight")?.unwrap_or(DEFAULT_WEIGHT))
}

/// A RED curve written `[min_th, max_th, max_p]`.
fn curve(f: &mut Fields, key: &str) -> FieldResult<Option<RedParams>> {
    let Some(items) = f.opt_array(key)? else {
        return Ok(None);
    };
    if items.len() != 3 {
        return Err(f.error(
            key,
            format!(
                "expected [min_th, max_th, max_p], found {} values",
                items.len()
            ),
        ));
    }
    let mut v = [0.0; 3];
    for (slot, item) in v.iter_mut().zip(&items) {
        *slot = number(item).map_err(|reason| f.error(key, reason))?;
    }
    let [min_th, max_th, max_p] = v;
    Ok(Some(RedParams {
        min_th,
        max_th,
        max_p,
    }))
}

fn required_curve(f: &mut Fields, key: &str) -> FieldResult<RedParams> {
    curve(f, key)?.ok_or_else(|| f.error(key, "missing ([min_th, max_th, max_p])"))
}

/// Read a queue table: `kind` = droptail | red | rio | cbq.
pub(crate) fn queue(mut f: Fields) -> FieldResult<QueueSpec> {
    let kind = f.str("kind")?;
    let spec = match kind.as_str() {
        "droptail" => QueueSpec::DropTail {
            limit: limit(&mut f)?,
        },
        "red" => {
            let limit = limit(&mut f)?;
            let params = required_curve(&mut f, "curve")?;
            QueueSpec::Red {
                limit,
                params,
                weight: weight(&mut f)?,
            }
        }
        "rio" => {
            let limit = limit(&mut f)?;
            let in_profile = required_curve(&mut f, "in")?;
            let out_profile = required_curve(&mut f, "out")?;
            let middle = curve(&mut f, "middle")?;
            let weight = weight(&mut f)?;
            let mode = match f.opt_str("mode")?.as_deref() {
                None | Some("rio-c") => RioMode::Coupled,
                Some("rio-d") => RioMode::Decoupled,
                Some(other) => {
                    return Err(f.error("mode", format!("'{other}' is not rio-c or rio-d")))
                }
            };
            QueueSpec::Rio {
                limit,
                in_profile,
                out_profile,
                middle,
                weight,
                mode,
            }
        }
        "cbq" => QueueSpec::Cbq {
            classes: cbq_classes(&mut f)?,
        },
        other => {
            return Err(f.error(
                "kind",
                format!("'{other}' is not a queue (use droptail, red, rio or cbq)"),
            ));
        }
    };
    f.finish()?;
    Ok(spec)
}

/// Read `classes = [{ name, rate, borrow, groups, limit }, ...]` (QSTP paper §5.4).
fn cbq_classes(f: &mut Fields) -> FieldResult<Vec<CbqClass>> {
    let items = f
        .opt_array("classes")?
        .ok_or_else(|| f.error("classes", "missing (a CBQ queue needs classes)"))?;
    let mut classes: Vec<CbqClass> = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::Table(t) = item else {
            return Err(f.error("classes", format!("class {i} is not a table")));
        };
        let name = t
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| i.to_string());
        let mut c = Fields::new(format!("{}.{name}", f.key("classes")), t);
        let name = c.str("name")?;
        let rate = c.rate("rate")?;
        let borrow = c.opt_bool("borrow")?.unwrap_or(false);
        let mut groups = Vec::new();
        for g in c.opt_array("groups")?.unwrap_or_default() {
            match g {
                Value::String(s) => groups.push(s),
                other => {
                    return Err(c.error(
                        "groups",
                        format!("expected group names, found {}", other.type_str()),
                    ))
                }
            }
        }
        let limit = limit(&mut c)?;
        c.finish()?;
        classes.push(CbqClass {
            name,
            rate,
            borrow,
            groups,
            limit,
        });
    }
    Ok(classes)
}

fn probability(f: &mut Fields, key: &str, default: Option<f64>) -> FieldResult<f64> {
    match (f.opt_f64(key)?, default) {
        (Some(p), _) => Ok(p),
        (None, Some(d)) => Ok(d),
        (None, None) => Err(f.error(key, "missing")),
    }
}

/// Read a loss table: `kind` = bernoulli | gilbert-elliott.
pub(crate) fn loss(mut f: Fields) -> FieldResult<LossSpec> {
    let kind = f.str("kind")?;
    let spec = match kind.as_str() {
        "bernoulli" => LossSpec::Bernoulli {
            p: probability(&mut f, "p", None)?,
        },
        "gilbert-elliott" => LossSpec::GilbertElliott {
            p_good_to_bad: probability(&mut f, "p_good_to_bad", None)?,
            p_bad_to_good: probability(&mut f, "p_bad_to_good", None)?,
            loss_good: probability(&mut f, "loss_good", Some(0.0))?,
            loss_bad: probability(&mut f, "loss_bad", Some(1.0))?,
        },
        other => {
            return Err(f.error(
                "kind",
                format!("'{other}' is not a loss model (use bernoulli or gilbert-elliott)"),
            ));
        }
    };
    f.finish()?;
    Ok(spec)
}

fn bytes(f: &mut Fields, key: &str) -> FieldResult<u64> {
    f.opt_u64(key)?
        .ok_or_else(|| f.error(key, "missing (bytes)"))
}

/// Read a marker table: `kind` = token-bucket | srtcm | trtcm | tsw2 | tsw3.
pub(crate) fn marker(mut f: Fields) -> FieldResult<MarkerSpec> {
    let kind = f.str("kind")?;
    let spec = match kind.as_str() {
        "token-bucket" => MarkerSpec::TokenBucket {
            rate: f.rate("rate")?,
            bucket: bytes(&mut f, "bucket")?,
        },
        // RFC 2697 §2: CIR, CBS and EBS.
        "srtcm" => MarkerSpec::Srtcm {
            cir: f.rate("cir")?,
            cbs: bytes(&mut f, "cbs")?,
            ebs: bytes(&mut f, "ebs")?,
            mode: color_mode(&mut f)?,
        },
        "trtcm" => MarkerSpec::Trtcm {
            cir: f.rate("cir")?,
            cbs: bytes(&mut f, "cbs")?,
            pir: f.rate("pir")?,
            pbs: bytes(&mut f, "pbs")?,
            mode: color_mode(&mut f)?,
        },
        "tsw2" | "tsw3" => {
            let cir = f.rate("cir")?;
            let pir = if kind == "tsw3" {
                Some(f.rate("pir")?)
            } else {
                None
            };
            // RFC 2859 §2.1 suggests a window on the order of a second for TCP traffic.
            let window = f.opt_duration("window")?.unwrap_or(Duration::from_secs(1));
            match pir {
                None => MarkerSpec::Tsw2 { cir, window },
                Some(pir) => MarkerSpec::Tsw3 { cir, pir, window },
            }
        }
        other => {
            return Err(f.error(
                "kind",
                format!("'{other}' is not a marker (use token-bucket, srtcm, trtcm, tsw2 or tsw3)"),
            ));
        }
    };
    f.finish()?;
    Ok(spec)
}

/// `mode = "blind"` (the default) or `"aware"`: whether a three-colour marker meters a packet
/// by the colour it arrives with (RFC 2697 §3, RFC 2698 §3).
fn color_mode(f: &mut Fields) -> FieldResult<qstp_sim::ColorMode> {
    match f.opt_str("mode")?.as_deref() {
        None | Some("blind") => Ok(qstp_sim::ColorMode::Blind),
        Some("aware") => Ok(qstp_sim::ColorMode::Aware),
        Some(other) => Err(f.error(
            "mode",
            format!("'{other}' is not a colour mode (blind, aware)"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::Rate;

    fn read_link(text: &str) -> FieldResult<LinkSpec> {
        link(Fields::new(
            "bottleneck",
            text.parse::<toml::Table>().unwrap(),
        ))
    }

    #[test]
    fn reads_the_qstp_testbed_queue() {
        // QSTP paper §5.1: 50-packet queues, RIO (10, 20, 0.1) out and (20, 40, 0.02) in.
        let l = read_link(
            "rate = \"1000k\"\nqueue = { kind = \"rio\", limit = 50, in = [20, 40, 0.02], out = [10, 20, 0.1] }",
        )
        .unwrap();
        assert_eq!(l.rate, Rate::from_kbps(1000));
        let QueueSpec::Rio {
            limit,
            in_profile,
            out_profile,
            weight,
            mode,
            middle,
        } = l.queue
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
        assert_eq!(l.loss, Some(LossSpec::Bernoulli { p: 0.01 }));
        let QueueSpec::Cbq { classes } = l.queue else {
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
            MarkerSpec::TokenBucket {
                rate: Rate::from_kbps(500),
                bucket: 10_000
            }
        );
        assert!(matches!(
            m("kind = \"srtcm\"\ncir = \"1M\"\ncbs = 3000\nebs = 3000").unwrap(),
            MarkerSpec::Srtcm {
                mode: qstp_sim::ColorMode::Blind,
                ..
            }
        ));
        assert!(matches!(
            m("kind = \"srtcm\"\ncir = \"1M\"\ncbs = 3000\nebs = 0\nmode = \"aware\"").unwrap(),
            MarkerSpec::Srtcm {
                mode: qstp_sim::ColorMode::Aware,
                ..
            }
        ));
        assert_eq!(
            m("kind = \"trtcm\"\ncir = \"1M\"\ncbs = 1\npir = \"2M\"\npbs = 1\nmode = \"deaf\"")
                .unwrap_err()
                .key,
            "m.mode"
        );
        assert!(matches!(
            m("kind = \"trtcm\"\ncir = \"1M\"\ncbs = 3000\npir = \"2M\"\npbs = 3000").unwrap(),
            MarkerSpec::Trtcm { .. }
        ));
        assert_eq!(
            m("kind = \"tsw2\"\ncir = \"1M\"").unwrap(),
            MarkerSpec::Tsw2 {
                cir: Rate::from_mbps(1),
                window: Duration::from_secs(1)
            }
        );
        assert_eq!(m("kind = \"tsw3\"\ncir = \"2M\"").unwrap_err().key, "m.pir");
        assert_eq!(
            m("kind = \"token-bucket\"\nrate = \"-5k\"\nbucket = 1")
                .unwrap_err()
                .key,
            "m.rate"
        );
    }
}
