//! One run: build the topology and agents from the spec, process events until the end, collect
//! the records.

use crate::agent::{Agent, Binding, Ctx};
use crate::capture::{Capture, CaptureDrain, Tap};
use crate::engine::Scheduler;
use crate::error::SimError;
use crate::event::{ComponentId, Event};
use crate::hook::{DelegationHost, HookCtx, RunHook, SenderSampler};
use crate::ids::{AgentId, FlowId, LinkId};
use crate::network::{LinkPort, Network, QueueMeter};
use crate::output::{QueueRecord, QueueSeries, QueueSojourn, RunOutput};
use crate::record::Recorder;
use crate::rng::{stream, StreamKind};
use crate::source::{self, FlowSetup};
use crate::spec::{GroupSpec, SimSpec, Topology};
use crate::topology::{self, FlowEnds};
use crate::validate::{bin_count, validate};
use qstp_dataplane::color::Color;
use qstp_proto::wire::MAX_DATA_HEADER;
use qstp_proto::{Duration, Time};
use rand::RngCore;
use std::ops::ControlFlow;

/// Run `spec` to the end.
pub fn run(spec: &SimSpec) -> Result<RunOutput, SimError> {
    run_with_progress(spec, &mut |_| ControlFlow::Continue(()))
}

/// Run `spec`, calling `progress` with the simulated time at every simulated second; a
/// `Break` stops the run there ([`SimError::Stopped`]).
pub fn run_with_progress(
    spec: &SimSpec,
    progress: &mut dyn FnMut(Time) -> ControlFlow<()>,
) -> Result<RunOutput, SimError> {
    run_with_capture(spec, progress, None)
}

/// Run `spec` as [`run_with_progress`] does, capturing the packets of one link into
/// `capture.sink` (see [`crate::capture`]); an unknown link name is refused before the run.
pub fn run_with_capture(
    spec: &SimSpec,
    progress: &mut dyn FnMut(Time) -> ControlFlow<()>,
    capture: Option<Capture<'_>>,
) -> Result<RunOutput, SimError> {
    validate(spec)?;
    let mut world = World::build(spec, capture)?;
    if let ControlFlow::Break(()) = world.run(Time::ZERO + spec.duration, progress) {
        return Err(SimError::Stopped);
    }
    // Every topology builder routes every flow both ways: a packet without a route is a defect
    // of the builder, reported rather than hidden in the counts.
    if world.network.unroutable > 0 {
        return Err(SimError::Unroutable {
            packets: world.network.unroutable,
        });
    }
    Ok(world.finish(spec))
}

/// Everything a run holds.
struct World<'a> {
    events: Scheduler<Event>,
    network: Network,
    bottleneck: LinkId,
    agents: Vec<Agent>,
    /// The time of each agent's pending timer event.
    armed: Vec<Option<Time>>,
    recorder: Recorder,
    scratch: Vec<u8>,
    /// When the queue counters start to count, and what they held then.
    warmup: Time,
    at_warmup: Option<Vec<QueueRecord>>,
    /// What takes part besides agents and network (sampling, delegation, capture), in order.
    hooks: Vec<Box<dyn RunHook + 'a>>,
}

