//! A TCP receiver as a sans-IO state machine: cumulative ACKs, SACK blocks (RFC 2018) and
//! delayed ACKs (RFC 5681 §4.2).

use super::ecn::EcnReceiver;
use super::{SackBlocks, Segment, TcpConfig};
use qstp_proto::RangeSet;
use qstp_proto::{Duration, Time};

/// The receiving end of a bulk transfer.
#[derive(Debug, Clone)]
pub struct TcpReceiver {
    mss: u64,
    window: u64,
    delayed_ack: bool,
    sack: bool,
    delayed_ack_timeout: Duration,
    /// Next byte expected in order.
    rcv_nxt: u64,
    /// Data held above a gap: disjoint, non-adjacent `start -> end` ranges above `rcv_nxt`.
    out_of_order: RangeSet,
    /// Ranges to report, most recently changed first (RFC 2018 §4).
    recent: SackBlocks,
    /// An ACK must go out at the next `poll_ack`.
    ack_now: bool,
    /// In-order bytes received and not yet acknowledged.
    unacked_bytes: u64,
    /// When the delayed ACK is due.
    delayed_ack_deadline: Option<Time>,
    acks_sent: u64,
    /// A SYN arrived: the SYN-ACK goes out at the next `poll_ack`.
    syn_ack_due: bool,
    /// Whether its ACKs echo a CE mark (RFC 3168 §6.1.3).
    ecn: EcnReceiver,
}

impl TcpReceiver {
    /// A receiver expecting byte 0.
    pub fn new(config: &TcpConfig) -> Self {
        TcpReceiver {
            mss: u64::from(config.mss.max(1)),
            window: config.receive_window,
            delayed_ack: config.delayed_ack,
            sack: config.sack,
            delayed_ack_timeout: config.delayed_ack_timeout,
            rcv_nxt: 0,
            out_of_order: RangeSet::default(),
            recent: SackBlocks::new(),
            ack_now: false,
            unacked_bytes: 0,
            delayed_ack_deadline: None,
            acks_sent: 0,
            syn_ack_due: false,
            ecn: EcnReceiver::default(),
        }
    }

    /// Process a data segment; returns bytes newly delivered in order to the application.
    pub fn on_segment(&mut self, now: Time, segment: &Segment) -> u64 {
        if segment.syn {
            // RFC 9293 §3.5: a SYN is answered by a SYN-ACK (again, if the SYN was resent).
            self.syn_ack_due = true;
            return 0;
        }
        if segment.len == 0 {
            return 0;
        }
        self.ecn.on_data(segment);
        let start = segment.seq;
        // Bytes beyond the advertised window are not kept (RFC 9293 §3.10.7.4 trims them).
        let end = segment
            .seq
            .saturating_add(u64::from(segment.len))
            .min(self.rcv_nxt.saturating_add(self.window));
        if end <= self.rcv_nxt || start >= end {
            // A duplicate, or nothing inside the window: acknowledge at once (RFC 5681 §4.2).
            self.ack_now = true;
            return 0;
        }
        if start > self.rcv_nxt {
            // Out of order: hold it and send a duplicate ACK at once (RFC 5681 §4.2).
            let range = self.out_of_order.insert(start, end);
            self.remember(range);
            self.ack_now = true;
            return 0;
        }
        let before = self.rcv_nxt;
        let filled_gap = !self.out_of_order.is_empty();
        self.rcv_nxt = end;
        while let Some((s, e)) = self.out_of_order.first() {
            if s > self.rcv_nxt {
                break;
            }
            self.rcv_nxt = self.rcv_nxt.max(e);
            self.out_of_order.remove_below(self.rcv_nxt);
        }
        let rcv_nxt = self.rcv_nxt;
        let kept = self.recent;
        self.recent.clear();
        for &block in kept.iter().filter(|&&(_, e)| e > rcv_nxt) {
            self.recent.push(block);
        }
        self.unacked_bytes += self.rcv_nxt - before;
        if filled_gap || !self.delayed_ack {
            // RFC 5681 §4.2: acknowledge at once a segment that fills all or part of a gap.
            self.ack_now = true;
        } else if self.unacked_bytes >= 2 * self.mss {
            // RFC 5681 §4.2: an ACK for at least every second full-sized segment.
            self.ack_now = true;
        } else if self.delayed_ack_deadline.is_none() {
            self.delayed_ack_deadline = Some(now + self.delayed_ack_timeout);
        }
        self.rcv_nxt - before
    }

    /// Put `range` first among the blocks to report (RFC 2018 §4: the first block holds the
    /// segment that triggered the ACK, then the most recently reported others).
    fn remember(&mut self, range: (u64, u64)) {
        let mut blocks = SackBlocks::new();
        blocks.push(range);
        for &(start, _) in self.recent.iter() {
            // The block an older report named may have merged into a larger range since.
            if let Some(now_block) = self.out_of_order.containing(start) {
                if !blocks.contains(&now_block) && !blocks.push(now_block) {
                    break;
                }
            }
        }
        self.recent = blocks;
    }

    /// The ACK to send now, if one is due.
    pub fn poll_ack(&mut self, now: Time) -> Option<Segment> {
        if std::mem::take(&mut self.syn_ack_due) {
            return Some(Segment {
                seq: 0,
                len: 0,
                ack: 0,
                sack: SackBlocks::new(),
                window: self.window,
                retransmission: false,
                syn: true,
                ecn: Default::default(),
            });
        }
        if self.delayed_ack_deadline.is_some_and(|d| d <= now) {
            self.ack_now = true;
        }
        if !self.ack_now {
            return None;
        }
        self.ack_now = false;
        self.unacked_bytes = 0;
        self.delayed_ack_deadline = None;
        self.acks_sent += 1;
        Some(Segment {
            seq: 0,
            len: 0,
            ack: self.rcv_nxt,
            sack: if self.sack {
                self.recent
            } else {
                SackBlocks::new()
            },
            window: self.window,
            retransmission: false,
            syn: false,
            ecn: self.ecn.ack_flags(),
        })
    }

