//! Partial reliability end to end: message queue with deadlines, SACK scoreboard and message reassembly.
//!
//! The invariants this layer guarantees, asserted below:
//! 1. The sender never transmits (nor retransmits) a fragment of a message at or after its deadline,
//!    provided it calls `abandon(now)` before taking fragments at `now`.
//! 2. The receiver never delivers a message that was still incomplete when it applied a skip
//!    covering it; every message it delivers is delivered once, intact, and (ordered) in id order.
//! 3. Every message the sender saw fully acknowledged before abandoning it is delivered; every
//!    message ends acknowledged or abandoned.
//!
//! Together: a message whose deadline passed before it was complete at the receiver is delivered
//! only if all its fragments left before the deadline and arrived before the receiver learned of
//! the skip; once the skip is applied it is never delivered.

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::test_channel::{schedule, Channel, Hop};
use super::{MessageReassembler, MessageSendQueue};
use crate::ec::{ReceivedPackets, SackSender, SentChunk, SentPacket};
use crate::time::{Duration, Time};
use crate::wire::{ErrorControl, Order};

#[derive(Clone, Debug)]
struct Fragment {
    packet_number: u64,
    /// `(id, offset, total_len)`, or None for an empty packet that only carries skip_to.
    message: Option<(u64, u32, u32)>,
    skip_to: u64,
    payload: Vec<u8>,
}

#[derive(Clone, Debug)]
struct Ack {
    ranges: Vec<(u64, u64)>,
    max_data: u64,
}

const MAX_MESSAGE: usize = 300;

/// Message `id`: its id in the first 8 bytes, then bytes derived from the id.
fn message(id: u64, len: usize) -> Vec<u8> {
    let mut m = id.to_be_bytes().to_vec();
    m.extend((0..len.saturating_sub(8)).map(|i| (id as usize * 31 + i) as u8));
    m
}

fn at(step: u64) -> Time {
    Time::from_nanos(step * 1_000_000)
}

struct Setup {
    order: Order,
    sizes: Vec<usize>,
    deadline_steps: u64,
    max_retransmissions: Option<u32>,
    fragment: usize,
    recv_capacity: usize,
    data_hops: Vec<Hop>,
    ack_hops: Vec<Hop>,
}

/// The receiving side and a model of what it was given, to check what it delivers.
struct Receiver {
    received: ReceivedPackets,
    reassembler: MessageReassembler,
    /// Highest skip applied so far.
    skip_applied: u64,
    /// Bytes of each message accepted by the reassembler (above the skip).
    given: BTreeMap<u64, BTreeSet<u32>>,
    /// Messages whose every byte was accepted.
    complete: BTreeSet<u64>,
    /// Messages still incomplete when a skip covering them was applied: never to be delivered.
    doomed: BTreeSet<u64>,
    delivered: Vec<u64>,
}

impl Receiver {
    /// Apply the packet's skip, then its fragment; record the packet number only if accepted.
    fn on_fragment(&mut self, f: &Fragment) {
        for id in self.skip_applied..f.skip_to {
            if !self.complete.contains(&id) {
                self.doomed.insert(id);
            }
        }
        self.skip_applied = self.skip_applied.max(f.skip_to);
        self.reassembler.skip_to(f.skip_to);
        let Some((id, offset, total_len)) = f.message else {
            self.received.insert(f.packet_number);
            return;
        };
        if self
            .reassembler
            .insert(id, offset, total_len, &f.payload)
            .is_ok()
        {
            self.received.insert(f.packet_number);
            if id >= self.skip_applied {
                let bytes = self.given.entry(id).or_default();
                bytes.extend(offset..offset + f.payload.len() as u32);
                if bytes.len() == total_len as usize {
                    self.complete.insert(id);
                }
            }
        }
    }

    /// Take every deliverable message, checking it.
    fn pop_all(&mut self, order: Order) -> Result<(), TestCaseError> {
        while let Some(m) = self.reassembler.pop() {
            let id = u64::from_be_bytes(m[..8].try_into().unwrap());
            prop_assert_eq!(&m, &message(id, m.len()), "message delivered intact");
            prop_assert!(
                !self.doomed.contains(&id),
                "message {} delivered after a skip found it incomplete",
                id
            );
            prop_assert!(
                !self.delivered.contains(&id),
                "message {} delivered twice",
                id
            );
            if order == Order::Ordered {
                prop_assert!(self.delivered.last() < Some(&id), "ordered delivery");
            }
            self.delivered.push(id);
        }
        Ok(())
    }
}

