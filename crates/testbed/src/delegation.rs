//! A scenario's `[delegation]` table on the testbed: the Free and its Stunts are connections of
//! one qstp-net endpoint (`qstp_net::Endpoint::group`), as an application holding a live stream
//! and its other transfers would open them (Free & Stunts paper §II: the Stunts are connections
//! of the Free's host).
//!
//! Hosts. The members keep the addresses the router knows flows by (flow F of group G sends from
//! 10.1.G.F to 10.2.G.F, [`crate::setup::addresses`]), so the router, its classification and its
//! per-flow counters are those of any other run: the group's sender namespace holds every
//! member's source address on one veth, and a route per receiver with that member's address as
//! its preferred source makes the endpoint's single UDP socket send each connection's datagrams
//! from its own address. Each member's receiver is a host of its own, as for any flow.
//!
//! The sender. One thread in that namespace runs the endpoint: it connects every member at its
//! start, forms the group once all are up (`Endpoint::group` with the scenario's controller,
//! period and reverse delegation, and the trace's target at that instant), writes saturated byte
//! streams on every member, follows the trace with `Group::set_target`, samples each member's
//! statistics per bin (as a plain qstp sender, [`crate::qstp`]) and, on the lab's grid of control
//! instants (k x period from the run's start), the Free's throughput from its acknowledged bytes
//! beside the trace's target: the lab's `DelegationRecord`, from which the lab computes V+, V-,
//! V* and delta the same way for both.
//!
//! TCP groups are refused: kernel TCP exposes no hook to leave a loss's window reduction to
//! another connection.

use crate::hosts::{SenderOutput, Timing};
use crate::ns::{self, Namespaces};
use crate::qstp::{self, Sampler};
use crate::setup::{self, HostPair};
use crate::TestbedError;
use qstp_net::{Config, Connection, Endpoint, EndpointOptions, GroupOptions, GroupStats};
use qstp_proto::delegation::Trace;
use qstp_proto::{Duration, Rate, Time};
use qstp_sim::output::DelegationRecord;
use qstp_sim::spec::{DelegationSpec, SignalPath};
use qstp_sim::{Protocol, SimSpec};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use tokio::io::AsyncWriteExt;

/// Most control instants a run records (the lab's bound, `qstp_sim::hook::delegation`).
const MAX_SAMPLES: u64 = 1 << 20;
/// Bytes per write call.
const CHUNK: usize = 64 * 1024;
/// How long a write waits before the writer looks at the clock and the stop flag again.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// The groups of a run's `[delegation]` table, by index in the scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Members {
    /// The Free's group (one flow).
    pub free: usize,
    /// The Stunts' group.
    pub stunts: usize,
}

impl Members {
    /// Whether group `g` is the Free's or the Stunts'.
    pub fn contains(&self, g: usize) -> bool {
        g == self.free || g == self.stunts
    }
}

/// Check `spec`'s `[delegation]` table for the testbed: the lab's own checks, and qstp groups
/// only. `None` when the run has no delegation.
pub fn check(spec: &SimSpec) -> Result<Option<Members>, TestbedError> {
    let Some(d) = &spec.delegation else {
        return Ok(None);
    };
    let (free, stunts) = d
        .validate(&spec.groups)
        .map_err(|e| TestbedError::Unsupported(e.to_string()))?;
    if d.by == SignalPath::Network {
        // The lab's bottleneck moves ECN marks between flows; the router here does not.
        return Err(TestbedError::Unsupported(
            "[delegation] by = \"network\" (the bottleneck moving ECN marks from the Free to its \
             Stunts, Free & Stunts paper footnote 2) runs in the lab only (qstp run): the \
             testbed's router does not move marks"
                .into(),
        ));
    }
    if let Protocol::Tcp(_) = spec.groups[free].protocol {
        // Kernel TCP exposes no hook to defer a connection's window reduction.
        return Err(TestbedError::Unsupported(format!(
            "[delegation] of tcp groups ('{}' and '{}') is not supported on the testbed: kernel \
             TCP cannot leave a loss's window reduction to another connection (qstp groups can: \
             protocol = \"qstp\" or \"tfrc-sack\")",
            d.free, d.stunts
        )));
    }
    Ok(Some(Members { free, stunts }))
}