    /// When the delayed ACK is due, if one is pending.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.delayed_ack_deadline
    }

    /// Fire the delayed-ACK timer if it is due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        if self.delayed_ack_deadline.is_some_and(|d| d <= now) {
            self.ack_now = true;
            self.delayed_ack_deadline = None;
        }
    }

    /// Next byte expected in order (bytes delivered so far).
    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }

    /// ACKs sent so far.
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }

    /// Bytes held above a gap.
    pub fn out_of_order_bytes(&self) -> u64 {
        self.out_of_order.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(seq: u64, len: u32) -> Segment {
        Segment {
            seq,
            len,
            ack: 0,
            sack: SackBlocks::new(),
            window: 0,
            retransmission: false,
            syn: false,
            ecn: Default::default(),
        }
    }

    fn config(delayed_ack: bool) -> TcpConfig {
        TcpConfig {
            mss: 100,
            receive_window: 1000,
            delayed_ack,
            ..TcpConfig::default()
        }
    }

    #[test]
    fn in_order_data_is_delivered_and_acked_cumulatively() {
        let mut r = TcpReceiver::new(&config(false));
        assert_eq!(r.on_segment(Time::ZERO, &data(0, 100)), 100);
        let ack = r.poll_ack(Time::ZERO).unwrap();
        assert_eq!((ack.ack, ack.len, ack.window), (100, 0, 1000));
        assert!(ack.sack.is_empty());
        assert!(r.poll_ack(Time::ZERO).is_none());
    }

    #[test]
    fn sack_blocks_are_most_recent_first_and_bounded() {
        let mut r = TcpReceiver::new(&config(true));
        // Holes at 0, 200, 400, 600, 800; data at 100, 300, 500, 700.
        for seq in [100, 300, 500, 700] {
            assert_eq!(r.on_segment(Time::ZERO, &data(seq, 100)), 0);
            // Out of order: acknowledged at once even with delayed ACKs.
            let ack = r.poll_ack(Time::ZERO).unwrap();
            assert_eq!(ack.ack, 0);
            assert_eq!(ack.sack[0], (seq, seq + 100));
        }
        // Window is 1000 bytes: 900..1000 is the last byte it accepts; a fifth block is dropped
        // from the report.
        r.on_segment(Time::ZERO, &data(900, 100));
        let ack = r.poll_ack(Time::ZERO).unwrap();
        assert_eq!(ack.sack, [(900, 1000), (700, 800), (500, 600), (300, 400)]);
        // Filling 600..700 merges three ranges; the merged block comes first.
        r.on_segment(Time::ZERO, &data(600, 100));
        let ack = r.poll_ack(Time::ZERO).unwrap();
        assert_eq!(ack.sack, [(500, 800), (900, 1000), (300, 400)]);
        // Filling the first hole delivers 0..200 and acks at once (gap-filling).
        assert_eq!(r.on_segment(Time::ZERO, &data(0, 100)), 200);
        let ack = r.poll_ack(Time::ZERO).unwrap();
        assert_eq!(ack.ack, 200);
        assert_eq!(ack.sack, [(500, 800), (900, 1000), (300, 400)]);
        assert_eq!(r.out_of_order_bytes(), 500);
    }

    #[test]
    fn data_beyond_the_window_is_not_kept() {
        let mut r = TcpReceiver::new(&config(false));
        assert_eq!(r.on_segment(Time::ZERO, &data(1000, 100)), 0);
        assert_eq!(r.out_of_order_bytes(), 0);
        // A duplicate is acknowledged at once.
        r.poll_ack(Time::ZERO);
        r.on_segment(Time::ZERO, &data(0, 100));
        r.poll_ack(Time::ZERO);
        assert_eq!(r.on_segment(Time::ZERO, &data(0, 100)), 0);
        assert_eq!(r.poll_ack(Time::ZERO).unwrap().ack, 100);
    }

    #[test]
    fn extreme_sequence_numbers_and_windows_do_not_overflow() {
        let mut r = TcpReceiver::new(&TcpConfig {
            receive_window: u64::MAX,
            ..config(false)
        });
        assert_eq!(r.on_segment(Time::ZERO, &data(u64::MAX - 10, 100)), 0);
        assert_eq!(r.out_of_order_bytes(), 10);
        assert_eq!(
            r.poll_ack(Time::ZERO).unwrap().sack,
            [(u64::MAX - 10, u64::MAX)]
        );
    }

    #[test]
    fn delayed_ack_every_second_segment_or_on_timeout() {
        let mut r = TcpReceiver::new(&config(true));
        let t0 = Time::ZERO;
        r.on_segment(t0, &data(0, 100));
        assert!(r.poll_ack(t0).is_none());
        assert_eq!(r.poll_timeout(), Some(t0 + Duration::from_millis(200)));
        r.on_segment(t0, &data(100, 100));
        assert_eq!(r.poll_ack(t0).unwrap().ack, 200);
        assert_eq!(r.poll_timeout(), None);
        // A lone segment waits for the timer.
        r.on_segment(t0, &data(200, 100));
        let due = r.poll_timeout().unwrap();
        r.handle_timeout(due - Duration::from_nanos(1));
        assert!(r.poll_ack(due - Duration::from_nanos(1)).is_none());
        r.handle_timeout(due);
        assert_eq!(r.poll_ack(due).unwrap().ack, 300);
        assert_eq!(r.acks_sent(), 2);
    }
}
