//! A bulk TCP sender as a sans-IO state machine: it always has data, sends what the window
//! allows, and recovers losses by fast retransmit / fast recovery (NewReno partial ACKs, RFC 6582,
//! steered by the SACK scoreboard as in RFC 6675) or by the retransmission timer (RFC 6298).

use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, DUP_THRESH};
use super::{AckSample, CongestionControl, SackBlocks, Segment, TcpConfig};
use qstp_proto::{Duration, Time};

/// Counters and state of a sender, for reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpSenderStats {
    /// Data segments sent, retransmissions included.
    pub segments_sent: u64,
    /// Data segments sent again.
    pub retransmissions: u64,
    /// Retransmission timer expiries.
    pub timeouts: u64,
    /// Fast retransmits (entries into fast recovery).
    pub fast_retransmits: u64,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Slow-start threshold, bytes.
    pub ssthresh: u64,
    /// Smoothed RTT (zero before the first sample).
    pub srtt: Duration,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Bytes believed in flight (RFC 6675 pipe).
    pub pipe: u64,
    /// Whether fast recovery is under way.
    pub in_recovery: bool,
}

/// A saturated TCP sender.
#[derive(Debug)]
pub struct TcpSender {
    config: TcpConfig,
    cc: Box<dyn CongestionControl>,
    rtt: RttEstimator,
    board: Scoreboard,
    /// First byte not cumulatively acknowledged.
    snd_una: u64,
    /// Next new byte to send.
    snd_nxt: u64,
    /// The receiver's advertised window.
    peer_window: u64,
    /// Duplicate ACKs in a row (RFC 5681 §2).
    dupacks: u32,
    in_recovery: bool,
    /// RFC 6582 §3.2 "recover": snd_nxt when the last recovery or timeout began.
    recover: Option<u64>,
    /// Send the next retransmission whatever the pipe (the fast retransmit itself, RFC 6675 §5
    /// step 4.3, and the retransmission after a timeout, RFC 6298 §5.4).
    resend_now: bool,
    /// Whether a partial ACK has been seen in this recovery (RFC 6582 §3.2 step 5, "Impatient").
    partial_ack_seen: bool,
    /// In recovery without SACK information: bytes that duplicate ACKs say left the network.
    departed_by_dupacks: u64,
    /// Whether the peer ever sent a SACK block (RFC 2018).
    peer_sacks: bool,
    rto_deadline: Option<Time>,
    segments_sent: u64,
    retransmissions: u64,
    timeouts: u64,
    fast_retransmits: u64,
}

