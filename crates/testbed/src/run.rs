//! One testbed run: check the scenario, build the namespaces, start sinks, router and senders,
//! wait out the duration, collect, and tear everything down.

use crate::command::{self, CommandReport, Places, Programs};
use crate::delegation::{self, DelegationReport, GroupSender};
use crate::flows;
use crate::hosts::{self, SenderOutput, Timing};
use crate::lines::{Accuracy, Clock, LATE_NS};
use crate::ns::{self, Namespaces};
use crate::router::{self, DirectionOutput, FlowPath, GroupPath, RouterSpec};
use crate::setup::{self, HostPair, HostTcp};
use crate::TestbedError;
use qstp_dataplane::classify::{check_group_dscps, DscpConflict};
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_proto::{Duration, Time};
use qstp_sim::{FlowRecord, Protocol, QstpSpec, RunOutput, SimSpec, TcpSpec, Topology};
use rand::RngCore;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Most groups, and most flows per group (each is one byte of the hosts' addresses).
const MAX_PER_BYTE: usize = 256;

/// The smallest packet a group may send on the testbed: the datagram every host must accept
/// (RFC 791 §3.1, 576 bytes), well above Linux's smallest TCP MSS (`tcp_min_snd_mss`, 48).
const MIN_PACKET: usize = 576;

/// How the router finds a packet's edge marker, and what the hosts mark (the scenario's
/// `[testbed]` table).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classification {
    /// Classify forward packets to their group by the DSCP their senders set, not by flow.
    pub by_dscp: bool,
    /// Per group, in the scenario's order, the code point its senders set (`None`, or no entry:
    /// none set). With `by_dscp`, every group needs its own.
    pub dscp: Vec<Option<u8>>,
}

impl Classification {
    /// The code point of group `g`'s senders.
    fn dscp_of(&self, g: usize) -> Option<u8> {
        self.dscp.get(g).copied().flatten()
    }
}

/// How a run is made: the classification, and test hooks.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// How the router classifies, what the hosts mark.
    pub classification: Classification,
    /// Namespace name prefix; `None`: [`ns::unique_prefix`].
    pub prefix: Option<String>,
    /// Fail on purpose once the hosts exist, before the router starts (to test the cleanup).
    pub fail_mid_setup: bool,
    /// More sysctls for every host (`key=value`, after the testbed's own; the scenario's
    /// `[testbed] sysctl`).
    pub host_sysctl: Vec<String>,
    /// Per group, in the scenario's order, the programs of a `protocol = "command"` group
    /// (`None`, or no entry: the group runs its protocol).
    pub commands: Vec<Option<Programs>>,
    /// The run's folder for command groups: each flow's `{out}`, `<group>-<flow>/`, holds its
    /// programs' captured output. Needed when there are command groups.
    pub command_dir: Option<std::path::PathBuf>,
    /// The binary `{qstp}` names (`None`: this process's own).
    pub qstp: Option<std::path::PathBuf>,
}

impl Options {
    /// The programs of group `g`, if it is a command group.
    fn programs(&self, g: usize) -> Option<&Programs> {
        self.commands.get(g).and_then(Option::as_ref)
    }
}

/// One direction of the router, as the summary reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct DirectionReport {
    /// Packets written out on schedule or late.
    pub packets: u64,
    /// Median departure error against the schedule, ns (1 us resolution).
    pub departure_error_p50_ns: u64,
    /// 99th percentile, ns.
    pub departure_error_p99_ns: u64,
    /// Largest, ns.
    pub departure_error_max_ns: u64,
    /// Packets that left more than `late_threshold_ns` after their schedule.
    pub late: u64,
    /// The threshold of `late`, ns.
    pub late_threshold_ns: u64,
    /// Packets the kernel dropped at the TUN device because the router read too slowly.
    pub kernel_drops: u64,
    /// Packets dropped because a bounded buffer of the router was full.
    pub overrun: u64,
    /// Packets the TUN device refused on write.
    pub write_failures: u64,
    /// TCP super-packets read whole from the TUN device (each cut into its segments before the
    /// bottleneck saw them).
    pub super_packets_read: u64,
    /// Super-packets written: due segments of one flow handed to the kernel together.
    pub super_packets_written: u64,
    /// Segments written in super-packets (of `packets`).
    pub segments_coalesced: u64,
    /// Packets that were not IPv4, or of no flow of the run.
    pub foreign: u64,
    /// Whether the loop ran with real-time priority (SCHED_FIFO).
    pub realtime: bool,
}

impl DirectionReport {
    fn of(d: &DirectionOutput, kernel_drops: u64, extra_overrun: u64) -> Self {
        let a: &Accuracy = &d.lines.accuracy;
        DirectionReport {
            packets: a.count(),
            departure_error_p50_ns: a.quantile_ns(0.5),
            departure_error_p99_ns: a.quantile_ns(0.99),
            departure_error_max_ns: a.max_ns(),
            late: a.late(),
            late_threshold_ns: LATE_NS,
            kernel_drops,
            overrun: d.lines.overrun + extra_overrun,
            write_failures: d.lines.write_failures,
            super_packets_read: d.super_packets,
            super_packets_written: d.lines.super_packets,
            segments_coalesced: d.lines.coalesced,
            foreign: d.malformed + d.unclassified,
            realtime: d.realtime,
        }
    }
}

