//! Packets as the simulator carries them, and the store that owns them while they travel.
//!
//! A packet lives in one slot of the [`PacketStore`] from the moment an agent emits it until it
//! is delivered or dropped; queues and events hold only its [`PacketId`] (queues a small
//! [`QueuedPacket`](qstp_dataplane::link::QueuedPacket) copy of what they need). Datagram buffers are recycled, so a run in steady
//! state does not allocate per packet.

use crate::ids::{AgentId, FlowId, NodeId, PacketId};
use qstp_dataplane::classify::PacketMeta;
use qstp_dataplane::color::Color;
use qstp_dataplane::ecn::Ecn;
use qstp_dataplane::link::PacketPool;
use qstp_proto::Time;
use qstp_tcp::Segment;

/// What a packet carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// A qstp datagram: the UDP payload bytes the protocol core wrote.
    Datagram(Vec<u8>),
    /// A TCP segment (data or ACK).
    Tcp(Segment),
    /// A UDP packet whose content nobody reads.
    Udp,
}

/// One packet in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    /// Size on the wire, bytes, headers included.
    pub size: u32,
    /// The flow it belongs to (data and its acknowledgements alike).
    pub flow: FlowId,
    /// Index of the flow's group in the run's spec.
    pub group: u32,
    /// Drop precedence; [`Color::Red`] (best effort) until a marker says otherwise.
    pub color: Color,
    /// When the sending agent emitted it.
    pub sent: Time,
    /// The agent that emitted it.
    pub source: AgentId,
    /// The agent it is for.
    pub destination: AgentId,
    /// The node the destination agent lives on.
    pub destination_node: NodeId,
    /// Its IP header's ECN field (RFC 3168 §5): ECT(0) from an ECN-capable TCP sender, CE once
    /// a queue marked it.
    pub ecn: Ecn,
    /// What it carries.
    pub payload: Payload,
}

impl Packet {
    /// What a classifier may look at: the simulator's group and flow (simulated packets carry
    /// no DSCP and no 5-tuple).
    #[inline]
    pub fn meta(&self) -> PacketMeta {
        PacketMeta {
            group: Some(self.group),
            flow: Some(self.flow.0),
            ..PacketMeta::default()
        }
    }
}

/// Packets in flight, by id, with recycled datagram buffers.
#[derive(Debug, Default)]
pub struct PacketStore {
    slots: Vec<Option<Packet>>,
    free: Vec<PacketId>,
    buffers: Vec<Vec<u8>>,
}

/// Most spare datagram buffers kept for reuse.
const MAX_SPARE_BUFFERS: usize = 4096;

impl PacketStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keep `packet` until it is removed; returns its id.
    pub fn insert(&mut self, packet: Packet) -> PacketId {
        match self.free.pop() {
            Some(id) => {
                self.slots[id.index()] = Some(packet);
                id
            }
            None => {
                let id = PacketId(
                    u32::try_from(self.slots.len()).expect("more than 2^32 packets in flight"),
                );
                self.slots.push(Some(packet));
                id
            }
        }
    }

    /// The packet in slot `id`.
    ///
    /// # Panics
    /// If the slot is empty: ids are only held by events and queues while the packet lives.
    pub fn get(&self, id: PacketId) -> &Packet {
        self.slots[id.index()]
            .as_ref()
            .expect("packet id of a live packet")
    }

    /// The packet in slot `id`, to change it.
    pub fn get_mut(&mut self, id: PacketId) -> &mut Packet {
        self.slots[id.index()]
            .as_mut()
            .expect("packet id of a live packet")
    }

    /// Take the packet out of the store; its slot is reused.
    pub fn remove(&mut self, id: PacketId) -> Packet {
        let packet = self.slots[id.index()]
            .take()
            .expect("packet id of a live packet");
        self.free.push(id);
        packet
    }

    /// Remove and forget a packet (dropped on the way), keeping its buffer for reuse.
    pub fn discard(&mut self, id: PacketId) {
        let packet = self.remove(id);
        self.recycle(packet.payload);
    }

    /// An empty buffer for a datagram, reused when one is spare.
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.buffers.pop().unwrap_or_default()
    }

    /// Give back what a delivered packet carried, so its buffer can be reused.
    pub fn recycle(&mut self, payload: Payload) {
        if let Payload::Datagram(mut buffer) = payload {
            self.give_buffer(&mut buffer);
        }
    }

    /// Give back a buffer taken with [`PacketStore::take_buffer`].
    pub fn give_buffer(&mut self, buffer: &mut Vec<u8>) {
        if self.buffers.len() < MAX_SPARE_BUFFERS && buffer.capacity() > 0 {
            buffer.clear();
            self.buffers.push(std::mem::take(buffer));
        }
    }

    /// Packets in flight.
    pub fn live(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

impl PacketPool for PacketStore {
    type Packet = Packet;
    #[inline]
    fn packet(&self, id: PacketId) -> &Packet {
        self.get(id)
    }
    #[inline]
    fn discard(&mut self, id: PacketId) {
        PacketStore::discard(self, id)
    }
    fn mark_ce(&mut self, id: PacketId) {
        self.get_mut(id).ecn = Ecn::Ce;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(size: u32) -> Packet {
        Packet {
            size,
            flow: FlowId(0),
            group: 0,
            color: Color::Red,
            sent: Time::ZERO,
            source: AgentId(0),
            destination: AgentId(1),
            destination_node: NodeId(1),
            ecn: Ecn::NotEct,
            payload: Payload::Udp,
        }
    }

    #[test]
    fn slots_are_reused_after_removal() {
        let mut store = PacketStore::new();
        let a = store.insert(packet(100));
        let b = store.insert(packet(200));
        assert_eq!(store.get(b).size, 200);
        assert_eq!(store.remove(a).size, 100);
        let c = store.insert(packet(300));
        assert_eq!(c, a);
        assert_eq!(store.live(), 2);
    }

    #[test]
    fn datagram_buffers_are_recycled() {
        let mut store = PacketStore::new();
        let mut buffer = store.take_buffer();
        buffer.extend_from_slice(&[1, 2, 3]);
        let capacity = buffer.capacity();
        let id = store.insert(Packet {
            payload: Payload::Datagram(buffer),
            ..packet(31)
        });
        store.discard(id);
        let again = store.take_buffer();
        assert!(again.is_empty());
        assert_eq!(again.capacity(), capacity);
    }
}
