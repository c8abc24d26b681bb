//! TCP agents: a saturated bulk sender and its receiver, wrapping the sans-IO TCP machines.

use super::switch::Switch;
use super::{Binding, Ctx};
use crate::error::SimError;
use crate::network::{Packet, Payload};
use crate::spec::GroupSpec;
use qstp_dataplane::ecn::Ecn;
use qstp_proto::Time;
use qstp_tcp::{CcSpec, Segment, TcpConfig, TcpOptions, TcpReceiver, TcpSender};

/// The two agents of one TCP flow of `group`, with `packet_size`-byte data packets on the wire.
pub fn flow(
    group: &GroupSpec,
    sender: Binding,
    receiver: Binding,
    packet_size: u32,
    congestion: &CcSpec,
    options: &TcpOptions,
) -> Result<(TcpSource, TcpSink), SimError> {
    let mss = packet_size.saturating_sub(TcpConfig::default().header_bytes);
    options.validate(mss).map_err(|e| SimError::Component {
        component: format!("groups[{}].tcp", group.name),
        error: e.into(),
    })?;
    let config = options.config(mss);
    let cc = congestion
        .build(config.mss)
        .map_err(|error| SimError::CongestionControl {
            group: group.name.clone(),
            error,
        })?;
    let header = config.header_bytes;
    let sink = TcpSink::new(receiver, TcpReceiver::new(&config), header);
    Ok((
        TcpSource::new(sender, TcpSender::new(config, cc), header),
        sink,
    ))
}

/// Bytes a SACK option adds: kind and length, then 8 bytes per block (RFC 2018 §3).
fn sack_option_bytes(segment: &Segment) -> u32 {
    if segment.sack.is_empty() {
        0
    } else {
        2 + 8 * segment.sack.len() as u32
    }
}

/// The sending side of a TCP flow.
#[derive(Debug)]
pub struct TcpSource {
    /// Its flow.
    pub binding: Binding,
    sender: TcpSender,
    header_bytes: u32,
    started: bool,
    /// Loss events already recorded.
    loss_events: u64,
    /// Of those, retransmission timeouts.
    timeouts: u64,
    /// RTT measurements already recorded.
    rtt_samples: u64,
    /// The application's on/off cycle, if it has one.
    switch: Option<Switch>,
}

impl TcpSource {
    /// A bulk sender adding `header_bytes` to every segment on the wire.
    pub fn new(binding: Binding, sender: TcpSender, header_bytes: u32) -> Self {
        TcpSource {
            binding,
            sender,
            header_bytes,
            started: false,
            loss_events: 0,
            timeouts: 0,
            rtt_samples: 0,
            switch: None,
        }
    }

    /// Switch the application on and off.
    pub fn with_switch(mut self, switch: Switch) -> Self {
        self.switch = Some(switch);
        self
    }

    /// The sender, for a host-level controller.
    pub fn sender_mut(&mut self) -> &mut TcpSender {
        &mut self.sender
    }

    pub(super) fn start(&mut self, ctx: &mut Ctx) {
        self.started = true;
        if let Some(switch) = &mut self.switch {
            switch.start(ctx.now);
        }
        self.send(ctx);
    }

    pub(super) fn on_packet(&mut self, ctx: &mut Ctx, mut packet: Packet) {
        if let Payload::Tcp(segment) = &mut packet.payload {
            segment.ecn.ce = packet.ecn == Ecn::Ce;
            self.sender.on_ack(ctx.now, segment);
            ctx.recorder.on_sender_state(
                self.binding.flow,
                ctx.now,
                self.sender.srtt(),
                self.sender.cwnd(),
            );
            let (samples, latest) = self.sender.latest_rtt();
            if samples > self.rtt_samples {
                self.rtt_samples = samples;
                ctx.recorder.on_rtt(self.binding.flow, ctx.now, latest);
            }
            self.record_loss_events(ctx);
        }
        ctx.network.packets.recycle(packet.payload);
        self.send(ctx);
    }

