//! The sender's record of segments sent and not yet cumulatively acknowledged (RFC 2018 SACK
//! scoreboard, with the loss marking and pipe estimate of RFC 6675).
//!
//! Built to scale to windows of tens of thousands of segments: SACKed data is kept as merged
//! ranges, so an ACK repeating known blocks costs O(log W); loss marking moves a cursor up the
//! window instead of rescanning it; segments awaiting a resend wait in an ordered set. Every
//! segment is marked SACKed, lost or resent at most once per loss episode, so the work per ACK is
//! O(log W) amortised, whatever the window.

use qstp_proto::RangeSet;
use qstp_proto::Time;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

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
    /// The number of its last retransmission, counted over the connection.
    pub rtx_id: u64,
    /// The delivery state when it was last sent, for rate sampling.
    pub tx: TxState,
}

/// What the sender had delivered when it last sent a segment (draft-cheng-iccrg-delivery-rate-
/// estimation §3.1.2, per-packet state; Linux tcp_rate.c tcp_rate_skb_sent).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct TxState {
    /// C.delivered: bytes delivered (acknowledged or SACKed) over the connection.
    pub delivered: u64,
    /// C.delivered_time: when `delivered` last grew.
    pub delivered_time: Time,
    /// C.first_sent_time: the send time of the newest segment delivered by then.
    pub first_sent_time: Time,
    /// Whether the connection was application-limited.
    pub app_limited: bool,
}

/// The newest segment an ACK delivered, with its send state (draft-cheng-iccrg-delivery-rate-
/// estimation §3.3 UpdateRateSample, IsNewestPacket).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Delivered {
    /// When it was last sent.
    pub sent_at: Time,
    /// Its last byte plus one.
    pub end: u64,
    /// Its send state.
    pub tx: TxState,
}

impl Delivered {
    /// Keep the newer of `self` and `other`: sent later, or at the same time with a higher end.
    pub(crate) fn newest(a: Option<Delivered>, b: Option<Delivered>) -> Option<Delivered> {
        match (a, b) {
            (Some(x), Some(y)) => Some(if (y.sent_at, y.end) > (x.sent_at, x.end) {
                y
            } else {
                x
            }),
            (x, y) => x.or(y),
        }
    }

    fn of(seg: &SentSegment) -> Option<Delivered> {
        Some(Delivered {
            sent_at: seg.sent_at,
            end: seg.end(),
            tx: seg.tx,
        })
    }
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
    /// Latest transmission of the last segment acknowledged, sent once or not (ns-2's sample).
    pub last_sent_at: Option<Time>,
    /// Whether any segment it acknowledged was sent more than once.
    pub resent_acked: bool,
    /// Send time of the first segment acknowledged, if it was sent only once (ns-3's sample).
    pub oldest_sent_at: Option<Time>,
    /// Whether it acknowledged a segment sent more than once that no SACK block had covered
    /// (ns-3's `m_isRetransDataAcked`).
    pub retransmission_acked: bool,
    /// The newest segment it delivered that no SACK block had covered.
    pub newest: Option<Delivered>,
}

impl CumulativeAck {
    /// Send time of the last segment acknowledged, if no acknowledged segment was ever sent
    /// twice (Karn's rule, RFC 6298 §3).
    pub(crate) fn rtt_sent_at(&self) -> Option<Time> {
        self.last_sent_at.filter(|_| !self.resent_acked)
    }
}

/// What a SACK option newly covered.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SackResult {
    /// Bytes newly SACKed.
    pub newly_sacked: u64,
    /// Latest send time among the newly SACKed segments sent only once (an RTT sample, RFC 6298
    /// §3 Karn).
    pub rtt_sent_at: Option<Time>,
    /// The newest segment newly SACKed.
    pub newest: Option<Delivered>,
    /// Whether a newly SACKed segment had been sent more than once.
    pub resent_sacked: bool,
}

