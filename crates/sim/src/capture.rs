//! Packet capture on one link, as a network tap would see it: every packet that starts
//! serialisation onto the link (so after the queue: packets the queue drops are not in it, packets
//! the link's loss model then takes are), at the simulated time it starts, as a raw IPv4 frame.
//!
//! The simulator builds the frames; where they go is the caller's [`CaptureSink`] (the lab writes
//! them to a pcap file). Memory is bounded: at most a few frames wait between two events, and at
//! most `limit` frames are captured per run. Without a capture the links pay one branch per packet.
//!
//! Frames: an IPv4 header (DSCP AF11/AF12/AF13 for the green/yellow/red packets of a group with an
//! edge marker once it has marked them, 0 otherwise; DF set; TTL 64; checksum computed), then
//! - a qstp flow's packet: UDP (checksum 0, "none") around the real QSTP datagram bytes;
//! - a TCP segment: a 20-byte TCP header with the simulator's sequence and acknowledgement numbers
//!   (mod 2^32, from 0), ACK set (and PSH on data), the advertised window (scale 0, capped at
//!   65535; 65535 on data segments, which advertise none in the simulator), a correct checksum;
//!   then zeros up to the packet's size (SACK options are counted by the simulator but not
//!   written: only the reverse path, never capturable, carries them);
//! - a UDP (CBR, on/off) packet: UDP around zeros.
//!
//! The IPv4 total length is the simulated size, so every frame is exactly as long as the packet
//! was. Addresses tell flows apart: the sender of flow F of group G is 10.1.G.F, its receiver
//! 10.2.G.F (G and F modulo 256); the sender's port is 10000 + the flow's index in the run (mod
//! 50000), the receiver's port as its source kind says ([`crate::spec::source::Source::wire`]: 4433 for
//! qstp, 5001 for TCP, 9 for UDP).

use crate::ids::{LinkId, PacketId};
use crate::network::{Packet, Payload, QueueEvent, QueueObserver};
use crate::spec::SimSpec;
use crate::topology::{access_name, sink_name};
use qstp_dataplane::color::Color;
use qstp_dataplane::headers::{checksum, ipv4_pseudo_sum, Ipv4, PROTO_TCP};
use qstp_proto::Time;

/// Where captured frames go.
pub trait CaptureSink {
    /// One frame: the time the packet started onto the link, and its bytes (an IPv4 packet).
    fn frame(&mut self, time: Time, frame: &[u8]);
}

/// What to capture in a run.
pub struct Capture<'a> {
    /// The link's name, one of [`link_names`].
    pub link: String,
    /// Most frames to capture; later packets are not captured.
    pub limit: u64,
    /// Where the frames go.
    pub sink: &'a mut dyn CaptureSink,
}

impl std::fmt::Debug for Capture<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("link", &self.link)
            .field("limit", &self.limit)
            .finish()
    }
}

/// The links of `spec`'s topology that can be captured. A dumbbell offers `bottleneck`, then per
/// flow of each group `access/<group>/<flow>` (its sender's access link, before the edge marker)
/// and `sink/<group>/<flow>` (the egress router to its receiver); its other links (`trunk/<group>`,
/// and each `<name>.reverse`) may be captured too but are not listed. A graph offers every link by
/// its name.
pub fn link_names(spec: &SimSpec) -> Vec<String> {
    if let crate::spec::Topology::Graph(graph) = &spec.topology {
        return graph.links.iter().map(|l| l.name.clone()).collect();
    }
    let mut names = vec!["bottleneck".to_string()];
    for group in &spec.groups {
        for flow in 0..group.flows {
            names.push(access_name(&group.name, flow));
            names.push(sink_name(&group.name, flow));
        }
    }
    names
}

/// What a flow's frames need of its spec.
#[derive(Debug, Clone, Copy)]
struct FlowInfo {
    group: u32,
    in_group: u32,
    receiver_port: u16,
    protocol: u8,
}

/// The tap on the captured link, an observer of its queue: frames built as packets leave the
/// queue onto the link, waiting for the run loop to hand them to the sink.
#[derive(Debug)]
pub struct Tap {
    /// The link tapped.
    pub link: LinkId,
    flows: Vec<FlowInfo>,
    /// Whether each group's packets carry their marker's colour on this link.
    marked: Vec<bool>,
    remaining: u64,
    ip_id: u16,
    bytes: Vec<u8>,
    /// `(time, end in bytes)` of each waiting frame.
    frames: Vec<(Time, usize)>,
}

impl Tap {
    /// A tap on `link` for `spec`'s flows (`flows[i]` is flow `i`'s `(group, index in group)`);
    /// `after_marker` when the link is past the edge routers.
    pub(crate) fn new(
        spec: &SimSpec,
        link: LinkId,
        flows: &[(usize, u32)],
        after_marker: bool,
        limit: u64,
    ) -> Tap {
        let flows = flows
            .iter()
            .map(|&(group, in_group)| {
                let wire = spec.groups[group].protocol.get().wire();
                let (receiver_port, protocol) = (wire.port, wire.ip_protocol);
                FlowInfo {
                    group: group as u32,
                    in_group,
                    receiver_port,
                    protocol,
                }
            })
            .collect();
        Tap {
            link,
            flows,
            marked: spec
                .groups
                .iter()
                .map(|g| after_marker && g.marker.is_some())
                .collect(),
            remaining: limit,
            ip_id: 0,
            bytes: Vec::new(),
            frames: Vec::new(),
        }
    }