    pub(super) fn on_timer(&mut self, ctx: &mut Ctx) {
        if let Some(switch) = &mut self.switch {
            if switch.poll(ctx.now) {
                self.sender.set_app_paused(ctx.now, !switch.is_on());
            }
        }
        if self.sender.poll_timeout().is_some_and(|t| t <= ctx.now) {
            self.sender.handle_timeout(ctx.now);
            self.record_loss_events(ctx);
        }
        self.send(ctx);
    }

    /// Count the loss events the sender saw since the last call in the flow's series.
    fn record_loss_events(&mut self, ctx: &mut Ctx) {
        let (events, timeouts) = (self.sender.loss_events(), self.sender.timeouts());
        if events > self.loss_events {
            ctx.recorder.on_loss_events(
                self.binding.flow,
                ctx.now,
                events - self.loss_events,
                timeouts - self.timeouts,
            );
            self.loss_events = events;
            self.timeouts = timeouts;
        }
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        if !self.started {
            return None;
        }
        let switch = self.switch.as_ref().and_then(Switch::next_change);
        match (self.sender.poll_timeout(), switch) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Send every segment the window allows.
    fn send(&mut self, ctx: &mut Ctx) {
        while let Some(segment) = self.sender.poll_segment(ctx.now) {
            if !segment.syn {
                ctx.recorder
                    .on_sent(self.binding.flow, ctx.now, segment.retransmission, true);
            }
            let size = segment.len + self.header_bytes + sack_option_bytes(&segment);
            let ect = segment.ecn.ect;
            let mut packet = self.binding.packet(ctx.now, size, Payload::Tcp(segment));
            if ect {
                // RFC 3168 §6.1.2: an ECN-capable sender's new data is ECT(0).
                packet.ecn = Ecn::Ect0;
            }
            ctx.send(self.binding.node, packet);
        }
    }
}

/// The receiving side of a TCP flow.
#[derive(Debug)]
pub struct TcpSink {
    /// Its flow.
    pub binding: Binding,
    receiver: TcpReceiver,
    header_bytes: u32,
}

impl TcpSink {
    /// A receiver whose ACKs carry `header_bytes` of headers.
    pub fn new(binding: Binding, receiver: TcpReceiver, header_bytes: u32) -> Self {
        TcpSink {
            binding,
            receiver,
            header_bytes,
        }
    }

    pub(super) fn on_packet(&mut self, ctx: &mut Ctx, mut packet: Packet) {
        let flow = self.binding.flow;
        ctx.recorder
            .on_received(flow, ctx.now, packet.size, packet.sent);
        if let Payload::Tcp(segment) = &mut packet.payload {
            // The IP header's CE mark, as the receiving TCP sees it (RFC 3168 §6.1.3).
            segment.ecn.ce = packet.ecn == Ecn::Ce;
            let delivered = self.receiver.on_segment(ctx.now, segment);
            ctx.recorder.on_delivered(flow, ctx.now, delivered);
        }
        ctx.network.packets.recycle(packet.payload);
        self.send(ctx);
    }

    pub(super) fn on_timer(&mut self, ctx: &mut Ctx) {
        if self.receiver.poll_timeout().is_some_and(|t| t <= ctx.now) {
            self.receiver.handle_timeout(ctx.now);
        }
        self.send(ctx);
    }

    pub(super) fn poll_timeout(&self) -> Option<Time> {
        self.receiver.poll_timeout()
    }

    /// Send every ACK that is due.
    fn send(&mut self, ctx: &mut Ctx) {
        while let Some(ack) = self.receiver.poll_ack(ctx.now) {
            let size = self.header_bytes + sack_option_bytes(&ack);
            ctx.send(
                self.binding.node,
                self.binding.packet(ctx.now, size, Payload::Tcp(ack)),
            );
        }
    }
}
