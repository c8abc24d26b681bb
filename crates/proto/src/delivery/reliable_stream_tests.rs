//! Full reliability end to end: stream buffer, SACK scoreboard and reassembly over a hostile channel.

use proptest::prelude::*;

use super::test_channel::{schedule, Channel, Hop};
use super::{StreamReassembler, StreamSendBuffer};
use crate::ec::{ReceivedPackets, SackSender, SentChunk, SentPacket};
use crate::time::{Duration, Time};
use crate::wire::ErrorControl;

#[derive(Clone, Debug)]
struct DataPacket {
    packet_number: u64,
    offset: u64,
    fin: bool,
    payload: Vec<u8>,
}

#[derive(Clone, Debug)]
struct AckPacket {
    ranges: Vec<(u64, u64)>,
    max_data: u64,
}

struct Setup {
    data: Vec<u8>,
    chunk: usize,
    send_capacity: usize,
    window: usize,
    max_ranges: usize,
    ack_ranges: usize,
    max_outstanding: usize,
    data_hops: Vec<Hop>,
    ack_hops: Vec<Hop>,
}

fn at(step: u64) -> Time {
    Time::from_nanos(step * 1_000_000)
}

/// Run one transfer to completion, checking delivery as it goes; returns the packets sent.
fn run(s: Setup) -> Result<u64, TestCaseError> {
    let rto = Duration::from_millis(60);
    let mut buffer = StreamSendBuffer::new(s.send_capacity);
    let mut sack = SackSender::new(ErrorControl::SackFull, s.max_outstanding);
    let mut received = ReceivedPackets::new(s.max_ranges);
    let mut reassembler = StreamReassembler::new(s.window);
    let mut data_channel: Channel<DataPacket> = Channel::new(s.data_hops, 5);
    let mut ack_channel: Channel<AckPacket> = Channel::new(s.ack_hops, 5);
    let mut written = 0;
    let mut delivered = Vec::new();
    let mut max_data = s.window as u64;
    let mut next_pn = 0u64;
    let mut step = 0u64;
    while !(buffer.all_acked() && reassembler.is_finished()) {
        prop_assert!(
            step < 50_000,
            "transfer did not finish: acked {} of {} written, read {}, outstanding {}, retransmissions {}, max_data {}",
            buffer.acked_bytes(),
            written,
            reassembler.read_offset(),
            sack.outstanding(),
            sack.has_retransmissions(),
            max_data
        );
        let now = at(step);
        // Application writes.
        written += buffer.write(&s.data[written..]);
        if written == s.data.len() && !buffer.is_finished() {
            buffer.finish();
        }
        // Receiver: record each new packet, reassemble, acknowledge, read.
        for p in data_channel.deliver(step) {
            if received.insert(p.packet_number) {
                let result = reassembler.insert(p.offset, &p.payload, p.fin);
                prop_assert!(result.is_ok(), "reassembly refused {:?}: {:?}", p, result);
            }
            ack_channel.send(
                step,
                AckPacket {
                    ranges: received.ranges(s.ack_ranges),
                    max_data: reassembler.max_data(),
                },
            );
        }
        let mut buf = [0u8; 97];
        loop {
            let n = reassembler.read(&mut buf);
            if n == 0 {
                break;
            }
            delivered.extend_from_slice(&buf[..n]);
        }
        prop_assert_eq!(
            &delivered[..],
            &s.data[..delivered.len()],
            "delivered bytes are a prefix of the stream"
        );
        // Sender: acknowledgements, timer, then retransmissions ahead of new data.
        for ack in ack_channel.deliver(step) {
            let result = sack.on_ack(now, &ack.ranges);
            prop_assert!(
                result.is_ok(),
                "honest acknowledgement refused: {:?}",
                result
            );
            for chunk in result.unwrap().acked {
                if let SentChunk::Stream { offset, len, fin } = chunk {
                    buffer.on_acked(offset, len, fin);
                }
            }
            max_data = max_data.max(ack.max_data);
        }
        if sack.poll_timeout(rto).is_some_and(|t| t <= now) {
            sack.handle_timeout(now, rto);
        }
        for _ in 0..3 {
            if !sack.can_send() {
                break;
            }
            let mut payload = Vec::new();
            let mut chunk = None;
            while let Some(lost) = sack.next_retransmission() {
                if let SentChunk::Stream { offset, len, fin } = lost {
                    if buffer.copy_range(offset, len, &mut payload) {
                        chunk = Some((offset, fin));
                        break;
                    }
                }
            }
            if chunk.is_none() {
                chunk = buffer.next_unsent(s.chunk, max_data, &mut payload);
            }
            let Some((offset, fin)) = chunk else {
                // Persist probe: blocked by flow control with nothing in flight, an empty packet
                // draws an acknowledgement carrying the window the receiver opened meanwhile.
                if sack.outstanding() == 0 && buffer.has_unsent() {
                    sack.on_sent(SentPacket {
                        packet_number: next_pn,
                        sent: now,
                        size: 40,
                        chunk: SentChunk::Empty,
                    });
                    data_channel.send(
                        step,
                        DataPacket {
                            packet_number: next_pn,
                            offset: 0,
                            fin: false,
                            payload: Vec::new(),
                        },
                    );
                    next_pn += 1;
                }
                break;
            };
            let packet_number = next_pn;
            next_pn += 1;
            let len = payload.len() as u32;
            sack.on_sent(SentPacket {
                packet_number,
                sent: now,
                size: payload.len() + 40,
                chunk: SentChunk::Stream { offset, len, fin },
            });
            data_channel.send(
                step,
                DataPacket {
                    packet_number,
                    offset,
                    fin,
                    payload,
                },
            );
        }
        step += 1;
    }
    prop_assert_eq!(delivered, s.data, "the whole stream arrived, in order");
    prop_assert_eq!(buffer.acked_bytes(), written as u64);
    Ok(next_pn)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Retransmitting in new packet numbers, full reliability always delivers the whole stream in order.
    #[test]
    fn full_reliability_delivers_everything_in_order(
        data in proptest::collection::vec(any::<u8>(), 0..3000),
        chunk in 1usize..200,
        send_capacity in 1usize..2000,
        window in 200usize..3000,
        max_ranges in 1usize..16,
        ack_ranges in 1usize..8,
        max_outstanding in 1usize..40,
        data_hops in schedule(150),
        ack_hops in schedule(150),
    ) {
        run(Setup { data, chunk, send_capacity, window, max_ranges, ack_ranges, max_outstanding, data_hops, ack_hops })?;
    }
}

#[test]
fn a_clean_channel_needs_no_retransmission() {
    let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let setup = Setup {
        data,
        chunk: 100,
        send_capacity: 1000,
        window: 1000,
        max_ranges: 4,
        ack_ranges: 4,
        max_outstanding: 20,
        data_hops: Vec::new(),
        ack_hops: Vec::new(),
    };
    assert_eq!(
        run(setup).unwrap(),
        50,
        "one packet per 100-byte chunk, fin on the last"
    );
}
