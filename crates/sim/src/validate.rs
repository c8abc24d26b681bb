//! Checks on a [`SimSpec`] before anything is built, each naming the field at fault.
//!
//! This is the single home of the rules on a run's description: each component spec checks
//! itself ([`QueueSpec::validate`](qstp_dataplane::queue::QueueSpec::validate),
//! [`MarkerSpec::validate`], [`LossSpec::validate`], [`qstp_tcp::TcpOptions::validate`],
//! [`qstp_tcp::CcSpec::validate`], a graph's [`GraphSpec::validate`](crate::spec::GraphSpec::validate),
//! a source's `validate`), and [`validate`] calls each of them with the whole-run checks (a qstp group's
//! `qstp_proto::Config::validate` runs as the flow is built, on the configuration it runs with).
//! The lab calls the same functions and maps their typed errors to the scenario's keys.

use crate::error::{ComponentError, SimError};
use crate::ids::MAX_FLOWS;
use crate::spec::source::{CheckContext, Protocol};
use crate::spec::{LinkSpec, SimSpec, Topology};
use qstp_dataplane::loss::LossSpec;
use qstp_dataplane::marker::MarkerSpec;
use qstp_proto::wire::MAX_DATAGRAM;
use qstp_proto::Duration;
use std::collections::BTreeSet;

/// Most series entries (bins times flows) a run may record: 32 bytes each, so 256 MiB.
pub const MAX_SERIES_BINS: u64 = 8 << 20;

/// The number of bins of the recorded series.
pub fn bin_count(spec: &SimSpec) -> u64 {
    spec.duration
        .as_nanos()
        .div_ceil(spec.bin.as_nanos().max(1))
}