fn run(s: Setup) -> Result<(), TestCaseError> {
    let rto = Duration::from_millis(60);
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(s.deadline_steps)),
        max_retransmissions: s.max_retransmissions,
    };
    let mut queue = MessageSendQueue::new(4 * MAX_MESSAGE);
    let mut sack = SackSender::new(error, 32);
    let mut receiver = Receiver {
        received: ReceivedPackets::new(8),
        reassembler: MessageReassembler::new(s.order, s.recv_capacity, MAX_MESSAGE),
        skip_applied: 0,
        given: BTreeMap::new(),
        complete: BTreeSet::new(),
        doomed: BTreeSet::new(),
        delivered: Vec::new(),
    };
    let mut data_channel: Channel<Fragment> = Channel::new(s.data_hops.clone(), 5);
    let mut ack_channel: Channel<Ack> = Channel::new(s.ack_hops.clone(), 5);
    let mut deadlines: BTreeMap<u64, Time> = BTreeMap::new();
    let mut acked_by_sender: BTreeSet<u64> = BTreeSet::new();
    let mut max_data = 1u64;
    let mut next_pn = 0u64;
    let mut pushed = 0usize;
    let mut step = 0u64;
    while pushed < s.sizes.len() || !queue.all_acked() || queue.skip_unconfirmed() {
        prop_assert!(
            step < 50_000,
            "did not settle: pushed {}, skip_to {}",
            pushed,
            queue.skip_to()
        );
        let now = at(step);
        // Application: one message every 4 steps, each with its own deadline.
        if step.is_multiple_of(4) && pushed < s.sizes.len() {
            let id = queue.next_id();
            let deadline = now + Duration::from_millis(s.deadline_steps);
            if queue
                .push(now, &message(id, s.sizes[pushed]), Some(deadline))
                .is_ok()
            {
                deadlines.insert(id, deadline);
                pushed += 1;
            }
        }
        for f in data_channel.deliver(step) {
            receiver.on_fragment(&f);
            ack_channel.send(
                step,
                Ack {
                    ranges: receiver.received.ranges(8),
                    max_data: receiver.reassembler.max_data(),
                },
            );
        }
        receiver.pop_all(s.order)?;
        // Sender.
        for ack in ack_channel.deliver(step) {
            let result = sack.on_ack(now, &ack.ranges);
            prop_assert!(result.is_ok());
            let result = result.unwrap();
            if let Some(largest) = result.largest_acked {
                queue.on_packet_acked(largest);
            }
            for chunk in result.acked {
                if let SentChunk::Message {
                    id, offset, len, ..
                } = chunk
                {
                    if queue.on_acked(id, offset, len) {
                        acked_by_sender.insert(id);
                    }
                }
            }
            max_data = max_data.max(ack.max_data);
        }
        if sack.poll_timeout(rto).is_some_and(|t| t <= now) {
            sack.handle_timeout(now, rto);
        }
        queue.abandon(now, s.max_retransmissions);
        for _ in 0..3 {
            if !sack.can_send() {
                break;
            }
            let mut payload = Vec::new();
            let mut fragment = None;
            while let Some(lost) = sack.next_retransmission() {
                if let SentChunk::Message {
                    id,
                    offset,
                    len,
                    total_len,
                } = lost
                {
                    queue.on_retransmitted(id);
                    queue.abandon(now, s.max_retransmissions);
                    if queue.copy_fragment(id, offset, len, &mut payload) {
                        fragment = Some((id, offset, total_len));
                        break;
                    }
                }
            }
            if fragment.is_none() {
                fragment = queue.next_unsent(s.fragment, max_data, &mut payload);
            }
            let Some((id, offset, total_len)) = fragment else {
                break;
            };
            prop_assert!(
                now < deadlines[&id],
                "fragment of message {} sent at {:?}, deadline {:?}",
                id,
                now,
                deadlines[&id]
            );
            let packet_number = next_pn;
            next_pn += 1;
            let len = payload.len() as u32;
            sack.on_sent(SentPacket {
                packet_number,
                sent: now,
                size: payload.len() + 40,
                chunk: SentChunk::Message {
                    id,
                    offset,
                    len,
                    total_len,
                },
            });
            queue.on_packet_sent(packet_number);
            data_channel.send(
                step,
                Fragment {
                    packet_number,
                    message: Some((id, offset, total_len)),
                    skip_to: queue.skip_to(),
                    payload,
                },
            );
        }
        // Nothing in flight yet the receiver may not know the latest skip: an empty packet carries it.
        if sack.outstanding() == 0 && queue.skip_unconfirmed() {
            let packet_number = next_pn;
            next_pn += 1;
            sack.on_sent(SentPacket {
                packet_number,
                sent: now,
                size: 40,
                chunk: SentChunk::Empty,
            });
            queue.on_packet_sent(packet_number);
            data_channel.send(
                step,
                Fragment {
                    packet_number,
                    message: None,
                    skip_to: queue.skip_to(),
                    payload: Vec::new(),
                },
            );
        }
        step += 1;
    }
    // Let the last packets land (the channel is clean by now), then check nothing acknowledged was lost.
    for extra in step..step + 100 {
        for f in data_channel.deliver(extra) {
            receiver.on_fragment(&f);
        }
        receiver.pop_all(s.order)?;
    }
    for id in acked_by_sender {
        prop_assert!(
            receiver.delivered.contains(&id),
            "message {} fully acknowledged but never delivered",
            id
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Deadlines and retransmission limits: nothing leaves after its deadline, nothing skipped while
    /// incomplete is delivered, nothing acknowledged is lost.
    #[test]
    fn partial_reliability_respects_deadlines_and_skips(
        ordered in any::<bool>(),
        sizes in proptest::collection::vec(8usize..MAX_MESSAGE, 1..60),
        deadline_steps in 5u64..200,
        max_retransmissions in proptest::option::of(0u32..3),
        fragment in 20usize..120,
        recv_capacity in MAX_MESSAGE..4 * MAX_MESSAGE,
        data_hops in schedule(150),
        ack_hops in schedule(150),
    ) {
        let order = if ordered { Order::Ordered } else { Order::Unordered };
        run(Setup { order, sizes, deadline_steps, max_retransmissions, fragment, recv_capacity, data_hops, ack_hops })?;
    }
}