impl TcpSender {
    /// A sender with `config`, controlled by `cc`.
    pub fn new(config: TcpConfig, mut cc: Box<dyn CongestionControl>) -> Self {
        let mss = u64::from(config.mss.max(1));
        // RFC 5681 §3.1: IW segments; ssthresh as high as the largest window the peer offers.
        cc.init(
            u64::from(config.initial_window.max(1)) * mss,
            config.receive_window.max(2 * mss),
        );
        TcpSender {
            rtt: RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto),
            peer_window: config.receive_window,
            config,
            cc,
            board: Scoreboard::default(),
            snd_una: 0,
            snd_nxt: 0,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            resend_now: false,
            partial_ack_seen: false,
            departed_by_dupacks: 0,
            peer_sacks: false,
            rto_deadline: None,
            segments_sent: 0,
            retransmissions: 0,
            timeouts: 0,
            fast_retransmits: 0,
        }
    }

    fn mss(&self) -> u64 {
        u64::from(self.config.mss.max(1))
    }

    /// RFC 6675 pipe, less what duplicate ACKs without SACK blocks say has left.
    fn pipe(&self) -> u64 {
        self.board.pipe().saturating_sub(self.departed_by_dupacks)
    }

    /// Whether the window has room for `len` more bytes (always for a first segment in flight).
    fn window_allows(&self, len: u64) -> bool {
        let pipe = self.pipe();
        pipe == 0 || pipe + len <= self.cc.cwnd()
    }

    fn data_segment(&self, seq: u64, len: u32, retransmission: bool) -> Segment {
        Segment {
            seq,
            len,
            ack: 0,
            sack: SackBlocks::new(),
            window: 0,
            retransmission,
        }
    }

    /// Next data segment allowed now by cwnd, the peer's window and recovery; None if none.
    pub fn poll_segment(&mut self, now: Time) -> Option<Segment> {
        // RFC 6675 §5 NextSeg rule 1: segments deemed lost go before new data.
        if let Some(lost) = self.board.next_resend() {
            if !(self.resend_now || self.window_allows(u64::from(lost.len))) {
                return None;
            }
            self.resend_now = false;
            self.board.resent(lost.seq, now);
            self.segments_sent += 1;
            self.retransmissions += 1;
            self.arm_timer(now);
            return Some(self.data_segment(lost.seq, lost.len, true));
        }
        self.resend_now = false;
        // RFC 6675 §5 NextSeg rule 2 / RFC 5681: new data within cwnd and the peer's window.
        let mss = self.mss();
        let in_peer_window = self.snd_nxt + mss <= self.snd_una.saturating_add(self.peer_window);
        let nothing_outstanding = self.snd_nxt == self.snd_una;
        if !(self.window_allows(mss) && (in_peer_window || nothing_outstanding)) {
            return None;
        }
        let seq = self.snd_nxt;
        self.snd_nxt += mss;
        self.board.push(seq, self.config.mss.max(1), now);
        self.segments_sent += 1;
        self.arm_timer(now);
        Some(self.data_segment(seq, self.config.mss.max(1), false))
    }

    /// RFC 6298 §5.1: start the timer when sending if it is not running.
    fn arm_timer(&mut self, now: Time) {
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Process an acknowledgement.
    pub fn on_ack(&mut self, now: Time, ack: &Segment) {
        if ack.ack > self.snd_nxt || ack.ack < self.snd_una {
            // Acknowledges data never sent, or is older than what we know: ignore.
            return;
        }
        self.peer_window = ack.window;
        self.peer_sacks |= !ack.sack.is_empty();
        let in_flight = self.pipe();
        let mut sack = SackBlocks::new();
        for &(start, end) in ack.sack.iter() {
            if start < end && start >= ack.ack && end <= self.snd_nxt {
                sack.push((start, end));
            }
        }
        let newly_sacked = self.board.apply_sack(&sack);
        let mut acked_bytes = newly_sacked;
        let mut ended_recovery = false;

        if ack.ack > self.snd_una {
            let cumulative = self.board.ack_cumulative(ack.ack);
            acked_bytes += cumulative.newly_acked;
            self.snd_una = ack.ack;
            self.dupacks = 0;
            // RFC 6582 §3.2 step 5: deflate the window by the data newly acknowledged (those
            // bytes left the pipe with the cumulative ACK, so they no longer count as departed).
            self.departed_by_dupacks = self
                .departed_by_dupacks
                .saturating_sub(cumulative.newly_acked);
            // RFC 6298 §3 (Karn): sample only segments sent once.
            let rtt_sample = cumulative
                .rtt_sent_at
                .map(|sent| now.saturating_since(sent));
            if let Some(r) = rtt_sample {
                self.rtt.sample(r);
            }
            if self.in_recovery {
                if self.recover.is_some_and(|r| self.snd_una >= r) {
                    // RFC 6582 §3.2 step 3: a full ACK ends fast recovery.
                    self.in_recovery = false;
                    self.departed_by_dupacks = 0;
                    ended_recovery = true;
                    self.cc.on_recovery_end(now);
                    self.restart_timer(now);
                } else {
                    // RFC 6582 §3.2 step 5: a partial ACK; resend the first unacknowledged
                    // segment, and reset the timer on the first partial ACK only ("Impatient").
                    if self.board.mark_first_lost() {
                        self.resend_now = true;
                    }
                    if !self.partial_ack_seen {
                        self.partial_ack_seen = true;
                        self.restart_timer(now);
                    }
                }
            } else {
                // RFC 6298 §5.2-5.3.
                self.restart_timer(now);
            }
            let sample = AckSample {
                now,
                acked_bytes,
                rtt: rtt_sample,
                srtt: self.rtt.srtt(),
                min_rtt: self.rtt.min_rtt(),
                in_flight,
            };
            if self.in_recovery || ended_recovery {
                self.cc.on_ack_in_recovery(&sample);
            } else if acked_bytes > 0 {
                self.cc.on_ack(&sample);
            }
        } else if ack.len == 0 && self.snd_nxt > self.snd_una {
            // RFC 5681 §2: a duplicate ACK.
            self.dupacks += 1;
            if self.in_recovery && !self.peer_sacks {
                // Without SACK each duplicate ACK stands for a segment that left the network
                // (RFC 6582 §3.2 step 4: the window inflation of fast recovery).
                self.departed_by_dupacks += self.mss();
            }
        }

        let first_lost_by_sack = newly_sacked > 0 && self.board.mark_lost_by_sack();
        let may_enter = match self.recover {
            Some(r) => self.snd_una >= r,
            None => true,
        };
        if !self.in_recovery
            && may_enter
            && (self.dupacks >= DUP_THRESH as u32 || first_lost_by_sack)
        {
            self.enter_recovery(now);
        }
    }

    /// RFC 5681 §3.2 / RFC 6675 §5 step 4: fast retransmit and enter fast recovery.
    fn enter_recovery(&mut self, now: Time) {
        self.in_recovery = true;
        self.partial_ack_seen = false;
        self.fast_retransmits += 1;
        // RFC 6582 §3.2 step 2: recover = highest sequence sent.
        self.recover = Some(self.snd_nxt);
        // RFC 5681 §3.1 eq. (4) uses FlightSize, the data outstanding.
        self.cc
            .on_congestion_event(now, self.snd_nxt - self.snd_una);
        self.board.mark_first_lost();
        self.board.mark_lost_by_sack();
        self.resend_now = true;
        if !self.peer_sacks {
            // RFC 6582 §3.2 step 3: the three duplicate ACKs stand for three segments gone.
            self.departed_by_dupacks = u64::from(self.dupacks) * self.mss();
        }
    }

    fn restart_timer(&mut self, now: Time) {
        self.rto_deadline = if self.board.is_empty() {
            None
        } else {
            Some(now + self.rtt.rto())
        };
    }

    /// When the retransmission timer expires, if it runs.
    pub fn poll_timeout(&self) -> Option<Time> {
        self.rto_deadline
    }

    /// Fire the retransmission timer if it is due at `now`.
    pub fn handle_timeout(&mut self, now: Time) {
        match self.rto_deadline {
            Some(deadline) if deadline <= now => {}
            _ => return,
        }
        if self.board.is_empty() {
            self.rto_deadline = None;
            return;
        }
        self.timeouts += 1;
        // RFC 5681 §3.1: ssthresh from FlightSize, cwnd to one segment.
        self.cc
            .on_retransmission_timeout(now, self.snd_nxt - self.snd_una);
        // RFC 6582 §3.2 step 4 (and §4): no fast retransmit for data sent before the timeout.
        self.recover = Some(self.snd_nxt);
        self.in_recovery = false;
        self.dupacks = 0;
        self.departed_by_dupacks = 0;
        // RFC 6298 §5.4: resend the earliest unacknowledged segment; the others SACK did not
        // cover follow as the window opens again.
        self.board.mark_all_lost();
        self.resend_now = true;
        // RFC 6298 §5.5-5.6: back off and restart the timer.
        self.rtt.back_off();
        self.rto_deadline = Some(now + self.rtt.rto());
    }

    /// Counters and state.
    pub fn stats(&self) -> TcpSenderStats {
        TcpSenderStats {
            segments_sent: self.segments_sent,
            retransmissions: self.retransmissions,
            timeouts: self.timeouts,
            fast_retransmits: self.fast_retransmits,
            cwnd: self.cc.cwnd(),
            ssthresh: self.cc.ssthresh(),
            srtt: self.rtt.srtt(),
            bytes_acked: self.snd_una,
            pipe: self.pipe(),
            in_recovery: self.in_recovery,
        }
    }

    /// The current retransmission timeout (backed off).
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }

    /// The congestion control, for variant-specific inspection.
    pub fn congestion_control(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
}