/// Check every field the simulator relies on.
pub fn validate(spec: &SimSpec) -> Result<(), SimError> {
    let invalid = |key: &str, reason: String| {
        Err(SimError::Invalid {
            key: key.to_string(),
            reason,
        })
    };
    if spec.duration.is_zero() {
        return invalid("duration", "must be positive".into());
    }
    if spec.bin.is_zero() || spec.bin > spec.duration {
        return invalid(
            "bin",
            "must be positive and no longer than the duration".into(),
        );
    }
    if spec.warmup >= spec.duration {
        return invalid("warmup", "must be shorter than the duration".into());
    }
    if spec.packet_size > MAX_DATAGRAM {
        return invalid(
            "packet_size",
            format!("{} bytes is more than {MAX_DATAGRAM}", spec.packet_size),
        );
    }
    let component =
        |component: String, error: ComponentError| Err(SimError::Component { component, error });
    // Every link: the dumbbell's bottleneck, or each direction of a graph's links.
    let links: Vec<(String, &LinkSpec)> = match &spec.topology {
        Topology::Dumbbell { bottleneck } => vec![("bottleneck".into(), bottleneck)],
        Topology::Graph(graph) => {
            graph.validate()?;
            let key = |name: &str| format!("link.{name}");
            graph
                .links
                .iter()
                .map(|l| (key(&l.name), &l.link))
                .collect()
        }
    };
    let group_names: Vec<&str> = spec.groups.iter().map(|g| g.name.as_str()).collect();
    for (key, link) in &links {
        if link.rate.is_zero() {
            return invalid(&format!("{key}.rate"), "must be positive".into());
        }
        if let Err(e) = link.queue.validate_on(link.rate, &group_names) {
            return component(format!("{key}.queue"), e.into());
        }
        if let Some(Err(e)) = link.loss.as_ref().map(LossSpec::validate) {
            return component(format!("{key}.loss"), e.into());
        }
        if let Some(atm) = &link.atm {
            if key != "bottleneck" {
                return invalid(
                    &format!("{key}.atm"),
                    "only the dumbbell's bottleneck can be an ATM trunk".into(),
                );
            }
            atm.validate(&format!("{key}.atm"), link.rate)
                .map_err(|e| SimError::Invalid {
                    key: e.key,
                    reason: e.reason,
                })?;
            if let Some(hosts) = &atm.hosts {
                let counts: Vec<usize> = hosts.iter().map(Vec::len).collect();
                let flows: Vec<usize> = spec.groups.iter().map(|g| g.flows as usize).collect();
                if counts != flows {
                    return invalid(
                        &format!("{key}.atm.hosts"),
                        format!(
                            "gives {counts:?} hosts per group; the groups have {flows:?} flows"
                        ),
                    );
                }
            }
        }
    }
    let atm = spec.bottleneck().is_some_and(|b| b.atm.is_some());
    if let Some(g) = spec.groups.iter().find(|g| g.flows == 0) {
        return invalid(
            &format!("groups[{}].flows", g.name),
            if atm {
                "a VP needs at least one VC (one per flow)".into()
            } else {
                "a group needs at least one flow".into()
            },
        );
    }
    if atm {
        // Each group is a VP; its marker, if any, is the VP's usage parameter control, which
        // polices cells (ITU-T I.371).
        if let Some(g) = spec.groups.iter().find(|g| {
            g.marker
                .as_ref()
                .is_some_and(|m| !matches!(m, MarkerSpec::Gcra(_)))
        }) {
            return invalid(
                &format!("groups[{}].marker", g.name),
                "on an ATM trunk a group's marker is its VP's UPC: kind = \"gcra\"".into(),
            );
        }
    }
    // One limit on flows, the simulator's address space, whatever their grouping.
    let flows: u64 = spec.groups.iter().map(|g| u64::from(g.flows)).sum();
    if flows > MAX_FLOWS {
        return Err(SimError::TooManyFlows {
            flows,
            limit: MAX_FLOWS,
        });
    }
    let bins = bin_count(spec);
    if bins.saturating_mul(flows.max(1)) > MAX_SERIES_BINS {
        return Err(SimError::TooManyBins {
            bins,
            flows,
            limit: MAX_SERIES_BINS,
        });
    }
    let mut names = BTreeSet::new();
    for group in &spec.groups {
        let key = |field: &str| format!("groups[{}].{field}", group.name);
        let packet_size = spec.packet_size_of(group);
        let size_key = match group.packet_size {
            Some(_) => key("packet_size"),
            None => "packet_size".to_string(),
        };
        if packet_size > MAX_DATAGRAM {
            return invalid(
                &size_key,
                format!("{packet_size} bytes is more than {MAX_DATAGRAM}"),
            );
        }
        if group.name.is_empty() {
            return invalid("groups.name", "a group needs a name".into());
        }
        if !names.insert(group.name.as_str()) {
            return invalid(&key("name"), "two groups have this name".into());
        }
        // The dumbbell's paths come from each group's rtt and access links; a graph's from its
        // links (and a group there has neither).
        if let Topology::Dumbbell { bottleneck } = &spec.topology {
            if group.rtt.is_zero() {
                return invalid(&key("rtt"), "must be positive".into());
            }
            let access_delay = group.access.map_or(Duration::ZERO, |a| a.delay);
            if group.rtt < (bottleneck.delay + access_delay.saturating_mul(2)).saturating_mul(2) {
                return Err(SimError::RttShorterThanPath {
                    group: group.name.clone(),
                    rtt: group.rtt,
                    bottleneck_delay: bottleneck.delay,
                    access_delay,
                });
            }
            if group.access.is_some_and(|a| a.rate.is_zero()) {
                return invalid(&key("access.rate"), "must be positive".into());
            }
        }
        if let Some(Err(e)) = group.marker.as_ref().map(MarkerSpec::validate) {
            return component(key("marker"), e.into());
        }
        if let Some(switching) = &group.onoff {
            if !matches!(group.protocol, Protocol::Tcp(_)) {
                return invalid(
                    &key("onoff"),
                    "switching applies to tcp groups (cbr and onoff sources have schedules)".into(),
                );
            }
            if switching.flows.is_some_and(|n| n > group.flows) {
                return invalid(
                    &key("onoff.flows"),
                    format!("the group has {} flows", group.flows),
                );
            }
            if switching.on.is_zero() || switching.off.is_zero() {
                return invalid(
                    &key("onoff"),
                    "the on and off periods must be positive".into(),
                );
            }
        }
        group.protocol.get().validate(&CheckContext {
            group,
            packet_size,
            size_key,
        })?;
    }
    if let Some(d) = &spec.delegation {
        d.validate(&spec.groups)?;
    }
    Ok(())
}