/// The qstp-net group options of `d`: the same controller, control period and reverse delegation
/// as the lab's host of the group.
pub fn group_options(d: &DelegationSpec) -> GroupOptions {
    GroupOptions {
        controller: d.controller,
        period: d.period,
        reverse: d.reverse,
    }
}

/// The receiver host of member flow `flow` of group `group` (pair `index` of the run), joined to
/// the router `r`; the pair's sender namespace is left empty until [`sender_host`] makes it.
pub fn receiver_host(
    guard: &mut Namespaces,
    r: &str,
    index: usize,
    (group, flow): (usize, usize),
    mtu: usize,
    sysctl: &[String],
) -> Result<HostPair, TestbedError> {
    let (sender, receiver) = setup::addresses(group, flow);
    let host = guard.create(&format!("d{index}"))?;
    join(r, &host, &format!("d{index}"), &[receiver], mtu, sysctl)?;
    ns::ip(&[
        "-n",
        &host,
        "route",
        "add",
        "default",
        "via",
        setup::GATEWAY,
        "dev",
        "eth0",
    ])?;
    Ok(HostPair {
        sender_ns: String::new(),
        receiver_ns: host,
        sender,
        receiver,
    })
}

/// The group's sender host: one namespace holding every member's source address (`pairs`, the
/// Free first), with a route to each member's receiver whose preferred source is that member's
/// address (so one unbound UDP socket sends each connection's datagrams from its own address).
/// Fills in the pairs' sender namespace.
pub fn sender_host(
    guard: &mut Namespaces,
    r: &str,
    index: usize,
    pairs: &mut [&mut HostPair],
    mtu: usize,
    sysctl: &[String],
) -> Result<(), TestbedError> {
    let host = guard.create(&format!("s{index}"))?;
    let addrs: Vec<Ipv4Addr> = pairs.iter().map(|p| p.sender).collect();
    join(r, &host, &format!("s{index}"), &addrs, mtu, sysctl)?;
    for p in pairs.iter_mut() {
        let (to, from) = (p.receiver.to_string(), p.sender.to_string());
        ns::ip(&[
            "-n",
            &host,
            "route",
            "add",
            &to,
            "via",
            setup::GATEWAY,
            "dev",
            "eth0",
            "src",
            &from,
        ])?;
        p.sender_ns = host.clone();
    }
    Ok(())
}

/// Join namespace `host` to the router `r` over a veth pair (`dev` in the router, `eth0` in the
/// host) carrying `addrs`, the router's end holding the gateway address, as
/// [`setup::hosts`] does; the host's sysctls are the scenario's (its qstp-net members use no TCP).
fn join(
    r: &str,
    host: &str,
    dev: &str,
    addrs: &[Ipv4Addr],
    mtu: usize,
    sysctl: &[String],
) -> Result<(), TestbedError> {
    let mut settings = vec![
        "net.ipv6.conf.all.disable_ipv6=1".to_string(),
        "net.ipv6.conf.default.disable_ipv6=1".to_string(),
    ];
    settings.extend(sysctl.iter().cloned());
    ns::sysctl(host, &settings)?;
    let mtu = mtu.to_string();
    ns::ip(&[
        "-n", r, "link", "add", dev, "type", "veth", "peer", "name", "eth0", "netns", host,
    ])?;
    let gateway = format!("{}/32", setup::GATEWAY);
    ns::ip(&["-n", r, "addr", "add", &gateway, "dev", dev])?;
    ns::ip(&["-n", r, "link", "set", dev, "mtu", &mtu, "up"])?;
    for a in addrs {
        let a = a.to_string();
        ns::ip(&[
            "-n",
            r,
            "route",
            "add",
            &a,
            "dev",
            dev,
            "table",
            setup::TABLE,
        ])?;
        ns::ip(&["-n", host, "addr", "add", &format!("{a}/32"), "dev", "eth0"])?;
    }
    ns::ip(&["-n", host, "link", "set", "eth0", "mtu", &mtu, "up"])?;
    ns::ip(&["-n", host, "route", "add", setup::GATEWAY, "dev", "eth0"])?;
    Ok(())
}

