//! The sender's record of segments sent and not yet cumulatively acknowledged (RFC 2018 SACK
//! scoreboard, with the loss marking and pipe estimate of RFC 6675).

use qstp_proto::Time;
use std::collections::VecDeque;

/// RFC 6675 §2: DupThresh, the number of SACKed segments above a hole that declare it lost.
pub(crate) const DUP_THRESH: usize = 3;

/// One segment in flight or waiting to be sent again.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SentSegment {
    /// First byte.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// When it was last sent.
    pub sent_at: Time,
    /// Whether it was ever sent more than once (Karn's rule, RFC 6298 §3).
    pub retransmitted: bool,
    /// Whether a SACK block covered it.
    pub sacked: bool,
    /// Whether it is deemed lost.
    pub lost: bool,
    /// Whether it was sent again since it was deemed lost.
    pub resent: bool,
}

impl SentSegment {
    fn end(&self) -> u64 {
        self.seq + self.len as u64
    }

    /// RFC 6675 §4 SetPipe, per segment: counted if neither SACKed nor lost-and-not-resent.
    fn in_pipe(&self) -> bool {
        !self.sacked && (!self.lost || self.resent)
    }

    fn awaiting_resend(&self) -> bool {
        self.lost && !self.sacked && !self.resent
    }
}

/// What a cumulative acknowledgement removed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CumulativeAck {
    /// Bytes newly acknowledged that no SACK block had covered yet.
    pub newly_acked: u64,
    /// Send time of the last segment acknowledged, if no acknowledged segment was ever sent
    /// twice (Karn's rule, RFC 6298 §3).
    pub rtt_sent_at: Option<Time>,
}

/// Segments from the first unacknowledged byte up to the highest sent, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scoreboard {
    segments: VecDeque<SentSegment>,
    pipe: u64,
    awaiting_resend: usize,
}

impl Scoreboard {
    /// Bytes believed in the network (RFC 6675 §4 "pipe").
    pub(crate) fn pipe(&self) -> u64 {
        self.pipe
    }

    /// Whether nothing is outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Change segment `i` through `f`, keeping the aggregates right.
    fn update(&mut self, i: usize, f: impl FnOnce(&mut SentSegment)) {
        let seg = &mut self.segments[i];
        let (was_in_pipe, was_awaiting) = (seg.in_pipe(), seg.awaiting_resend());
        f(seg);
        let (in_pipe, awaiting) = (seg.in_pipe(), seg.awaiting_resend());
        let len = seg.len as u64;
        match (was_in_pipe, in_pipe) {
            (true, false) => self.pipe -= len,
            (false, true) => self.pipe += len,
            _ => {}
        }
        match (was_awaiting, awaiting) {
            (true, false) => self.awaiting_resend -= 1,
            (false, true) => self.awaiting_resend += 1,
            _ => {}
        }
    }

    /// Record a new segment sent at `now` (above every segment recorded).
    pub(crate) fn push(&mut self, seq: u64, len: u32, now: Time) {
        self.segments.push_back(SentSegment {
            seq,
            len,
            sent_at: now,
            retransmitted: false,
            sacked: false,
            lost: false,
            resent: false,
        });
        self.pipe += len as u64;
    }

    /// Forget every segment wholly below `ack`.
    pub(crate) fn ack_cumulative(&mut self, ack: u64) -> CumulativeAck {
        let mut result = CumulativeAck::default();
        let mut karn_ok = true;
        while self.segments.front().is_some_and(|s| s.end() <= ack) {
            let was_sacked = self.segments[0].sacked;
            // Take it out of the pipe and the resend count before dropping it.
            self.update(0, |s| {
                s.sacked = true;
                s.lost = false;
            });
            let seg = self.segments.pop_front().expect("front checked above");
            if !was_sacked {
                result.newly_acked += seg.len as u64;
            }
            karn_ok &= !seg.retransmitted;
            result.rtt_sent_at = Some(seg.sent_at);
        }
        if !karn_ok {
            result.rtt_sent_at = None;
        }
        result
    }

    /// Mark the segments `blocks` cover as SACKed; returns the bytes newly SACKed.
    pub(crate) fn apply_sack(&mut self, blocks: &[(u64, u64)]) -> u64 {
        let mut newly = 0;
        for &(start, end) in blocks {
            let first = self.segments.partition_point(|s| s.seq < start);
            for i in first..self.segments.len() {
                let seg = self.segments[i];
                if seg.end() > end {
                    break;
                }
                if !seg.sacked {
                    newly += seg.len as u64;
                    self.update(i, |s| s.sacked = true);
                }
            }
        }
        newly
    }