/// Segments from the first unacknowledged byte up to the highest sent, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scoreboard {
    segments: VecDeque<SentSegment>,
    /// SACKed bytes, as merged ranges of whole segments.
    sacked: RangeSet,
    /// First bytes of the segments deemed lost and not yet sent again, lowest first.
    resend: BTreeSet<u64>,
    /// Every unSACKed segment below this byte has been marked lost (RFC 6675 IsLost cursor).
    lost_upto: u64,
    pipe: u64,
    /// Whether retransmissions are tracked for [`Scoreboard::mark_lost_retransmissions`].
    track_retransmissions: bool,
    /// Retransmission number -> (snd_nxt when resent, first byte), for every segment resent
    /// and neither SACKed nor acknowledged since, when tracked: at most one entry per
    /// outstanding segment. snd_nxt never falls, so both keys rise together.
    retransmitted: BTreeMap<u64, (u64, u64)>,
    /// Retransmissions counted so far.
    next_rtx_id: u64,
    /// The highest retransmission number a SACK has covered since the last timeout.
    sacked_rtx_id: Option<u64>,
    /// Bytes ever deemed lost (Linux `tp->lost`): each time a segment comes to await a resend.
    lost_total: u64,
}

impl Scoreboard {
    /// A scoreboard that also detects lost retransmissions
    /// ([`Scoreboard::mark_lost_retransmissions`]).
    pub(crate) fn tracking_retransmissions() -> Self {
        Scoreboard {
            track_retransmissions: true,
            ..Scoreboard::default()
        }
    }

    /// Bytes believed in the network (RFC 6675 §4 "pipe").
    pub(crate) fn pipe(&self) -> u64 {
        self.pipe
    }