impl<'a> World<'a> {
    fn build(spec: &SimSpec, capture: Option<Capture<'a>>) -> Result<World<'a>, SimError> {
        let mut built = topology::build(spec)?;
        let capture = match capture {
            None => None,
            Some(c) => {
                let Some(&(_, link, after_marker)) =
                    built.named_links.iter().find(|(name, ..)| *name == c.link)
                else {
                    let known = crate::capture::link_names(spec);
                    return Err(SimError::Invalid {
                        key: "capture".into(),
                        reason: format!("no link named '{}' (known: {})", c.link, known.join(", ")),
                    });
                };
                let flows: Vec<(usize, u32)> =
                    built.flows.iter().map(|f| (f.group, f.flow)).collect();
                let tap = Tap::new(spec, link, &flows, after_marker, c.limit);
                // The link is fresh: it has room. (An ATM trunk carries cells, which the tap
                // does not see: its capture stays empty.)
                if let Some(l) = built.network.link_mut(link).packets_mut() {
                    let _ = l.add_observer(Box::new(tap));
                }
                Some((c.sink, link))
            }
        };
        let mut events = Scheduler::new();
        let mut agents = Vec::with_capacity(built.flows.len() * 2);
        for (index, ends) in built.flows.iter().enumerate() {
            let group = &spec.groups[ends.group];
            let (sender, receiver, start) = flow_agents(spec, group, index as u32, ends)?;
            events.schedule(start, Event::AgentStart(sender.binding().me));
            agents.push(sender);
            agents.push(receiver);
        }
        let delegation = match &spec.delegation {
            None => None,
            Some(d) => {
                let (free_group, stunt_group) = d.validate(&spec.groups)?;
                // Each flow's sender is agent 2 x (its index), its receiver the next.
                let senders_of = |group: usize| -> Vec<usize> {
                    (0..built.flows.len())
                        .filter(|&i| built.flows[i].group == group)
                        .map(|i| 2 * i)
                        .collect()
                };
                let free_spec = &spec.groups[free_group];
                let segment_bits = match &free_spec.protocol {
                    // A qstp datagram's payload: the datagram less the largest data header.
                    crate::spec::Protocol::Qstp(q) => {
                        q.config.max_datagram.saturating_sub(MAX_DATA_HEADER) as u64 * 8
                    }
                    _ => spec.segment_payload_of(free_spec) * 8,
                };
                let marks = match d.by {
                    crate::spec::SignalPath::Host => None,
                    crate::spec::SignalPath::Network => {
                        let share = std::sync::Arc::new(crate::hook::MarkShare::default());
                        let Some(link) = built.network.link_mut(built.bottleneck).packets_mut()
                        else {
                            return Err(SimError::Invalid {
                                key: "delegation.by".into(),
                                reason: "\"network\" moves ECN marks at a packet bottleneck, \
                                         not at an ATM trunk"
                                    .into(),
                            });
                        };
                        let inner = std::mem::replace(
                            &mut link.queue,
                            Box::new(qstp_dataplane::queue::DropTail::new(1)),
                        );
                        link.queue = Box::new(crate::hook::MarkDelegation::new(
                            inner,
                            free_group as u32,
                            stunt_group as u32,
                            share.clone(),
                        ));
                        Some(share)
                    }
                };
                Some(DelegationHost::new(
                    d.clone(),
                    senders_of(free_group)[0],
                    senders_of(stunt_group),
                    segment_bits,
                    spec.seed,
                    spec.duration,
                    &mut agents,
                    marks,
                ))
            }
        };
        let flows: Vec<(usize, u32)> = built.flows.iter().map(|f| (f.group, f.flow)).collect();
        let bins = bin_count(spec) as usize;
        let mut hooks: Vec<Box<dyn RunHook + 'a>> = Vec::new();
        if let Some(sampler) = SenderSampler::new(&agents, spec.bin, bins) {
            hooks.push(Box::new(sampler));
        }
        if let Some(host) = delegation {
            hooks.push(Box::new(host));
        }
        if let Some((sink, link)) = capture {
            hooks.push(Box::new(CaptureDrain { sink, link }));
        }
        let recorder = Recorder::new(spec.bin, bins, &flows, Time::ZERO + spec.warmup);
        // The bottleneck's queue-length series hang on its queue, beside a capture.
        match &mut built.network.link_mut(built.bottleneck).port {
            // An ATM trunk's buffers hold cells, which its port records itself.
            LinkPort::Cells(port) => port.record_series(spec.bin, bins),
            LinkPort::Packets(link) => {
                let meter = QueueMeter::new("bottleneck", &*link.queue, spec.bin, bins);
                let _ = link.add_observer(Box::new(meter));
                link.measure_sojourn();
            }
        }
        Ok(World {
            events,
            network: built.network,
            bottleneck: built.bottleneck,
            armed: vec![None; agents.len()],
            agents,
            recorder,
            scratch: Vec::new(),
            warmup: Time::ZERO + spec.warmup,
            at_warmup: None,
            hooks,
        })
    }

    fn run(
        &mut self,
        end: Time,
        progress: &mut dyn FnMut(Time) -> ControlFlow<()>,
    ) -> ControlFlow<()> {
        let second = Duration::from_secs(1);
        let mut next_report = Time::ZERO + second;
        while let Some((now, event)) = self.events.pop_before(end) {
            if self.at_warmup.is_none() && now >= self.warmup {
                self.at_warmup = Some(self.queue_records());
                // Sojourn times count from the warm-up's end, as the queue counters do.
                if let Some(link) = self.network.link_mut(self.bottleneck).packets_mut() {
                    if let Some(sojourn) = link.sojourn_mut() {
                        sojourn.restart();
                    }
                }
            }
            // The queues and senders hold still between events: their state now, before this
            // event, is their state at every instant since the last event.
            self.each_hook(now, |hook, ctx| hook.before_event(ctx));
            while now >= next_report {
                progress(next_report)?;
                next_report += second;
            }
            match event {
                Event::Timer(ComponentId::LinkSend(link)) => {
                    self.network.on_link_ready(now, link, &mut self.events)
                }
                Event::Timer(ComponentId::LinkArrive(link)) => {
                    if let Some((agent, packet)) =
                        self.network.on_arrive(now, link, &mut self.events)
                    {
                        self.deliver(now, agent, packet);
                    }
                }
                Event::Deliver { agent, packet } => self.deliver(now, agent, packet),
                Event::AgentStart(agent) => {
                    self.with_agent(now, agent, false, |a, ctx| a.start(ctx))
                }
                Event::Timer(ComponentId::Agent(agent)) => {
                    if self.armed[agent.index()] == Some(now) {
                        self.armed[agent.index()] = None;
                        self.with_agent(now, agent, true, |a, ctx| a.on_timer(ctx));
                    }
                }
            }
            self.each_hook(now, |hook, ctx| hook.after_event(ctx));
        }
        while next_report < end {
            progress(next_report)?;
            next_report += second;
        }
        progress(end)?;
        self.each_hook(end, |hook, ctx| hook.end(ctx));
        ControlFlow::Continue(())
    }

    /// Call `f` on each hook in turn, with the world at `now`.
    #[inline]
    fn each_hook(&mut self, now: Time, mut f: impl FnMut(&mut dyn RunHook, &mut HookCtx<'_>)) {
        if self.hooks.is_empty() {
            return;
        }
        let mut ctx = HookCtx {
            now,
            agents: &mut self.agents,
            recorder: &mut self.recorder,
            network: &mut self.network,
        };
        for hook in &mut self.hooks {
            f(&mut **hook, &mut ctx);
        }
    }

    /// Call `f` on each hook that watches agent `index`, with the world at `now`.
    fn each_watching(
        &mut self,
        now: Time,
        index: usize,
        mut f: impl FnMut(&mut dyn RunHook, &mut HookCtx<'_>),
    ) {
        let mut ctx = HookCtx {
            now,
            agents: &mut self.agents,
            recorder: &mut self.recorder,
            network: &mut self.network,
        };
        for hook in self.hooks.iter_mut().filter(|h| h.watches(index)) {
            f(&mut **hook, &mut ctx);
        }
    }

    fn deliver(&mut self, now: Time, agent: AgentId, packet: crate::ids::PacketId) {
        let packet = self.network.packets.remove(packet);
        self.with_agent(now, agent, false, |a, ctx| a.on_packet(ctx, packet));
    }

    /// Let an agent run, then make sure its next wake-up is scheduled.
    fn with_agent(
        &mut self,
        now: Time,
        id: AgentId,
        from_timer: bool,
        f: impl FnOnce(&mut Agent, &mut Ctx),
    ) {
        let index = id.index();
        let watched = self.hooks.iter().any(|h| h.watches(index));
        if watched {
            self.each_watching(now, index, |hook, ctx| hook.before_agent(ctx, index));
        }
        let agent = &mut self.agents[index];
        let mut ctx = Ctx {
            now,
            network: &mut self.network,
            events: &mut self.events,
            recorder: &mut self.recorder,
            scratch: &mut self.scratch,
        };
        f(agent, &mut ctx);
        if watched {
            self.each_watching(now, index, |hook, ctx| hook.after_agent(ctx, index));
        }
        let agent = &self.agents[id.index()];
        let Some(wanted) = agent.poll_timeout() else {
            return;
        };
        // An agent just woken that still asks for `now` would spin; it gets the next nanosecond.
        let earliest = if from_timer {
            now + Duration::from_nanos(1)
        } else {
            now
        };
        let at = wanted.max(earliest);
        let armed = &mut self.armed[id.index()];
        match *armed {
            Some(pending) if pending <= at => {}
            _ => {
                *armed = Some(at);
                self.events
                    .schedule_timer(at, Event::Timer(ComponentId::Agent(id)));
            }
        }
    }

    fn finish(mut self, spec: &SimSpec) -> RunOutput {
        for agent in &self.agents {
            agent.finish(&mut self.recorder);
        }
        let mut queues = self.queue_records();
        let sojourn = self.queue_sojourn();
        let queue_series = self.queue_series();
        let port = self.network.link(self.bottleneck).cells();
        let atm = port.map(|port| crate::output::AtmRecord {
            vps: port.vp_stats().to_vec(),
            cells_sent: port.cells_sent,
        });
        // Leave the warm-up out, as the lab does for throughput (an ATM port counts from the
        // warm-up itself, cell by cell).
        if let Some(before) = self.at_warmup.as_ref().filter(|_| port.is_none()) {
            for q in &mut queues {
                if let Some(b) = before.iter().find(|b| b.name == q.name) {
                    q.green = q.green.minus(b.green);
                    q.yellow = q.yellow.minus(b.yellow);
                    q.red = q.red.minus(b.red);
                }
            }
        }
        let mut output = RunOutput {
            events: self.events.processed(),
            bottleneck_packets: self.network.link(self.bottleneck).stats().packets_delivered,
            simulated: spec.duration,
            flows: self.recorder.into_records(),
            queues,
            queue_series,
            sojourn,
            delegation: None,
            atm,
        };
        for hook in self.hooks {
            hook.finish(&mut output);
        }
        output
    }

    /// The bottleneck queue's length series, from its meter.
    fn queue_series(&mut self) -> Vec<QueueSeries> {
        if let Some(port) = self.network.link(self.bottleneck).cells() {
            return port
                .series()
                .into_iter()
                .filter(|(name, _)| port.phbs().iter().any(|p| p.name() == *name))
                .map(|(name, cells)| QueueSeries {
                    name: format!("bottleneck/{name}"),
                    packets: cells.to_vec(),
                    bytes: cells
                        .iter()
                        .map(|c| c * qstp_dataplane::aal5::CELL)
                        .collect(),
                })
                .collect();
        }
        let Some(link) = self.network.link_mut(self.bottleneck).packets_mut() else {
            return Vec::new();
        };
        let (observers, queue) = link.observers_mut();
        observers
            .iter_mut()
            .find_map(|o| o.as_any_mut().and_then(|a| a.downcast_mut::<QueueMeter>()))
            .map(|meter| meter.finish(queue))
            .unwrap_or_default()
    }

    /// The sojourn times at the bottleneck's whole queue since the warm-up (none on an ATM trunk,
    /// whose buffers hold cells, or before any packet left the queue).
    fn queue_sojourn(&self) -> Vec<QueueSojourn> {
        let Some(stats) = self
            .network
            .link(self.bottleneck)
            .packets()
            .and_then(|link| link.sojourn())
            .and_then(|s| s.stats())
        else {
            return Vec::new();
        };
        vec![QueueSojourn {
            name: "bottleneck".into(),
            stats,
        }]
    }

    /// The bottleneck's queue counters so far, the whole queue and each class.
    fn queue_records(&self) -> Vec<QueueRecord> {
        let bottleneck = self.network.link(self.bottleneck);
        if let Some(port) = bottleneck.cells() {
            // Cells, per output buffer: CLP=0 as green, CLP=1 as red.
            return port
                .phbs()
                .into_iter()
                .map(|phb| {
                    let stats = port.buffer_stats(phb);
                    QueueRecord {
                        name: format!("bottleneck/{}", phb.name()),
                        green: stats.clp0,
                        yellow: Default::default(),
                        red: stats.clp1,
                    }
                })
                .collect();
        }
        let Some(link) = bottleneck.packets() else {
            return Vec::new();
        };
        let queue = &link.queue;
        let mut queues = vec![QueueRecord {
            name: "bottleneck".into(),
            green: queue.counters(Color::Green),
            yellow: queue.counters(Color::Yellow),
            red: queue.counters(Color::Red),
        }];
        for (class, color, counters) in queue.class_counters() {
            let name = format!("bottleneck/{class}");
            let index = match queues.iter().position(|q| q.name == name) {
                Some(i) => i,
                None => {
                    queues.push(QueueRecord {
                        name,
                        green: Default::default(),
                        yellow: Default::default(),
                        red: Default::default(),
                    });
                    queues.len() - 1
                }
            };
            let record = &mut queues[index];
            match color {
                Color::Green => record.green = counters,
                Color::Yellow => record.yellow = counters,
                Color::Red => record.red = counters,
            }
        }
        queues
    }
}

/// The sender and receiver of flow number `index`, and when the sender starts.
fn flow_agents(
    spec: &SimSpec,
    group: &GroupSpec,
    index: u32,
    ends: &FlowEnds,
) -> Result<(Agent, Agent, Time), SimError> {
    let (sender_id, receiver_id) = (AgentId(2 * index), AgentId(2 * index + 1));
    let flow = FlowId(index);
    let sender_binding = Binding {
        me: sender_id,
        node: ends.source,
        peer: receiver_id,
        peer_node: ends.sink,
        flow,
        group: ends.group as u32,
    };
    let receiver_binding = Binding {
        me: receiver_id,
        node: ends.sink,
        peer: sender_id,
        peer_node: ends.source,
        flow,
        group: ends.group as u32,
    };
    // Streams named by (group, flow in group, side): adding flows to one group leaves every other
    // group's randomness as it was.
    let stream_id = |side: u64| ((ends.group as u64) << 33) | (u64::from(ends.flow) << 1) | side;
    let mut sender_rng = stream(spec.seed, StreamKind::Agent, stream_id(0));
    let receiver_rng = stream(spec.seed, StreamKind::Agent, stream_id(1));
    // Flows of a group start within one RTT (or the group's start_spread) of the group's start,
    // at a seeded offset.
    let base_rtt = match spec.topology {
        Topology::Dumbbell { .. } => group.rtt,
        Topology::Graph(_) => ends.base_rtt,
    };
    let spread = group.start_spread.unwrap_or(base_rtt);
    let offset = Duration::from_nanos(sender_rng.next_u64() % spread.as_nanos().max(1));
    let start = Time::ZERO + group.start + offset;
    let (sender, receiver) = source::agents(
        &group.protocol,
        FlowSetup {
            spec,
            group,
            index,
            in_group: ends.flow,
            sender: sender_binding,
            receiver: receiver_binding,
            sender_rng,
            receiver_rng,
            packet_size: spec.packet_size_of(group) as u32,
        },
    )?;
    Ok((sender, receiver, start))
}