/// One member of the group: where its receiver listens, its configuration and its start.
#[derive(Debug, Clone)]
pub struct Member {
    /// Its receiver's address and port.
    pub to: SocketAddrV4,
    /// Its configuration ([`qstp::flow_config`] of its group's).
    pub config: Config,
    /// When it connects.
    pub start: Time,
}

/// The group's sender: its namespace, members (the Free first), marking and decisions.
#[derive(Debug, Clone)]
pub struct GroupSender {
    /// The sender namespace ([`sender_host`]).
    pub netns: String,
    /// The Free, then the Stunts.
    pub members: Vec<Member>,
    /// The DSCP of every member's datagrams (`None`: qstp-net's choice).
    pub dscp: Option<u8>,
    /// The target the Free follows.
    pub trace: Trace,
    /// The controller, period and reverse delegation.
    pub options: GroupOptions,
}

/// What a group run gives back.
#[derive(Debug, Clone, Default)]
pub struct GroupOutput {
    /// Per member (the Free first), its statistics as any qstp sender's.
    pub senders: Vec<SenderOutput>,
    /// The Free's throughput and target per control instant, and the signals settled.
    pub record: DelegationRecord,
    /// What the group reported and when it formed.
    pub report: DelegationReport,
}

/// What the group did on the testbed, for summary.json beside the lab's metrics.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct DelegationReport {
    /// The Free's group.
    pub free: String,
    /// The Stunts' group.
    pub stunts: String,
    /// Stunts in the group.
    pub members_stunts: usize,
    /// When the group formed (every member connected), s from the run's start; `None`: never.
    pub formed_at_s: Option<f64>,
    /// The controller's last delegation fraction.
    pub fraction: f64,
    /// Loss events of the Free its Stunts took.
    pub delegated: u64,
    /// Loss events of the Free it reacted to itself.
    pub reacted: u64,
    /// Loss events of Stunts the Free took (reverse delegation).
    pub taken_by_free: u64,
}

fn host_error(netns: &str, what: &str, e: impl std::fmt::Display) -> TestbedError {
    TestbedError::Host {
        netns: netns.to_string(),
        message: format!("{what}: {e}"),
    }
}

/// A wall-clock wait until `t` of the run's clock (none if it has passed).
fn until(timing: &Timing, t: Time) -> std::time::Duration {
    std::time::Duration::from_nanos(t.saturating_since(timing.clock.now()).as_nanos())
}

/// The Free's throughput over the lab's control periods: sample k covers
/// (k x period, (k + 1) x period] of the run's clock, as `qstp_sim::hook::delegation` records it.
#[derive(Debug)]
struct ControlSamples {
    period: Duration,
    next: Time,
    acked: u64,
    capacity: usize,
    samples: Vec<(f64, f64)>,
}

impl ControlSamples {
    fn new(period: Duration, duration: Duration) -> Self {
        let capacity = (duration.as_nanos() / period.as_nanos().max(1)).min(MAX_SAMPLES) as usize;
        ControlSamples {
            period,
            next: Time::ZERO + period,
            acked: 0,
            capacity,
            samples: Vec::with_capacity(capacity),
        }
    }

    /// Record the control instants due by `now`, the Free having `acked` bytes acknowledged;
    /// instants missed while the thread was held each get the bytes of their own period only
    /// (the first takes them all).
    fn sample(&mut self, now: Time, acked: u64, trace: &Trace) {
        while now >= self.next {
            let bytes = acked.saturating_sub(self.acked);
            self.acked = acked;
            let x = Rate::from_bytes_over(bytes, self.period);
            let target = trace.at(self.next.saturating_since(Time::ZERO));
            if self.samples.len() < self.capacity {
                self.samples.push((x.bps() as f64, target.bps() as f64));
            }
            self.next += self.period;
        }
    }
}

/// Start the group's sender thread (see the module's description).
pub fn spawn_sender(
    group: GroupSender,
    names: (String, String),
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Result<GroupOutput, TestbedError>> {
    std::thread::spawn(move || {
        let netns = group.netns.clone();
        ns::enter(&netns)?;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| host_error(&netns, "tokio runtime", e))?;
        rt.block_on(run_group(group, names, timing, stop))
    })
}

