//! Each flow's two ends, by the group's protocol: kernel TCP ([`crate::hosts`]), qstp-net
//! ([`crate::qstp`]) or UDP sources ([`crate::udp`]).

use crate::hosts::{self, SenderOutput, Timing};
use crate::setup::HostPair;
use crate::{qstp, udp, TestbedError};
use qstp_proto::{Duration, Rate, Time};
use qstp_sim::{CbrSpec, GroupSpec, OnOffSpec, Protocol, QstpSpec, SimSpec};
use std::net::SocketAddrV4;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;

/// A running sink: it yields the bytes its application received per bin.
pub type Sink = JoinHandle<Result<Vec<u64>, TestbedError>>;

/// Start the sink of flow `pair` of `group`; returns once it listens.
pub fn spawn_sink(
    spec: &SimSpec,
    group: &GroupSpec,
    pair: &HostPair,
    timing: Timing,
    stop: &Arc<AtomicBool>,
) -> Result<Sink, TestbedError> {
    let ns = pair.receiver_ns.clone();
    match &group.protocol {
        Protocol::Cbr(_) | Protocol::OnOff(_) => {
            let addr = SocketAddrV4::new(pair.receiver, udp::UDP_PORT);
            udp::spawn_sink(ns, addr, timing, stop.clone())
        }
        Protocol::Qstp(QstpSpec { config, .. }) => {
            let addr = SocketAddrV4::new(pair.receiver, qstp::QSTP_PORT);
            let config = qstp::flow_config(config, spec.packet_size_of(group))?;
            qstp::spawn_sink(ns, addr, config, timing, stop.clone())
        }
        Protocol::Tcp(_) => {
            let addr = SocketAddrV4::new(pair.receiver, hosts::TCP_PORT);
            hosts::spawn_sink(ns, addr, timing, stop.clone())
        }
        other => Err(not_on_testbed(&group.name, other)),
    }
}

/// A running source: kernel TCP or qstp (with their statistics), or UDP (datagrams sent).
pub enum Sender {
    /// A kernel TCP or a qstp-net sender.
    Stats(JoinHandle<Result<SenderOutput, TestbedError>>),
    /// A UDP source.
    Udp(JoinHandle<Result<u64, TestbedError>>),
}

/// What starting a sender needs beyond its group and hosts.
pub struct SenderStart {
    /// When it starts.
    pub start: Time,
    /// The kernel congestion control of a TCP group.
    pub congestion: Option<String>,
    /// The flow's random stream (on/off periods).
    pub rng: rand_chacha::ChaCha8Rng,
    /// The DSCP its packets carry (`None`: the sockets' default, and qstp-net's own choice).
    pub dscp: Option<u8>,
}

/// Start the sender of flow `pair` of `group`.
pub fn spawn_sender(
    spec: &SimSpec,
    group: &GroupSpec,
    pair: &HostPair,
    how: SenderStart,
    timing: Timing,
    stop: &Arc<AtomicBool>,
) -> Result<Sender, TestbedError> {
    let ns = pair.sender_ns.clone();
    let size = spec.packet_size_of(group);
    let stop = stop.clone();
    let start = how.start;
    let dscp = how.dscp;
    let udp = |schedule: &[(Duration, Rate)], on_off: Option<udp::OnOff>| {
        let to = SocketAddrV4::new(pair.receiver, udp::UDP_PORT);
        let source = udp::Source {
            schedule: schedule.to_vec(),
            size,
            on_off,
            dscp,
        };
        Sender::Udp(udp::spawn_source(
            ns.clone(),
            to,
            source,
            start,
            timing,
            stop.clone(),
        ))
    };
    Ok(match &group.protocol {
        Protocol::Cbr(CbrSpec { schedule }) => udp(schedule, None),
        Protocol::OnOff(OnOffSpec {
            schedule,
            mean_on,
            mean_off,
        }) => {
            let on_off = udp::OnOff {
                mean_on: *mean_on,
                mean_off: *mean_off,
                rng: how.rng,
            };
            udp(schedule, Some(on_off))
        }
        Protocol::Qstp(QstpSpec { config, .. }) => {
            let to = SocketAddrV4::new(pair.receiver, qstp::QSTP_PORT);
            let config = qstp::flow_config(config, size)?;
            Sender::Stats(qstp::spawn_sender(
                ns, to, config, dscp, start, timing, stop,
            ))
        }
        Protocol::Tcp(_) => {
            let to = SocketAddrV4::new(pair.receiver, hosts::TCP_PORT);
            let cc = how.congestion.unwrap_or_else(|| "reno".into());
            Sender::Stats(hosts::spawn_sender(ns, to, cc, dscp, start, timing, stop))
        }
        other => return Err(not_on_testbed(&group.name, other)),
    })
}

fn panicked(what: &str) -> TestbedError {
    TestbedError::Host {
        netns: what.into(),
        message: "its thread panicked".into(),
    }
}

/// Wait for a host thread and hand back what it returned.
pub fn join<T>(h: JoinHandle<Result<T, TestbedError>>) -> Result<T, TestbedError> {
    h.join().map_err(|_| panicked("host"))?
}

impl Sender {
    /// Wait for the sender and hand back what it measured.
    pub fn join(self) -> Result<SenderOutput, TestbedError> {
        match self {
            Sender::Stats(h) => join(h),
            Sender::Udp(h) => join(h).map(|sent| SenderOutput {
                packets_sent: sent,
                ..SenderOutput::default()
            }),
        }
    }
}

/// The refusal of a group whose source kind has no real counterpart here.
pub(crate) fn not_on_testbed(group: &str, protocol: &Protocol) -> TestbedError {
    TestbedError::Unsupported(format!(
        "group '{group}': protocol '{}' does not run on the testbed (tcp, qstp, tfrc-sack, tfrc, gtfrc, cbr and onoff do)",
        protocol.get().label()
    ))
}