    /// A packet starts onto the link at `now`.
    #[inline]
    pub fn record(&mut self, now: Time, packet: &Packet) {
        if self.remaining == 0 {
            return;
        }
        self.remaining -= 1;
        self.ip_id = self.ip_id.wrapping_add(1);
        let info = self.flows[packet.flow.index()];
        let marked = self.marked[info.group as usize];
        write_frame(&mut self.bytes, packet, info, marked, self.ip_id);
        self.frames.push((now, self.bytes.len()));
    }

    /// Hand the waiting frames to `sink`.
    pub fn drain(&mut self, sink: &mut dyn CaptureSink) {
        let mut start = 0;
        for &(time, end) in &self.frames {
            sink.frame(time, &self.bytes[start..end]);
            start = end;
        }
        self.frames.clear();
        self.bytes.clear();
    }
}

/// Hands the tap's frames to the sink after every event: a run hook.
pub struct CaptureDrain<'a> {
    /// Where the frames go.
    pub sink: &'a mut dyn CaptureSink,
    /// The link whose tap it drains.
    pub link: LinkId,
}

impl crate::hook::RunHook for CaptureDrain<'_> {
    fn after_event(&mut self, ctx: &mut crate::hook::HookCtx<'_>) {
        let Some(link) = ctx.network.link_mut(self.link).packets_mut() else {
            return;
        };
        if let Some(tap) = link
            .observers_mut()
            .0
            .iter_mut()
            .find_map(|o| o.as_any_mut().and_then(|a| a.downcast_mut::<Tap>()))
        {
            tap.drain(&mut *self.sink);
        }
    }
}

impl QueueObserver<Packet> for Tap {
    fn observe(
        &mut self,
        now: Time,
        event: QueueEvent,
        _id: PacketId,
        packet: &Packet,
        _queue_len: usize,
    ) {
        if event == QueueEvent::Dequeued {
            self.record(now, packet);
        }
    }

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

/// DSCP of a packet: AF1x by colour when marked, best effort otherwise.
fn dscp(color: Color, marked: bool) -> u8 {
    match (marked, color) {
        (false, _) => 0,
        (true, Color::Green) => 10,
        (true, Color::Yellow) => 12,
        (true, Color::Red) => 14,
    }
}

/// Append the frame of `packet` to `out`.
fn write_frame(out: &mut Vec<u8>, packet: &Packet, info: FlowInfo, marked: bool, ip_id: u16) {
    let start = out.len();
    let size = packet.size.clamp(40, u32::from(u16::MAX)) as usize;
    let protocol = match packet.payload {
        Payload::Tcp(_) => PROTO_TCP,
        _ => info.protocol,
    };
    let (group, flow) = ((info.group & 0xff) as u8, (info.in_group & 0xff) as u8);
    let sender = [10, 1, group, flow];
    let receiver = [10, 2, group, flow];
    // Even agents send, odd ones receive (see the simulator's flow setup).
    let forward = packet.source.0 % 2 == 0;
    let (src, dst) = if forward {
        (sender, receiver)
    } else {
        (receiver, sender)
    };
    let sender_port = 10_000 + (packet.flow.0 % 50_000) as u16;
    let (sport, dport) = if forward {
        (sender_port, info.receiver_port)
    } else {
        (info.receiver_port, sender_port)
    };
    Ipv4 {
        total_len: size as u16,
        tos: dscp(packet.color, marked) << 2,
        id: ip_id,
        protocol,
        src: src.into(),
        dst: dst.into(),
    }
    .write(out);
    out.extend_from_slice(&sport.to_be_bytes());
    out.extend_from_slice(&dport.to_be_bytes());
    match &packet.payload {
        Payload::Tcp(segment) => {
            out.extend_from_slice(&(segment.seq as u32).to_be_bytes());
            out.extend_from_slice(&(segment.ack as u32).to_be_bytes());
            let flags = if segment.len > 0 { 0x18 } else { 0x10 };
            out.extend_from_slice(&[5 << 4, flags]);
            // Data segments advertise no window in the simulator: show an open one.
            let window = if segment.window == 0 {
                65_535
            } else {
                segment.window.min(65_535)
            };
            out.extend_from_slice(&(window as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0, 0, 0]);
            out.resize(start + size, 0);
            // RFC 9293 §3.1: the checksum covers the pseudo-header and the segment.
            let pseudo = ipv4_pseudo_sum(src.into(), dst.into(), PROTO_TCP, (size - 20) as u32);
            let checksum = checksum(&out[start + 20..start + size], pseudo);
            out[start + 36..start + 38].copy_from_slice(&checksum.to_be_bytes());
        }
        Payload::Datagram(bytes) => {
            out.extend_from_slice(&((size - 20) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
            let room = size - 28;
            out.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        Payload::Udp => {
            out.extend_from_slice(&((size - 20) as u16).to_be_bytes());
            out.extend_from_slice(&[0, 0]);
        }
    }
    out.resize(start + size, 0);
}