/// The router's accuracy over one run.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RouterReport {
    /// Senders to receivers, through the bottleneck.
    pub forward: DirectionReport,
    /// Receivers to senders (acknowledgements), delay only.
    pub backward: DirectionReport,
    /// Packets the bottleneck link sent.
    pub bottleneck_packets: u64,
    /// Packets the edge markers dropped (policers).
    pub policed: u64,
    /// Packets whose IPv4 ECN field the router set to CE (RFC 3168 §5): the queue's `marks`
    /// less those of packets that reached it CE already.
    pub ce_marked: u64,
}

/// What a run reports beyond the lab's metrics.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunReport {
    /// The run's seed.
    pub seed: u64,
    /// How the router found each packet's edge marker: `"flow"` or `"dscp"`.
    pub classify: &'static str,
    /// The router's accuracy.
    pub router: RouterReport,
    /// Per group, the kernel congestion control and TCP settings of its hosts.
    pub groups: Vec<GroupReport>,
    /// What the `[delegation]` group did (absent in runs without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delegation: Option<DelegationReport>,
    /// Per flow of the `protocol = "command"` groups, how its programs ended (absent without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<CommandReport>,
}

/// One group's hosts.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct GroupReport {
    /// The group.
    pub name: String,
    /// The kernel congestion control its senders use (`None`: a qstp-net or UDP group).
    pub congestion: Option<String>,
    /// Its hosts' TCP settings.
    pub tcp: HostTcp,
    /// The DSCP its senders set (`None`: none).
    pub dscp: Option<u8>,
}

/// A finished run.
#[derive(Debug, Clone)]
pub struct TestbedRun {
    /// What the lab reduces to its metrics, as from a simulation.
    pub output: RunOutput,
    /// The router's accuracy and the hosts' settings.
    pub report: RunReport,
}

/// Check that the testbed can run `spec`, before anything is created: a dumbbell, congestion
/// controls this kernel has, qstp configurations the endpoints accept, at most 256 groups of at
/// most 256 flows, and rtts that cover the bottleneck's delay both ways. Returns each group's
/// kernel congestion control (`None` for a group that is not TCP).
pub fn check(spec: &SimSpec) -> Result<Vec<Option<String>>, TestbedError> {
    let Topology::Dumbbell { bottleneck } = &spec.topology else {
        return Err(TestbedError::Unsupported(
            "the testbed runs the dumbbell only ([bottleneck]), not [[link]] graphs".into(),
        ));
    };
    if bottleneck.atm.is_some() {
        // The router forwards IP packets; cells, their policing and reassembly are the lab's.
        return Err(TestbedError::Unsupported(
            "an ATM trunk ([bottleneck] atm) runs in the lab only (qstp run): the testbed's \
             router forwards packets, not cells"
                .into(),
        ));
    }
    // qstp groups only: kernel TCP cannot leave a loss's window reduction to another connection.
    delegation::check(spec)?;
    if spec.groups.len() > MAX_PER_BYTE {
        return Err(TestbedError::Unsupported(format!(
            "{} groups: the testbed runs at most {MAX_PER_BYTE}",
            spec.groups.len()
        )));
    }
    if let Some(g) = spec.groups.iter().find(|g| g.onoff.is_some()) {
        // The bulk senders here always have data; switching them is not built yet.
        return Err(TestbedError::Unsupported(format!(
            "group '{}': onoff (switching TCP flows on and off) is not supported on the testbed",
            g.name
        )));
    }
    let available = hosts::available_congestion()?;
    let mut congestion = Vec::new();
    for g in &spec.groups {
        let cc = match &g.protocol {
            Protocol::Tcp(TcpSpec { congestion: cc, .. }) => cc,
            Protocol::Qstp(QstpSpec { config, .. }) => {
                // A configuration the endpoints would refuse is refused before anything starts.
                crate::qstp::flow_config(config, spec.packet_size_of(g))
                    .map_err(|e| TestbedError::Unsupported(format!("group '{}': {e}", g.name)))?;
                congestion.push(None);
                continue;
            }
            Protocol::Cbr(_) | Protocol::OnOff(_) => {
                congestion.push(None);
                continue;
            }
            other => return Err(flows::not_on_testbed(&g.name, other)),
        };
        let name = hosts::kernel_congestion(&cc.name);
        if !available.contains(&name) {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': congestion control '{}' is not available in this kernel (available: \
                 {}); it runs in the lab only (qstp run)",
                g.name,
                cc.name,
                available.join(", ")
            )));
        }
        congestion.push(Some(name));
    }
    for g in &spec.groups {
        if g.access.is_some() {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': access links are not yet supported on the testbed",
                g.name
            )));
        }
        // The hosts' MTU is the packet size; the TUN devices' is 1500.
        if !(MIN_PACKET..=1500).contains(&spec.packet_size_of(g)) {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': packet size {} is outside {MIN_PACKET}..=1500 on the testbed",
                g.name,
                spec.packet_size_of(g)
            )));
        }
        if let Protocol::Qstp(_) = g.protocol {
            // A hello is padded to 1200 bytes (anti-amplification, as RFC 9000 §14) and the
            // hosts' MTU is the packet size: a smaller one never completes a handshake.
            let least = qstp_proto::wire::MIN_HELLO_SIZE + UDP_IP_HEADER as usize;
            if spec.packet_size_of(g) < least {
                return Err(TestbedError::Unsupported(format!(
                    "group '{}': packet size {} is below {least} bytes, the smallest datagram a \
                     qstp handshake needs on the testbed (a 1200-byte hello, IPv4 and UDP headers)",
                    g.name,
                    spec.packet_size_of(g)
                )));
            }
        }
        if g.flows as usize > MAX_PER_BYTE {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': {} flows, the testbed runs at most {MAX_PER_BYTE} per group",
                g.name, g.flows
            )));
        }
        if g.rtt.as_nanos() < 2 * bottleneck.delay.as_nanos() {
            return Err(TestbedError::Unsupported(format!(
                "group '{}': rtt {} is below twice the bottleneck's delay",
                g.name, g.rtt
            )));
        }
    }
    Ok(congestion)
}