    /// RFC 6675 §4 IsLost: mark lost every unSACKed segment with at least DupThresh SACKed
    /// segments above it; returns whether the first outstanding segment is lost.
    pub(crate) fn mark_lost_by_sack(&mut self) -> bool {
        let mut sacked_above = 0;
        for i in (0..self.segments.len()).rev() {
            let seg = self.segments[i];
            if seg.sacked {
                sacked_above += 1;
            } else if sacked_above >= DUP_THRESH {
                if seg.lost {
                    // Everything below was marked when this one was.
                    break;
                }
                self.update(i, |s| s.lost = true);
            }
        }
        self.segments.front().is_some_and(|s| s.lost)
    }

    /// Mark the first outstanding segment lost unless SACKed or already lost (fast retransmit,
    /// partial ACK); returns whether it was newly marked.
    pub(crate) fn mark_first_lost(&mut self) -> bool {
        if self.segments.front().is_some_and(|s| !s.sacked && !s.lost) {
            self.update(0, |s| s.lost = true);
            true
        } else {
            false
        }
    }

    /// After a retransmission timeout every unSACKed segment is lost and to be sent again.
    pub(crate) fn mark_all_lost(&mut self) {
        for i in 0..self.segments.len() {
            if !self.segments[i].sacked {
                self.update(i, |s| {
                    s.lost = true;
                    s.resent = false;
                });
            }
        }
    }

    /// The first segment deemed lost and not yet sent again.
    pub(crate) fn next_resend(&self) -> Option<SentSegment> {
        if self.awaiting_resend == 0 {
            return None;
        }
        self.segments.iter().find(|s| s.awaiting_resend()).copied()
    }

    /// Record that the segment starting at `seq` was sent again at `now`.
    pub(crate) fn resent(&mut self, seq: u64, now: Time) {
        if let Ok(i) = self.segments.binary_search_by_key(&seq, |s| s.seq) {
            self.update(i, |s| {
                s.resent = true;
                s.retransmitted = true;
                s.sent_at = now;
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(i * 100, 100, Time::from_nanos(i));
        }
        b
    }

    #[test]
    fn pipe_counts_unsacked_and_resent_lost_segments() {
        let mut b = board(10);
        assert_eq!(b.pipe(), 1000);
        // SACK segments 2..=5: four above segments 0 and 1.
        assert_eq!(b.apply_sack(&[(200, 600)]), 400);
        assert_eq!(b.apply_sack(&[(200, 600)]), 0);
        assert_eq!(b.pipe(), 600);
        assert!(b.mark_lost_by_sack());
        // Segments 0 and 1 are lost: out of the pipe until sent again.
        assert_eq!(b.pipe(), 400);
        assert_eq!(b.next_resend().map(|s| s.seq), Some(0));
        b.resent(0, Time::from_nanos(50));
        assert_eq!(b.pipe(), 500);
        assert_eq!(b.next_resend().map(|s| s.seq), Some(100));
    }

    #[test]
    fn is_lost_needs_dupthresh_sacked_segments_above() {
        let mut b = board(10);
        b.apply_sack(&[(300, 500)]);
        assert!(!b.mark_lost_by_sack());
        b.apply_sack(&[(700, 800)]);
        // Segments 0..=2 have three SACKed above; 5 and 6 only one.
        assert!(b.mark_lost_by_sack());
        let lost: Vec<u64> = std::iter::from_fn(|| {
            let s = b.next_resend()?;
            b.resent(s.seq, Time::ZERO);
            Some(s.seq)
        })
        .collect();
        assert_eq!(lost, [0, 100, 200]);
    }

    #[test]
    fn cumulative_ack_applies_karns_rule() {
        let mut b = board(4);
        let r = b.ack_cumulative(200);
        assert_eq!(r.newly_acked, 200);
        assert_eq!(r.rtt_sent_at, Some(Time::from_nanos(1)));
        b.mark_first_lost();
        b.resent(200, Time::from_nanos(9));
        b.apply_sack(&[(300, 400)]);
        let r = b.ack_cumulative(400);
        // Segment 2 was sent twice: no RTT sample; segment 3 had been SACKed already.
        assert_eq!((r.newly_acked, r.rtt_sent_at), (100, None));
        assert!(b.is_empty());
        assert_eq!(b.pipe(), 0);
    }

    #[test]
    fn timeout_marks_everything_unsacked_for_resending() {
        let mut b = board(5);
        b.apply_sack(&[(300, 400)]);
        b.mark_all_lost();
        assert_eq!(b.pipe(), 0);
        let order: Vec<u64> = std::iter::from_fn(|| {
            let s = b.next_resend()?;
            b.resent(s.seq, Time::ZERO);
            Some(s.seq)
        })
        .collect();
        assert_eq!(order, [0, 100, 200, 400]);
        assert_eq!(b.pipe(), 400);
    }
}