async fn run_group(
    group: GroupSender,
    (free_name, stunts_name): (String, String),
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> Result<GroupOutput, TestbedError> {
    let netns = group.netns.as_str();
    let n = group.members.len();
    let duration = timing.end.saturating_since(Time::ZERO);
    let mut out = GroupOutput {
        senders: (0..n).map(|_| SenderOutput::default()).collect(),
        record: DelegationRecord {
            period: group.options.period,
            ..DelegationRecord::default()
        },
        report: DelegationReport {
            free: free_name,
            stunts: stunts_name,
            members_stunts: n.saturating_sub(1),
            ..DelegationReport::default()
        },
    };
    let options = EndpointOptions {
        dscp: group.dscp.and_then(qstp_net::Dscp::new),
        ..EndpointOptions::default()
    };
    let endpoint = Endpoint::bind_with("0.0.0.0:0".parse().expect("an address"), options)
        .map_err(|e| host_error(netns, "bind", e))?;

    // Every member connects at its own start; the group forms once all are up.
    let mut connecting = tokio::task::JoinSet::new();
    for (i, m) in group.members.iter().enumerate() {
        let (endpoint, m, t) = (endpoint.clone(), m.clone(), timing);
        connecting.spawn(async move {
            tokio::time::sleep(until(&t, m.start)).await;
            (i, endpoint.connect(SocketAddr::V4(m.to), m.config).await)
        });
    }
    let mut conns: Vec<Option<Connection>> = vec![None; n];
    while !connecting.is_empty() {
        if timing.done(&stop) {
            return Ok(out);
        }
        let Ok(Some(joined)) = tokio::time::timeout(POLL, connecting.join_next()).await else {
            continue;
        };
        let (i, result) = joined.map_err(|e| host_error(netns, "connect task", e))?;
        let conn = result.map_err(|e| host_error(netns, &format!("connect member {i}"), e))?;
        conns[i] = Some(conn);
    }
    let conns: Vec<Connection> = conns.into_iter().flatten().collect();
    let now = timing.clock.now();
    let target = group.trace.at(now.saturating_since(Time::ZERO));
    let stunts: Vec<&Connection> = conns[1..].iter().collect();
    let handle = endpoint
        .group(&conns[0], &stunts, target, group.options)
        .map_err(|e| host_error(netns, "group", e))?;
    out.report.formed_at_s = Some(now.as_secs_f64());

    // Saturated byte streams on every member.
    let mut writers = tokio::task::JoinSet::new();
    for (i, conn) in conns.iter().enumerate() {
        let (mut conn, t, stop) = (conn.clone(), timing, stop.clone());
        writers.spawn(async move {
            let data = vec![0x5au8; CHUNK];
            while !t.done(&stop) {
                // A write waits at most one poll; an unfinished write has taken nothing.
                match tokio::time::timeout(POLL, conn.write(&data)).await {
                    Err(_) | Ok(Ok(_)) => {}
                    Ok(Err(_)) if t.done(&stop) => break,
                    Ok(Err(e)) => return Err((i, e)),
                }
            }
            Ok(())
        });
    }

    let mut samplers: Vec<Sampler> = (0..n).map(|_| Sampler::new(timing.bins)).collect();
    let mut control = ControlSamples::new(group.options.period, duration);
    let mut sampled = timing.bin_of(now);
    let mut last: Option<GroupStats> = handle.stats();
    let mut failed = None;
    while !timing.done(&stop) {
        let next_bin = Time::ZERO + timing.bin * (sampled as u64 + 1);
        let wake = next_bin.min(control.next).min(timing.end);
        tokio::time::sleep(until(&timing, wake).min(POLL)).await;
        let now = timing.clock.now();
        handle.set_target(group.trace.at(now.saturating_since(Time::ZERO)));
        if let Ok(s) = conns[0].stats() {
            control.sample(now, s.bytes_acked, &group.trace);
        }
        let bin = timing.bin_of(now);
        if bin > sampled {
            for (s, c) in samplers.iter_mut().zip(&conns) {
                s.sample(c, sampled);
            }
            sampled = bin;
        }
        last = handle.stats().or(last);
        // A writer that failed while the run goes on fails the run.
        while let Some(Ok(Err((i, e)))) = writers.try_join_next() {
            failed.get_or_insert(host_error(netns, &format!("write member {i}"), e));
        }
        if failed.is_some() {
            break;
        }
    }
    for (s, c) in samplers.iter_mut().zip(&conns) {
        s.sample(c, sampled);
    }
    last = handle.stats().or(last);
    drop(handle);
    writers.abort_all();
    for c in &conns {
        c.close(0, b"end of run");
    }
    if let Some(e) = failed {
        return Err(e);
    }
    out.senders = samplers
        .into_iter()
        .zip(&conns)
        .map(|(s, c)| s.finish(c))
        .collect();
    out.record.samples = control.samples;
    if let Some(s) = last {
        out.record.delegated = s.delegated;
        out.record.reacted = s.reacted;
        out.record.taken_by_free = s.taken_by_free;
        out.report.fraction = s.fraction;
        out.report.delegated = s.delegated;
        out.report.reacted = s.reacted;
        out.report.taken_by_free = s.taken_by_free;
    }
    Ok(out)
}

/// The group's members as the testbed starts them: each pair's receiver at the qstp port, its
/// group's configuration, its start; the Free first.
pub fn members(
    spec: &SimSpec,
    m: Members,
    pairs: &[(usize, HostPair)],
    starts: &[Time],
) -> Result<Vec<Member>, TestbedError> {
    let mut out = Vec::new();
    for g in [m.free, m.stunts] {
        let group = &spec.groups[g];
        let Protocol::Qstp(q) = &group.protocol else {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': a delegation member must be a qstp group",
                group.name
            )));
        };
        let config = qstp::flow_config(&q.config, spec.packet_size_of(group))?;
        for (i, (pg, p)) in pairs.iter().enumerate() {
            if *pg == g {
                out.push(Member {
                    to: SocketAddrV4::new(p.receiver, qstp::QSTP_PORT),
                    config: config.clone(),
                    start: starts[i],
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_proto::delegation::ControllerSpec;

    #[test]
    fn control_samples_follow_the_lab_s_grid() {
        let trace = Trace::step(
            &[Duration::ZERO, Duration::from_secs(1)],
            &[Rate::from_mbps(2), Rate::from_mbps(1)],
        )
        .unwrap();
        let mut c = ControlSamples::new(Duration::from_millis(500), Duration::from_secs(3));
        // Nothing before the first instant.
        c.sample(Time::ZERO + Duration::from_millis(499), 10_000, &trace);
        assert!(c.samples.is_empty());
        // 62 500 bytes in the first period: 1 Mbit/s, against 2 Mbit/s.
        c.sample(Time::ZERO + Duration::from_millis(501), 62_500, &trace);
        assert_eq!(c.samples, vec![(1e6, 2e6)]);
        // Two instants at once (1 s, 1.5 s): the first takes the bytes, the second none; the
        // target at 1 s is the trace's second step.
        c.sample(Time::ZERO + Duration::from_millis(1600), 125_000, &trace);
        assert_eq!(c.samples[1..], [(1e6, 1e6), (0.0, 1e6)]);
        // Bounded by the run's instants.
        c.sample(Time::ZERO + Duration::from_secs(100), 125_000, &trace);
        assert_eq!(c.samples.len(), 6);
    }

    #[test]
    fn options_carry_the_scenario_s_controller() {
        let d = DelegationSpec {
            free: "F".into(),
            stunts: "S".into(),
            controller: ControllerSpec::Pi { gain: 0.001 },
            period: Duration::from_millis(250),
            trace: Trace::step(&[Duration::ZERO], &[Rate::from_mbps(1)]).unwrap(),
            reverse: false,
            by: SignalPath::Host,
        };
        let o = group_options(&d);
        assert_eq!(o.controller, ControllerSpec::Pi { gain: 0.001 });
        assert_eq!(o.period, Duration::from_millis(250));
        assert!(!o.reverse);
    }
}