/// Settings of `spec`'s TCP groups that the testbed accepts but cannot honour, one line each, for
/// the user to read before the run: kernel TCP has its own recovery, RTT estimator and timer rule,
/// autotunes its receive buffer, and takes its controls' constants from the module, so the lab's
/// `recovery`, `rtt_sample`, `cc_rtt_sample`, `rto`, `ns2_syn`, `ns2_clear_scoreboard`,
/// `receive_window` and control parameters change nothing here.
/// The defaults are not listed: they stand for "whatever TCP does", which the kernel does.
pub fn ignored_settings(spec: &SimSpec) -> Vec<String> {
    let default = qstp_tcp::TcpOptions::default();
    let mut out = Vec::new();
    for g in &spec.groups {
        let Protocol::Tcp(TcpSpec {
            congestion,
            options: o,
        }) = &g.protocol
        else {
            continue;
        };
        let mut keys = Vec::new();
        if o.recovery != default.recovery {
            keys.push("recovery");
        }
        if o.rtt_sample != default.rtt_sample {
            keys.push("rtt_sample");
        }
        if o.cc_rtt_sample != default.cc_rtt_sample {
            keys.push("cc_rtt_sample");
        }
        if o.rto != default.rto {
            keys.push("rto");
        }
        if o.ns2_syn != default.ns2_syn {
            keys.push("ns2_syn");
        }
        if o.ns2_clear_scoreboard != default.ns2_clear_scoreboard {
            keys.push("ns2_clear_scoreboard");
        }
        if o.receive_window != default.receive_window {
            keys.push("receive_window");
        }
        // The kernel always opens with a handshake; `handshake = false` is the lab's shortcut.
        if !keys.is_empty() {
            out.push(format!(
                "group.{}.tcp: {} set, but kernel TCP follows its own rules on the testbed",
                g.name,
                keys.join(", ")
            ));
        }
        if !congestion.params.is_empty() {
            let names: Vec<&str> = congestion.params.keys().map(String::as_str).collect();
            out.push(format!(
                "group.{}.congestion: {} set, but the kernel's {} takes its own constants",
                g.name,
                names.join(", "),
                hosts::kernel_congestion(&congestion.name)
            ));
        }
    }
    out
}

/// Run `spec` on the testbed.
pub fn run(spec: &SimSpec) -> Result<TestbedRun, TestbedError> {
    run_with(spec, &Options::default())
}