    /// Whether nothing is outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    /// Segments outstanding.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.segments.len()
    }

    /// Index of the first segment starting at or above byte `seq`.
    fn index_of(&self, seq: u64) -> usize {
        self.segments.partition_point(|s| s.seq < seq)
    }

    /// Change segment `i` through `f`, keeping the aggregates right.
    fn update(&mut self, i: usize, f: impl FnOnce(&mut SentSegment)) {
        let seg = &mut self.segments[i];
        let (was_in_pipe, was_awaiting) = (seg.in_pipe(), seg.awaiting_resend());
        f(seg);
        let (in_pipe, awaiting) = (seg.in_pipe(), seg.awaiting_resend());
        let (seq, len) = (seg.seq, seg.len as u64);
        match (was_in_pipe, in_pipe) {
            (true, false) => self.pipe -= len,
            (false, true) => self.pipe += len,
            _ => {}
        }
        match (was_awaiting, awaiting) {
            (true, false) => {
                self.resend.remove(&seq);
            }
            (false, true) => {
                self.resend.insert(seq);
                self.lost_total += len;
            }
            _ => {}
        }
    }

    /// Bytes ever deemed lost, counted again when a resend is lost too.
    pub(crate) fn lost_total(&self) -> u64 {
        self.lost_total
    }

    /// Record a new segment sent at `now` (above every segment recorded).
    #[cfg(test)]
    pub(crate) fn push(&mut self, seq: u64, len: u32, now: Time) {
        self.push_sent(seq, len, now, TxState::default());
    }

    /// Record a new segment sent at `now` with delivery state `tx` (above every segment
    /// recorded).
    pub(crate) fn push_sent(&mut self, seq: u64, len: u32, now: Time, tx: TxState) {
        self.segments.push_back(SentSegment {
            seq,
            len,
            sent_at: now,
            retransmitted: false,
            sacked: false,
            lost: false,
            resent: false,
            rtx_id: 0,
            tx,
        });
        self.pipe += len as u64;
    }

    /// Forget every segment wholly below `ack`.
    pub(crate) fn ack_cumulative(&mut self, ack: u64) -> CumulativeAck {
        let mut result = CumulativeAck::default();
        let mut first = true;
        while self.segments.front().is_some_and(|s| s.end() <= ack) {
            let was_sacked = self.segments[0].sacked;
            // Take it out of the pipe and the resend set before dropping it.
            self.update(0, |s| {
                s.sacked = true;
                s.lost = false;
            });
            let seg = self.segments.pop_front().expect("front checked above");
            if seg.retransmitted {
                self.retransmitted.remove(&seg.rtx_id);
            }
            if !was_sacked {
                result.newly_acked += seg.len as u64;
                result.retransmission_acked |= seg.retransmitted;
                result.newest = Delivered::newest(result.newest, Delivered::of(&seg));
            }
            result.resent_acked |= seg.retransmitted;
            result.last_sent_at = Some(seg.sent_at);
            if std::mem::take(&mut first) && !seg.retransmitted {
                result.oldest_sent_at = Some(seg.sent_at);
            }
        }
        let una = self.segments.front().map_or(ack, |s| s.seq);
        self.sacked.remove_below(una);
        result
    }

    /// Mark the segments `blocks` cover as SACKed. Parts of a block already known cost one range
    /// lookup each, not a walk over their segments.
    pub(crate) fn apply_sack(&mut self, blocks: &[(u64, u64)]) -> SackResult {
        let mut result = SackResult::default();
        for &(start, end) in blocks {
            let mut at = start;
            while at < end {
                if let Some((_, known_end)) = self.sacked.containing(at) {
                    at = known_end;
                    continue;
                }
                let gap_end = self.sacked.next_start(at).map_or(end, |s| s.min(end));
                self.sack_whole_segments(at, gap_end, &mut result);
                at = gap_end;
            }
        }
        result
    }

    /// SACK every segment lying wholly inside `[from, to)` (none of them SACKed yet).
    fn sack_whole_segments(&mut self, from: u64, to: u64, result: &mut SackResult) {
        let first = self.index_of(from);
        let mut i = first;
        while i < self.segments.len() && self.segments[i].end() <= to {
            let seg = self.segments[i];
            result.newly_sacked += seg.len as u64;
            result.newest = Delivered::newest(result.newest, Delivered::of(&seg));
            result.resent_sacked |= seg.retransmitted;
            if !seg.retransmitted {
                result.rtt_sent_at = result.rtt_sent_at.max(Some(seg.sent_at));
            } else if self.retransmitted.remove(&seg.rtx_id).is_some() {
                self.sacked_rtx_id = self.sacked_rtx_id.max(Some(seg.rtx_id));
            }
            self.update(i, |s| s.sacked = true);
            i += 1;
        }
        if i > first {
            self.sacked
                .insert(self.segments[first].seq, self.segments[i - 1].end());
        }
    }

    /// First byte of the `n`-th highest SACKed segment, if `n` segments are SACKed.
    fn nth_highest_sacked(&self, n: usize) -> Option<u64> {
        let mut left = n;
        for (start, end) in self.sacked.iter_rev() {
            let (lo, hi) = (self.index_of(start), self.index_of(end));
            if hi - lo >= left {
                return Some(self.segments[hi - left].seq);
            }
            left -= hi - lo;
        }
        None
    }

    /// RFC 6675 §4 IsLost: mark lost every unSACKed segment with at least DupThresh SACKed
    /// segments above it; returns whether the first outstanding segment is lost.
    pub(crate) fn mark_lost_by_sack(&mut self) -> bool {
        if let Some(threshold) = self.nth_highest_sacked(DUP_THRESH) {
            if threshold > self.lost_upto {
                // Segments below `lost_upto` were marked by an earlier call.
                let from = self.index_of(self.lost_upto);
                let to = self.index_of(threshold);
                for i in from..to {
                    let seg = self.segments[i];
                    if !seg.sacked && !seg.lost {
                        self.update(i, |s| s.lost = true);
                    }
                }
                self.lost_upto = threshold;
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

    /// A retransmission is lost again once a segment sent after it (at or above the snd_nxt of
    /// its sending) is SACKed (Linux tcp_mark_lost_retrans; ns-2.35 TCP/Linux
    /// scoreboard1.cc:214-222), or once a SACK covers a retransmission sent more than DupThresh
    /// retransmissions after it (ns-2.35 scoreboard1.cc:215, which catches a lost retransmission
    /// that only other retransmissions followed). It leaves the pipe and waits to be sent once
    /// more. Returns how many were marked. RFC 6675 has no such rule: there a lost
    /// retransmission waits for the retransmission timer.
    pub(crate) fn mark_lost_retransmissions(&mut self) -> usize {
        let highest_sacked = self.sacked.last().map_or(0, |(_, end)| end);
        let mut marked = 0;
        // Oldest first: if the oldest is not lost, no later one is (both keys rise). A SACKed
        // segment starting at or above `nxt` ends above it; one below ends at or below it.
        while let Some((&id, &(nxt, seq))) = self.retransmitted.first_key_value() {
            let overtaken = nxt < highest_sacked;
            let outrun = self
                .sacked_rtx_id
                .is_some_and(|acked| id + DUP_THRESH as u64 + 1 < acked);
            if !(overtaken || outrun) {
                break;
            }
            self.retransmitted.pop_first();
            if let Ok(i) = self.segments.binary_search_by_key(&seq, |s| s.seq) {
                if self.segments[i].resent && !self.segments[i].sacked {
                    self.update(i, |s| s.resent = false);
                    marked += 1;
                }
            }
        }
        marked
    }

    /// Forget what SACK blocks said and which segments were deemed lost or resent, as ns-2.35's
    /// TCP/Linux does when a recovery ends (scoreboard1.cc ClearScoreBoard): every outstanding
    /// segment counts in the pipe again until a later ACK's blocks cover it or deem it lost.
    /// Retransmission numbers keep rising (ns-2 restarts them with an empty board; here earlier
    /// ones stay on their segments, and must not meet a later one's).
    pub(crate) fn clear_sack_state(&mut self) {
        self.retransmitted.clear();
        self.sacked_rtx_id = None;
        for i in 0..self.segments.len() {
            self.update(i, |s| {
                s.sacked = false;
                s.lost = false;
                s.resent = false;
            });
        }
        self.sacked = RangeSet::default();
        self.lost_upto = self.segments.front().map_or(self.lost_upto, |s| s.seq);
    }

    /// After a retransmission timeout every unSACKed segment is lost and to be sent again.
    pub(crate) fn mark_all_lost(&mut self) {
        // ns-2.35 scoreboard1.cc MarkLoss: the retransmission count starts again.
        self.retransmitted.clear();
        self.sacked_rtx_id = None;
        for i in 0..self.segments.len() {
            if !self.segments[i].sacked {
                self.update(i, |s| {
                    s.lost = true;
                    s.resent = false;
                });
            }
        }
        self.lost_upto = self.segments.back().map_or(self.lost_upto, |s| s.end());
    }

    /// The first outstanding segment.
    pub(crate) fn first(&self) -> Option<SentSegment> {
        self.segments.front().copied()
    }

    /// The first segment deemed lost and not yet sent again.
    pub(crate) fn next_resend(&self) -> Option<SentSegment> {
        let &seq = self.resend.first()?;
        Some(self.segments[self.index_of(seq)])
    }

    /// Record that the segment starting at `seq` was sent again at `now`, when the highest
    /// byte sent was `snd_nxt`.
    #[cfg(test)]
    pub(crate) fn resent(&mut self, seq: u64, now: Time, snd_nxt: u64) {
        self.resent_with(seq, now, snd_nxt, TxState::default());
    }

    /// [`Scoreboard::resent`] with the delivery state `tx` of the resend.
    pub(crate) fn resent_with(&mut self, seq: u64, now: Time, snd_nxt: u64, tx: TxState) {
        if let Ok(i) = self.segments.binary_search_by_key(&seq, |s| s.seq) {
            let before = self.segments[i];
            let rtx_id = self.next_rtx_id;
            self.next_rtx_id += 1;
            if self.track_retransmissions {
                if before.retransmitted {
                    self.retransmitted.remove(&before.rtx_id);
                }
                if !before.sacked {
                    self.retransmitted.insert(rtx_id, (snd_nxt, seq));
                }
            }
            self.update(i, |s| {
                s.resent = true;
                s.retransmitted = true;
                s.sent_at = now;
                s.rtx_id = rtx_id;
                s.tx = tx;
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
        assert_eq!(b.apply_sack(&[(200, 600)]).newly_sacked, 400);
        assert_eq!(b.apply_sack(&[(200, 600)]).newly_sacked, 0);
        assert_eq!(b.pipe(), 600);
        assert!(b.mark_lost_by_sack());
        // Segments 0 and 1 are lost: out of the pipe until sent again.
        assert_eq!(b.pipe(), 400);
        assert_eq!(b.next_resend().map(|s| s.seq), Some(0));
        b.resent(0, Time::from_nanos(50), 0);
        assert_eq!(b.pipe(), 500);
        assert_eq!(b.next_resend().map(|s| s.seq), Some(100));
    }

    #[test]
    fn a_cleared_board_forgets_sacks_and_losses_until_later_blocks_say_again() {
        let mut b = Scoreboard::tracking_retransmissions();
        for i in 0..10 {
            b.push(i * 100, 100, Time::from_nanos(i));
        }
        // 3-5 SACKed, so 0-2 are lost; 0 resent.
        b.apply_sack(&[(300, 600)]);
        assert!(b.mark_lost_by_sack());
        b.resent(0, Time::ZERO, 1000);
        assert_eq!(b.pipe(), 500);
        b.clear_sack_state();
        // Everything outstanding is in the pipe again, nothing awaits a resend.
        assert_eq!(b.pipe(), 1000);
        assert!(b.next_resend().is_none());
        assert!(b.retransmitted.is_empty());
        // Blocks above 5 only: 3-5, SACKed before, are now deemed lost with 0-2 and 6.
        assert_eq!(b.apply_sack(&[(700, 1000)]).newly_sacked, 300);
        assert!(b.mark_lost_by_sack());
        let lost: Vec<u64> = std::iter::from_fn(|| {
            let s = b.next_resend()?;
            b.resent(s.seq, Time::ZERO, 1000);
            Some(s.seq / 100)
        })
        .collect();
        assert_eq!(lost, [0, 1, 2, 3, 4, 5, 6]);
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
            b.resent(s.seq, Time::ZERO, 0);
            Some(s.seq)
        })
        .collect();
        assert_eq!(lost, [0, 100, 200]);
    }

    #[test]
    fn a_retransmission_is_lost_again_once_later_data_or_later_retransmissions_are_sacked() {
        // Segments 0-9; 4-7 SACKed, so 0-3 are lost and resent with snd_nxt at 1000.
        for tracking in [false, true] {
            let mut b = if tracking {
                Scoreboard::tracking_retransmissions()
            } else {
                Scoreboard::default()
            };
            for i in 0..10 {
                b.push(i * 100, 100, Time::from_nanos(i));
            }
            b.apply_sack(&[(400, 800)]);
            b.mark_lost_by_sack();
            for seq in [0, 100, 200, 300] {
                b.resent(seq, Time::ZERO, 1000);
            }
            assert_eq!(b.pipe(), 600);
            // 8 and 9 were sent before the resends: SACKing them says nothing of the resends.
            b.apply_sack(&[(800, 1000)]);
            assert_eq!(b.mark_lost_retransmissions(), 0);
            // Segment 10, sent after them, is SACKed: all four resends are lost.
            b.push(1000, 100, Time::ZERO);
            b.apply_sack(&[(1000, 1100)]);
            let marked = b.mark_lost_retransmissions();
            assert_eq!(marked, if tracking { 4 } else { 0 });
            if !tracking {
                continue;
            }
            assert_eq!(b.pipe(), 0);
            assert_eq!(b.next_resend().map(|s| s.seq), Some(0));
        }
    }

    #[test]
    fn a_retransmission_is_lost_again_once_a_sack_covers_one_sent_dupthresh_later() {
        // Segments 0-19; 10-19 SACKed, so 0-9 are lost and resent (retransmissions 0-9) with
        // nothing new sent after them. The SACK of the last, 9, deems lost those more than
        // DupThresh + 1 retransmissions before it: 0-4 (ns-2.35 scoreboard1.cc:215).
        let mut b = Scoreboard::tracking_retransmissions();
        for i in 0..20 {
            b.push(i * 100, 100, Time::from_nanos(i));
        }
        b.apply_sack(&[(1000, 2000)]);
        b.mark_lost_by_sack();
        for seq in (0..10).map(|i| i * 100) {
            b.resent(seq, Time::ZERO, 2000);
        }
        b.apply_sack(&[(800, 900)]);
        assert_eq!(b.mark_lost_retransmissions(), 4, "8 outruns 0-3");
        b.apply_sack(&[(900, 1000)]);
        assert_eq!(b.mark_lost_retransmissions(), 1, "9 outruns 4 too");
        let lost: Vec<u64> = std::iter::from_fn(|| {
            let s = b.next_resend()?;
            b.resent(s.seq, Time::ZERO, 2000);
            Some(s.seq)
        })
        .collect();
        assert_eq!(lost, [0, 100, 200, 300, 400]);
        // A timeout starts the count again.
        b.mark_all_lost();
        assert_eq!(b.mark_lost_retransmissions(), 0);
    }

    #[test]
    fn cumulative_ack_applies_karns_rule() {
        let mut b = board(4);
        let r = b.ack_cumulative(200);
        assert_eq!(r.newly_acked, 200);
        assert_eq!(r.rtt_sent_at(), Some(Time::from_nanos(1)));
        b.mark_first_lost();
        b.resent(200, Time::from_nanos(9), 0);
        b.apply_sack(&[(300, 400)]);
        let r = b.ack_cumulative(400);
        // Segment 2 was sent twice: no RTT sample; segment 3 had been SACKed already.
        assert_eq!((r.newly_acked, r.rtt_sent_at()), (100, None));
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
            b.resent(s.seq, Time::ZERO, 0);
            Some(s.seq)
        })
        .collect();
        assert_eq!(order, [0, 100, 200, 400]);
        assert_eq!(b.pipe(), 400);
    }
}

/// The scoreboard against a plain per-segment model that rescans the window on every step (the
/// definition of RFC 6675 IsLost and SetPipe, written the slow and obvious way).
#[cfg(test)]
mod model {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone, Copy)]
    enum Step {
        Send(u8),
        Sack(u16, u16),
        Ack(u16),
        MarkLost,
        MarkFirst,
        Timeout,
        Resend,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (1u8..8).prop_map(Step::Send),
            (0u16..60, 1u16..8).prop_map(|(a, n)| Step::Sack(a, n)),
            (0u16..60).prop_map(Step::Ack),
            (0u16..60, 1u16..8).prop_map(|(a, n)| Step::Sack(a, n)),
            Just(Step::MarkLost),
            Just(Step::MarkFirst),
            Just(Step::Timeout),
            (0u8..1).prop_map(|_| Step::Resend),
        ]
    }

    #[derive(Default)]
    struct Model {
        segs: Vec<SentSegment>,
    }

    impl Model {
        fn pipe(&self) -> u64 {
            self.segs
                .iter()
                .filter(|s| s.in_pipe())
                .map(|s| s.len as u64)
                .sum()
        }
        fn sack(&mut self, start: u64, end: u64) {
            for s in &mut self.segs {
                if s.seq >= start && s.end() <= end {
                    s.sacked = true;
                }
            }
        }
        fn mark_lost(&mut self) {
            for i in 0..self.segs.len() {
                let above = self.segs[i + 1..].iter().filter(|s| s.sacked).count();
                if !self.segs[i].sacked && above >= DUP_THRESH {
                    self.segs[i].lost = true;
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn agrees_with_the_rescanning_model(steps in proptest::collection::vec(step(), 1..80)) {
            const MSS: u64 = 10;
            let (mut b, mut m) = (Scoreboard::default(), Model::default());
            let mut next = 0u64;
            for s in steps {
                match s {
                    Step::Send(n) => for _ in 0..n {
                        b.push(next, MSS as u32, Time::ZERO);
                        m.segs.push(SentSegment { seq: next, len: MSS as u32, sent_at: Time::ZERO,
                            retransmitted: false, sacked: false, lost: false, resent: false,
                            rtx_id: 0, tx: TxState::default() });
                        next += MSS;
                    },
                    Step::Sack(a, n) => {
                        // Blocks start anywhere in the window, half the time mid-segment.
                        let una = m.segs.first().map_or(next, |s| s.seq);
                        let window = next - una;
                        let start = una + (u64::from(a) * MSS / 2) % window.max(1);
                        let end = (start + u64::from(n) * MSS).min(next);
                        if start < end {
                            b.apply_sack(&[(start, end)]);
                            m.sack(start, end);
                        }
                    }
                    Step::Ack(a) => {
                        let una = m.segs.first().map_or(next, |s| s.seq);
                        let ack = (una + u64::from(a % 4) * MSS).min(next);
                        b.ack_cumulative(ack);
                        m.segs.retain(|s| s.end() > ack);
                    }
                    Step::MarkLost => {
                        let first = b.mark_lost_by_sack();
                        m.mark_lost();
                        prop_assert_eq!(first, m.segs.first().is_some_and(|s| s.lost));
                    }
                    Step::MarkFirst => {
                        b.mark_first_lost();
                        if let Some(f) = m.segs.first_mut() {
                            if !f.sacked { f.lost = true; }
                        }
                    }
                    Step::Timeout => {
                        b.mark_all_lost();
                        for s in m.segs.iter_mut().filter(|s| !s.sacked) {
                            s.lost = true;
                            s.resent = false;
                        }
                    }
                    Step::Resend => {
                        let want = m.segs.iter().find(|s| s.awaiting_resend()).map(|s| s.seq);
                        prop_assert_eq!(b.next_resend().map(|s| s.seq), want);
                        if let Some(seq) = want {
                            b.resent(seq, Time::ZERO, 0);
                            let s = m.segs.iter_mut().find(|s| s.seq == seq).unwrap();
                            s.resent = true;
                            s.retransmitted = true;
                        }
                    }
                }
                prop_assert_eq!(b.pipe(), m.pipe());
                prop_assert_eq!(b.len(), m.segs.len());
                let lost: Vec<u64> = b.segments.iter().filter(|s| s.lost).map(|s| s.seq).collect();
                let want_lost: Vec<u64> = m.segs.iter().filter(|s| s.lost).map(|s| s.seq).collect();
                prop_assert_eq!(lost, want_lost);
                let want = m.segs.iter().find(|s| s.awaiting_resend()).map(|s| s.seq);
                prop_assert_eq!(b.next_resend().map(|s| s.seq), want);
            }
        }
    }
}