/// Run `spec` on the testbed, with test hooks.
pub fn run_with(spec: &SimSpec, options: &Options) -> Result<TestbedRun, TestbedError> {
    crate::check_privileges()?;
    let congestion = check(spec)?;
    let Some(bottleneck) = spec.bottleneck().cloned() else {
        return Err(TestbedError::Unsupported("no bottleneck".into()));
    };
    let classes = &options.classification;
    check_classification(spec, classes)?;
    let members = delegation::check(spec)?;
    let command_dir = check_commands(spec, options)?;
    let prefix = options.prefix.clone().unwrap_or_else(ns::unique_prefix);
    let mut guard = Namespaces::new(prefix);
    let r = setup::router(&mut guard)?;

    // Hosts, flow by flow, and the router's view of groups and flows.
    let mut pairs: Vec<(usize, HostPair)> = Vec::new();
    let mut groups = Vec::new();
    let mut reports = Vec::new();
    for (g, group) in spec.groups.iter().enumerate() {
        // UDP hosts get the simulator's default TCP settings (they use no TCP).
        let o = match &group.protocol {
            Protocol::Tcp(TcpSpec { options, .. }) => options.clone(),
            _ => qstp_tcp::TcpOptions::default(),
        };
        let tcp = HostTcp {
            sack: o.sack,
            timestamps: false,
            // RFC 3168 §6.1.1: negotiated by both hosts, as the lab's TCP does with `ecn = true`.
            ecn: o.ecn,
            initcwnd: o.initial_window,
            rto_min_ms: o.min_rto.as_millis(),
            quickack: !o.delayed_ack,
            mtu: spec.packet_size_of(group),
            sysctl: options.host_sysctl.clone(),
        };
        for f in 0..group.flows as usize {
            let pair = if members.is_some_and(|m| m.contains(g)) {
                // Its sender host is the group's, made below.
                let mtu = spec.packet_size_of(group);
                delegation::receiver_host(&mut guard, &r, pairs.len(), (g, f), mtu, &tcp.sysctl)?
            } else {
                setup::hosts(&mut guard, &r, pairs.len(), (g, f), &tcp)?
            };
            pairs.push((g, pair));
        }
        let one_way = Duration::from_nanos(group.rtt.as_nanos() / 2);
        groups.push(GroupPath {
            name: group.name.clone(),
            marker: group.marker,
            extra_forward: one_way.saturating_sub(bottleneck.delay),
            backward: one_way,
        });
        reports.push(GroupReport {
            name: group.name.clone(),
            congestion: congestion[g].clone(),
            tcp,
            dscp: classes.dscp_of(g),
        });
    }
    if let Some(m) = members {
        // One sender host for the Free and its Stunts, named after the Free's pair.
        let index = pairs.iter().position(|(g, _)| *g == m.free).unwrap_or(0);
        let mut member_pairs: Vec<&mut HostPair> = Vec::new();
        let (mut free, mut stunts) = (Vec::new(), Vec::new());
        for (g, p) in pairs.iter_mut() {
            if *g == m.free {
                free.push(p);
            } else if *g == m.stunts {
                stunts.push(p);
            }
        }
        member_pairs.extend(free);
        member_pairs.extend(stunts);
        let mtu = spec.packet_size_of(&spec.groups[m.free]);
        delegation::sender_host(
            &mut guard,
            &r,
            index,
            &mut member_pairs,
            mtu,
            &options.host_sysctl,
        )?;
    }
    if options.fail_mid_setup {
        return Err(TestbedError::Injected);
    }
    let (tun_f, tun_b) = setup::tuns(&r)?;

    let bins = spec
        .duration
        .as_nanos()
        .div_ceil(spec.bin.as_nanos().max(1)) as usize;
    let clock = Clock::start();
    let end = Time::ZERO + spec.duration;
    let timing = Timing {
        clock,
        end,
        bin: spec.bin,
        bins,
    };
    let router_spec = RouterSpec {
        bottleneck,
        groups,
        flows: pairs
            .iter()
            .map(|(g, p)| FlowPath {
                group: *g,
                sender: p.sender,
                receiver: p.receiver,
            })
            .collect(),
        seed: spec.seed,
        bin: spec.bin,
        bins,
        warmup: spec.warmup,
        end,
        dscp: classes.by_dscp.then(|| {
            (0..spec.groups.len())
                .map(|g| classes.dscp_of(g).unwrap_or(0))
                .collect()
        }),
    };
    let stop = Arc::new(AtomicBool::new(false));
    // Stop every thread on the way out, whatever happens below.
    let _stopper = StopOnDrop(stop.clone());

    // Command flows: their programs' placeholders, then each receiver, listening, before the
    // router starts. A receiver is killed if anything below fails.
    let mut command_flows: Vec<Option<(command::Flow, command::Program)>> = Vec::new();
    let mut sinks = Vec::new();
    for (i, (g, p)) in pairs.iter().enumerate() {
        let (Some(programs), Some(dir)) = (options.programs(*g), &command_dir) else {
            command_flows.push(None);
            sinks.push(Some(flows::spawn_sink(
                spec,
                &spec.groups[*g],
                p,
                timing,
                &stop,
            )?));
            continue;
        };
        let flow = (i - pairs.iter().position(|(h, _)| h == g).unwrap_or(i)) as u32;
        let name = &spec.groups[*g].name;
        let places = Places {
            qstp: match &options.qstp {
                Some(q) => q.clone(),
                None => std::env::current_exe().map_err(|e| TestbedError::Program {
                    what: format!("group '{name}'"),
                    message: format!("cannot find this binary for {{qstp}}: {e}"),
                })?,
            },
            out: dir.join(format!("{name}-{flow}")),
            receiver: p.receiver,
            sender: p.sender,
            seed: spec.seed,
            duration_s: spec.duration.as_nanos() / 1_000_000_000,
        };
        let f = command::Flow::new(
            name,
            flow,
            (&p.sender_ns, &p.receiver_ns),
            programs,
            &places,
        )?;
        let receiver = f.start_receiver(&stop)?;
        command_flows.push(Some((f, receiver)));
        sinks.push(None);
    }
    let rs = Arc::new(router_spec);
    let forward = {
        let (rs, stop) = (rs.clone(), stop.clone());
        std::thread::spawn(move || router::forward(&rs, clock, tun_f, &stop))
    };
    let backward = {
        let (rs, stop) = (rs.clone(), stop.clone());
        std::thread::spawn(move || router::backward(&rs, clock, tun_b, &stop))
    };
    let mut senders = Vec::new();
    let mut starts = Vec::new();
    let failed = Arc::new(AtomicBool::new(false));
    let mut commands = command::Flows::new(stop.clone());
    for (i, (g, p)) in pairs.iter().enumerate() {
        let group = &spec.groups[*g];
        let spread = group.start_spread.unwrap_or(group.rtt).as_nanos();
        let mut rng = qstp_sim::rng::stream(spec.seed, qstp_sim::rng::StreamKind::Agent, i as u64);
        let offset = if spread == 0 {
            0
        } else {
            rng.next_u64() % spread
        };
        let start = Time::ZERO + group.start + Duration::from_nanos(offset);
        starts.push(start);
        if let Some((flow, receiver)) = command_flows.get_mut(i).and_then(Option::take) {
            commands.push(flow.spawn(receiver, start, timing, stop.clone(), failed.clone()));
            senders.push(None);
            continue;
        }
        if members.is_some_and(|m| m.contains(*g)) {
            // The group's thread starts its members.
            senders.push(None);
            continue;
        }
        let how = flows::SenderStart {
            start,
            congestion: congestion[*g].clone(),
            rng,
            dscp: classes.dscp_of(*g),
        };
        senders.push(Some(flows::spawn_sender(
            spec, group, p, how, timing, &stop,
        )?));
    }
    let group_sender = match (members, &spec.delegation) {
        (Some(m), Some(d)) => {
            let sender = GroupSender {
                netns: pairs
                    .iter()
                    .find(|(g, _)| *g == m.free)
                    .map(|(_, p)| p.sender_ns.clone())
                    .unwrap_or_default(),
                members: delegation::members(spec, m, &pairs, &starts)?,
                dscp: classes.dscp_of(m.free),
                trace: d.trace.clone(),
                options: delegation::group_options(d),
            };
            let names = (d.free.clone(), d.stunts.clone());
            Some(delegation::spawn_sender(
                sender,
                names,
                timing,
                stop.clone(),
            ))
        }
        _ => None,
    };

    // A failing program ends the run at once.
    while clock.now() < end && !crate::signal::interrupted() && !failed.load(Ordering::Relaxed) {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let mut first_error: Option<TestbedError> = None;
    let mut keep = |e: TestbedError| {
        first_error.get_or_insert(e);
    };
    let command_reports: Vec<CommandReport> = commands
        .join()
        .into_iter()
        .filter_map(|r| r.map_err(&mut keep).ok())
        .collect();
    let mut sender_outputs: Vec<SenderOutput> = senders
        .into_iter()
        .map(|h| {
            h.map(|h| h.join())
                .unwrap_or(Ok(SenderOutput::default()))
                .unwrap_or_else(|e| {
                    keep(e);
                    SenderOutput::default()
                })
        })
        .collect();
    let group_output = group_sender.map(|h| {
        flows::join(h).unwrap_or_else(|e| {
            keep(e);
            delegation::GroupOutput::default()
        })
    });
    if let (Some(m), Some(out)) = (members, &group_output) {
        // The group's outputs are the Free's, then the Stunts', in the pairs' order.
        let indices = pairs
            .iter()
            .enumerate()
            .filter(|(_, (g, _))| *g == m.free)
            .chain(
                pairs
                    .iter()
                    .enumerate()
                    .filter(|(_, (g, _))| *g == m.stunts),
            )
            .map(|(i, _)| i);
        for (i, o) in indices.zip(&out.senders) {
            sender_outputs[i] = o.clone();
        }
    }
    // A command flow's delivered bytes are its programs' to report (their output), not the
    // testbed's: it records none.
    let sink_outputs: Vec<Vec<u64>> = sinks
        .into_iter()
        .map(|h| {
            h.map(flows::join).map_or_else(Vec::new, |r| {
                r.unwrap_or_else(|e| {
                    keep(e);
                    Vec::new()
                })
            })
        })
        .collect();
    let fwd = forward.join().map_err(|_| panicked("forward router"))?;
    let bwd = backward.join().map_err(|_| panicked("backward router"))?;
    if crate::signal::interrupted() {
        return Err(TestbedError::Interrupted);
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let drops_f = setup::tun_drops(&r, "tunf").unwrap_or(0);
    let drops_b = setup::tun_drops(&r, "tunr").unwrap_or(0);
    drop(guard);

    let flows = pairs
        .iter()
        .enumerate()
        .map(|(i, (g, _))| {
            let bins_of = &fwd.direction.lines.flows[i];
            let sender = sender_outputs.get(i).cloned().unwrap_or_default();
            FlowRecord {
                group: *g,
                flow: (i - pairs.iter().position(|(h, _)| h == g).unwrap_or(i)) as u32,
                received_bytes: bins_of.bytes.clone(),
                delivered_bytes: sink_outputs.get(i).cloned().unwrap_or_default(),
                jitter_ns: bins_of.jitter_ns.clone(),
                received_packets: bins_of.packets.clone(),
                delay: bins_of.delays.stats(),
                // Kernel TCP's samples are not followed one by one (only its smoothed RTT).
                rtt: None,
                packets_sent: sender.packets_sent,
                packets_retransmitted: sender.packets_retransmitted,
                sender: sender.series,
                messages: None,
            }
        })
        .collect();
    let report = RunReport {
        seed: spec.seed,
        classify: if classes.by_dscp { "dscp" } else { "flow" },
        router: RouterReport {
            forward: DirectionReport::of(&fwd.direction, drops_f, fwd.overrun),
            backward: DirectionReport::of(&bwd, drops_b, 0),
            bottleneck_packets: fwd.link_packets,
            policed: fwd.policed,
            ce_marked: fwd.ce_marked,
        },
        groups: reports,
        delegation: group_output.as_ref().map(|o| o.report.clone()),
        commands: command_reports,
    };
    let output = RunOutput {
        events: fwd.direction.read + bwd.read,
        bottleneck_packets: fwd.link_packets,
        simulated: spec.duration,
        flows,
        queues: fwd.queues,
        queue_series: fwd.queue_series,
        // The router's link does not measure sojourn times.
        sojourn: Vec::new(),
        delegation: group_output.map(|o| o.record),
        atm: None,
    };
    Ok(TestbedRun { output, report })
}

/// Command groups: no more programs than groups, none in a `[delegation]`, and a folder for
/// their output (returned; `None` without command groups).
fn check_commands(
    spec: &SimSpec,
    options: &Options,
) -> Result<Option<std::path::PathBuf>, TestbedError> {
    let groups: Vec<usize> = (0..spec.groups.len())
        .filter(|g| options.programs(*g).is_some())
        .collect();
    if options.commands.len() > spec.groups.len() {
        return Err(TestbedError::Unsupported(format!(
            "programs for {} groups, but the scenario has {}",
            options.commands.len(),
            spec.groups.len()
        )));
    }
    if groups.is_empty() {
        return Ok(None);
    }
    if let Some(d) = &spec.delegation {
        if let Some(g) = groups
            .iter()
            .map(|g| &spec.groups[*g].name)
            .find(|n| **n == d.free || **n == d.stunts)
        {
            return Err(TestbedError::Unsupported(format!(
                "group '{g}': a command group's programs cannot be in [delegation] (the \
                 testbed forms the group of its own qstp-net endpoint; `qstp send \
                 --soft-target` forms one inside the program)"
            )));
        }
    }
    match &options.command_dir {
        Some(dir) => Ok(Some(dir.clone())),
        None => Err(TestbedError::Unsupported(format!(
            "group '{}': a command group needs a folder for its programs' output (qstp \
             testbed gives <out>/commands/)",
            spec.groups[groups[0]].name
        ))),
    }
}

/// With classification by DSCP, every group needs a code point of its own.
fn check_classification(spec: &SimSpec, c: &Classification) -> Result<(), TestbedError> {
    if let Some(m) = delegation::check(spec)? {
        // The Free and its Stunts send from one socket, so with one code point; classifying by
        // DSCP would need one per group.
        let (free, stunts) = (&spec.groups[m.free].name, &spec.groups[m.stunts].name);
        if c.by_dscp {
            return Err(TestbedError::Unsupported(format!(
                "[testbed] classify = \"dscp\" with [delegation]: the Free ('{free}') and its \
                 Stunts ('{stunts}') share one socket and so one DSCP; classify by flow"
            )));
        }
        if c.dscp_of(m.free) != c.dscp_of(m.stunts) {
            return Err(TestbedError::Unsupported(format!(
                "[testbed] dscp: the Free ('{free}') and its Stunts ('{stunts}') share one \
                 socket and so one DSCP; give their groups the same"
            )));
        }
    }
    if !c.by_dscp {
        return Ok(());
    }
    let dscp: Vec<Option<u8>> = (0..spec.groups.len()).map(|g| c.dscp_of(g)).collect();
    let name = |g: usize| &spec.groups[g].name;
    check_group_dscps(&dscp).map_err(|conflict| {
        TestbedError::Unsupported(match conflict {
            DscpConflict::Missing(g) => format!("group '{}': no DSCP to classify it by", name(g)),
            DscpConflict::OutOfRange(g, d) => {
                format!("group '{}': DSCP {d} is outside 0..63", name(g))
            }
            DscpConflict::Shared(h, g, d) => {
                format!("groups '{}' and '{}' share DSCP {d}", name(h), name(g))
            }
        })
    })
}

fn panicked(what: &str) -> TestbedError {
    TestbedError::Host {
        netns: what.into(),
        message: "its thread panicked".into(),
    }
}

/// Raises the stop flag when dropped (on every way out of a run).
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scenario's run 0, from TOML text.
    fn spec(text: &str) -> SimSpec {
        let plan = qstp_lab::scenario::parse(text, "t.toml", &Default::default()).unwrap();
        plan.base().spec(0)
    }

    #[test]
    fn classification_by_dscp_needs_a_code_point_per_group() {
        let two = spec(
            "name = \"t\"\nduration = \"10s\"\n[bottleneck]\nrate = \"10M\"\n\
             queue = { kind = \"droptail\", limit = 50 }\n[[group]]\nname = \"X\"\n\
             protocol = \"tcp\"\nrtt = \"40ms\"\n[[group]]\nname = \"Y\"\n\
             protocol = \"tcp\"\nrtt = \"40ms\"\n",
        );
        let by = |dscp: Vec<Option<u8>>| Classification {
            by_dscp: true,
            dscp,
        };
        assert!(check_classification(&two, &by(vec![Some(10), Some(12)])).is_ok());
        let err = check_classification(&two, &by(vec![Some(10), Some(10)])).unwrap_err();
        assert!(
            err.to_string().contains("groups 'X' and 'Y' share DSCP 10"),
            "{err}"
        );
        let err = check_classification(&two, &by(vec![Some(10)])).unwrap_err();
        assert!(err.to_string().contains("group 'Y': no DSCP"), "{err}");
    }

    #[test]
    fn what_the_testbed_cannot_run_is_refused_before_anything_starts() {
        let base = "name = \"t\"\nduration = \"10s\"\n[bottleneck]\nrate = \"10M\"\n\
                    queue = { kind = \"droptail\", limit = 50 }\n[[group]]\nname = \"X\"\n\
                    protocol = \"tcp\"\nrtt = \"40ms\"\n";
        let switched = spec(&format!("{base}onoff = {{ on = \"1s\", off = \"1s\" }}\n"));
        let err = check(&switched).unwrap_err().to_string();
        assert!(err.contains("group 'X': onoff"), "{err}");
        let cells = spec(&base.replace(
            "queue = { kind = \"droptail\", limit = 50 }",
            "atm = { buffer = 100 }",
        ));
        let err = check(&cells).unwrap_err().to_string();
        assert!(err.contains("ATM trunk"), "{err}");
    }

    /// A Free and two Stunts of `protocol` on a 10 Mbit/s RED bottleneck beside a TCP flow.
    fn delegation(protocol: &str, packet_size: u32) -> String {
        format!(
            "name = \"t\"\nduration = \"10s\"\npacket_size = {packet_size}\n[bottleneck]\n\
             rate = \"10M\"\ndelay = \"20ms\"\nqueue = {{ kind = \"red\", limit = \"auto\" }}\n\
             [[group]]\nname = \"F\"\nprotocol = \"{protocol}\"\nrtt = \"100ms\"\n\
             [[group]]\nname = \"S\"\nprotocol = \"{protocol}\"\nflows = 2\nrtt = \"100ms\"\n\
             [[group]]\nname = \"X\"\nprotocol = \"tcp\"\nrtt = \"100ms\"\n\
             [delegation]\nfree = \"F\"\nstunts = \"S\"\n\
             controller = {{ kind = \"pi\", gain = 0.0005, period = \"250ms\" }}\n\
             trace = {{ kind = \"step\", at = [\"0s\", \"5s\"], rate = [\"3M\", \"2M\"] }}\n\
             reverse = false\n"
        )
    }

    #[test]
    fn a_tcp_delegation_group_is_refused_with_the_reason() {
        let err = check(&spec(&delegation("tcp", 1500)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("[delegation] of tcp groups ('F' and 'S')"),
            "{err}"
        );
        assert!(err.contains("kernel TCP cannot leave"), "{err}");
        let err = delegation::check(&spec(&delegation("tcp", 1500)))
            .unwrap_err()
            .to_string();
        assert!(err.contains("protocol = \"qstp\""), "{err}");
    }

    #[test]
    fn delegation_by_the_network_is_refused_as_lab_only() {
        let text = include_str!("../../../scenarios/examples/free-stunts-ecn.toml");
        let plan = qstp_lab::scenario::parse(text, "t.toml", &Default::default()).unwrap();
        // The sweep's last point: by = "network", pi.
        let s = plan.points.last().unwrap().scenario.spec(0);
        let err = delegation::check(&s).unwrap_err().to_string();
        assert!(err.contains("by = \"network\""), "{err}");
        assert!(err.contains("runs in the lab only"), "{err}");
    }

    #[test]
    fn a_qstp_delegation_group_is_accepted_and_mapped() {
        let s = spec(&delegation("tfrc-sack", 1500));
        assert_eq!(check(&s).unwrap(), vec![None, None, Some("reno".into())]);
        let m = delegation::check(&s).unwrap().unwrap();
        assert_eq!((m.free, m.stunts), (0, 1));
        assert!(m.contains(0) && m.contains(1) && !m.contains(2));
        let d = s.delegation.as_ref().unwrap();
        let o = delegation::group_options(d);
        assert_eq!(
            o.controller,
            qstp_proto::delegation::ControllerSpec::Pi { gain: 0.0005 }
        );
        assert_eq!(o.period, Duration::from_millis(250));
        assert!(!o.reverse);
        // The members: the Free first, each at its receiver's qstp port and start, with the
        // group's configuration made for the testbed.
        let pairs: Vec<(usize, HostPair)> = [(0, 0), (1, 0), (1, 1), (2, 0)]
            .iter()
            .map(|&(g, f)| {
                let (sender, receiver) = setup::addresses(g, f);
                let pair = HostPair {
                    sender_ns: String::new(),
                    receiver_ns: String::new(),
                    sender,
                    receiver,
                };
                (g, pair)
            })
            .collect();
        let starts: Vec<Time> = (0..4).map(|i| Time::from_nanos(i * 1000)).collect();
        let members = delegation::members(&s, m, &pairs, &starts).unwrap();
        assert_eq!(members.len(), 3);
        let to: Vec<String> = members.iter().map(|m| m.to.to_string()).collect();
        assert_eq!(to, ["10.2.0.0:4433", "10.2.1.0:4433", "10.2.1.1:4433"]);
        assert_eq!(members[2].start, Time::from_nanos(2000));
        assert!(members.iter().all(|m| m.config.max_datagram == 1472));
        // A constant target is a trace of one step.
        let constant = delegation("tfrc-sack", 1500).replace(
            "trace = { kind = \"step\", at = [\"0s\", \"5s\"], rate = [\"3M\", \"2M\"] }",
            "trace = { kind = \"step\", at = [\"0s\"], rate = [\"3M\"] }",
        );
        let constant = spec(&constant);
        assert!(check(&constant).is_ok());
        let trace = &constant.delegation.as_ref().unwrap().trace;
        assert_eq!(
            trace.at(Duration::from_secs(9)),
            qstp_proto::Rate::from_mbps(3)
        );
        // The two-step trace reaches the group as written (its second step at 5 s).
        assert_eq!(
            d.trace.at(Duration::from_secs(6)),
            qstp_proto::Rate::from_mbps(2)
        );
    }

    #[test]
    fn one_socket_cannot_carry_two_code_points() {
        let s = spec(&delegation("tfrc-sack", 1500));
        let by = |by_dscp: bool, dscp: Vec<Option<u8>>| Classification { by_dscp, dscp };
        let err = check_classification(&s, &by(true, vec![Some(10), Some(12), Some(0)]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("classify = \"dscp\" with [delegation]"),
            "{err}"
        );
        let err = check_classification(&s, &by(false, vec![Some(10), Some(12)]))
            .unwrap_err()
            .to_string();
        assert!(err.contains("share one socket"), "{err}");
        assert!(check_classification(&s, &by(false, vec![Some(10), Some(10)])).is_ok());
    }

    #[test]
    fn qstp_packets_too_small_for_a_hello_are_refused() {
        let err = check(&spec(&delegation("tfrc-sack", 1000)))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("group 'F': packet size 1000 is below 1228"),
            "{err}"
        );
    }

    #[test]
    fn lab_only_tcp_settings_are_named_and_defaults_are_not() {
        let base = "name = \"t\"\nduration = \"10s\"\n[bottleneck]\nrate = \"10M\"\n\
                    queue = { kind = \"droptail\", limit = 50 }\n[[group]]\nname = \"X\"\n\
                    protocol = \"tcp\"\nrtt = \"40ms\"\n";
        assert!(ignored_settings(&spec(base)).is_empty());
        // Settings the kernel does honour (through the route and sysctls) are not listed.
        let honoured = spec(&format!(
            "{base}tcp = {{ initial_window = 10, delayed_ack = true, min_rto = \"1s\", sack = false, handshake = true }}\n"
        ));
        assert!(ignored_settings(&honoured).is_empty());
        let lab_only = spec(&format!(
            "{base}congestion = {{ name = \"cubic\", ns3 = 1 }}\n\
             tcp = {{ recovery = \"prr-ns3\", rto = \"linux\", rtt_sample = \"oldest\", ns2_syn = true, \
             ns2_clear_scoreboard = true }}\n"
        ));
        let w = ignored_settings(&lab_only);
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].starts_with(
                "group.X.tcp: recovery, rtt_sample, rto, ns2_syn, ns2_clear_scoreboard set"
            ),
            "{w:?}"
        );
        assert!(w[1].contains("group.X.congestion: ns3 set"), "{w:?}");
        assert!(w[1].contains("kernel's cubic"), "{w:?}");
    }
}
