//! A bulk TCP sender as a sans-IO state machine: it always has data, sends what the window
//! allows, and recovers losses by fast retransmit / fast recovery (NewReno partial ACKs, RFC 6582,
//! steered by the SACK scoreboard as in RFC 6675) or by the retransmission timer (RFC 6298).
//!
//! It can be steered from outside, as a host-level controller needs (loss delegation between the
//! connections of one host): it reports its congestion signals, recovery ends and round trips as
//! [`TcpEvent`]s; under [`LossPolicy::Defer`] it leaves the window reduction of a fast retransmit
//! to the caller, who applies it ([`TcpSender::apply_deferred_reduction`]) or absorbs it; and
//! [`TcpSender::reduce`] makes it back off in another connection's place.

use super::rtt::RttEstimator;
use super::scoreboard::{Scoreboard, DUP_THRESH};
use super::{
    AckSample, CongestionControl, Recovery, RoundSample, RttSample, SackBlocks, Segment, TcpConfig,
};
use qstp_proto::{Duration, Rate, Time};
use std::collections::VecDeque;

/// Most events held for [`TcpSender::poll_event`]; older ones are dropped (and counted) when a
/// caller records events without reading them.
pub const MAX_EVENTS: usize = 64;

/// What a congestion signal was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Loss detected by duplicate ACKs or SACK (fast retransmit, RFC 5681 §3.2).
    FastRetransmit,
    /// The retransmission timer expired (RFC 6298 §5.5).
    Timeout,
}

/// Who reacts to the sender's fast-retransmit congestion signals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossPolicy {
    /// The sender reduces its own window, as standard TCP does.
    #[default]
    React,
    /// The sender retransmits and recovers but leaves the window alone; the caller reads the
    /// [`TcpEvent::CongestionSignal`] and calls [`TcpSender::apply_deferred_reduction`] or
    /// absorbs the signal. Timeouts always reduce.
    Defer,
}

/// Something the sender reports to a host-level controller.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TcpEvent {
    /// A congestion signal.
    CongestionSignal {
        /// When.
        now: Time,
        /// Its kind.
        signal: Signal,
        /// Congestion window before any reduction, bytes.
        cwnd: u64,
        /// Data outstanding (FlightSize), bytes.
        in_flight: u64,
        /// Whether the reduction was left to the caller ([`LossPolicy::Defer`]).
        deferred: bool,
    },
    /// Fast recovery ended.
    RecoveryEnd {
        /// When.
        now: Time,
        /// Congestion window after it, bytes.
        cwnd: u64,
    },
    /// A round trip ended.
    Round {
        /// When.
        now: Time,
        /// Congestion window, bytes.
        cwnd: u64,
        /// Smoothed RTT.
        srtt: Duration,
        /// Bytes acknowledged during the round over its duration.
        delivery_rate: Rate,
    },
}

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
    /// Bytes acknowledged per second over the last round trip.
    pub delivery_rate: Rate,
    /// Reductions made at another sender's request ([`TcpSender::reduce`]).
    pub external_reductions: u64,
    /// Fast-retransmit signals whose reduction was deferred and never applied.
    pub absorbed: u64,
    /// Events dropped because nobody read them.
    pub events_dropped: u64,
}

/// RTT samples and bytes of the round under way.
#[derive(Debug, Clone, Copy, Default)]
struct RoundStats {
    start: Time,
    acked: u64,
    min_rtt: Option<Duration>,
    max_rtt: Option<Duration>,
    samples: u32,
}

impl RoundStats {
    fn sample(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        self.max_rtt = Some(self.max_rtt.map_or(rtt, |m| m.max(rtt)));
        self.samples += 1;
    }
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
    /// A timeout's loss state (ns-3 `CA_LOSS`): from the timeout until `recover` is acknowledged.
    in_loss: bool,
    /// Send the next retransmission whatever the pipe (the fast retransmit itself, RFC 6675 §5
    /// step 4.3, and the retransmission after a timeout, RFC 6298 §5.4).
    resend_now: bool,
    /// [`Recovery::PrrNs3`]: send the next segment, a retransmission or else new data, whatever
    /// the window (ns-3's `DoRetransmit` on a partial ACK).
    send_now: bool,
    /// [`Recovery::PrrNs3`]: the first unacknowledged segment, already resent, to send again as
    /// the fast retransmit of the recovery just entered (ns-3's `EnterRecovery` sends the head
    /// whatever its state).
    resend_head: Option<u64>,
    /// Whether a partial ACK has been seen in this recovery (RFC 6582 §3.2 step 5, "Impatient").
    partial_ack_seen: bool,
    /// In recovery without SACK information: bytes that duplicate ACKs say left the network.
    departed_by_dupacks: u64,
    /// Whether the peer ever sent a SACK block (RFC 2018).
    peer_sacks: bool,
    rto_deadline: Option<Time>,
    policy: LossPolicy,
    /// Whether the window was reduced in the current recovery.
    reduced_this_recovery: bool,
    /// FlightSize when the current recovery began (RFC 5681 eq. (4); RFC 6937's RecoverFS).
    recovery_flight: u64,
    /// The pipe when the current recovery began, its first segment deemed lost (the bytes in
    /// flight a control reduces from under ns-3's socket rules, [`TcpSender::ns3_socket_rules`]).
    recovery_pipe: u64,
    events: VecDeque<TcpEvent>,
    record_events: bool,
    events_dropped: u64,
    /// The round under way: it ends when this byte is cumulatively acknowledged.
    round_end: Option<u64>,
    round: RoundStats,
    delivery_rate: Rate,
    /// Earliest time of the next segment when the control paces.
    next_send_at: Time,
    /// Set when pacing held a segment back: the time to be woken.
    paced_wait: Option<Time>,
    external_reductions: u64,
    absorbed: u64,
    /// RFC 6937 state of the current recovery: data delivered and sent since it began, and the
    /// bytes this ACK lets out.
    prr_delivered: u64,
    prr_out: u64,
    prr_sndcnt: u64,
    /// [`Recovery::RateHalving`]: the ceiling on the pipe (ns-2's `next_pkts_in_flight_`), bytes.
    rh_next: u64,
    /// [`Recovery::PrrNs3`]: RecoverFS (the pipe when recovery began, 32 bits as in ns-3), and the
    /// window ns-3's `DoRecovery` last set, bytes.
    prr_recover_fs: u32,
    prr_ns3_cwnd: u64,
    segments_sent: u64,
    retransmissions: u64,
    timeouts: u64,
    fast_retransmits: u64,
    /// The application has no new data (an on/off source in an off period).
    app_paused: bool,
    /// When the last segment left, for the restart after idle (RFC 5681 §4.1).
    last_sent: Option<Time>,
    idle_restarts: u64,
    /// The opening handshake is over (from the start without [`TcpConfig::handshake`]).
    established: bool,
    /// A SYN is to be sent at the next poll.
    syn_due: bool,
    /// When the SYN was last sent, and whether it was sent more than once (Karn).
    syn_sent_at: Option<Time>,
    syn_resent: bool,
}

impl TcpSender {
    /// A sender with `config`, controlled by `cc`.
    pub fn new(config: TcpConfig, mut cc: Box<dyn CongestionControl>) -> Self {
        let mss = u64::from(config.mss.max(1));
        let config_handshake = config.handshake;
        let board = if config.lost_retransmit {
            Scoreboard::tracking_retransmissions()
        } else {
            Scoreboard::default()
        };
        // RFC 5681 §3.1: IW segments; ssthresh as high as the largest window the peer offers.
        cc.init(
            u64::from(config.initial_window.max(1)) * mss,
            config.receive_window.max(2 * mss),
        );
        TcpSender {
            rtt: RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto)
                .with_rule(config.rto),
            peer_window: config.receive_window,
            config,
            cc,
            board,
            snd_una: 0,
            snd_nxt: 0,
            dupacks: 0,
            in_recovery: false,
            recover: None,
            in_loss: false,
            resend_now: false,
            send_now: false,
            resend_head: None,
            partial_ack_seen: false,
            departed_by_dupacks: 0,
            peer_sacks: false,
            rto_deadline: None,
            policy: LossPolicy::React,
            reduced_this_recovery: false,
            recovery_flight: 0,
            recovery_pipe: 0,
            events: VecDeque::new(),
            record_events: false,
            events_dropped: 0,
            round_end: None,
            round: RoundStats::default(),
            delivery_rate: Rate::ZERO,
            next_send_at: Time::ZERO,
            paced_wait: None,
            external_reductions: 0,
            absorbed: 0,
            prr_delivered: 0,
            prr_out: 0,
            prr_sndcnt: 0,
            rh_next: 0,
            prr_recover_fs: 0,
            prr_ns3_cwnd: 0,
            segments_sent: 0,
            retransmissions: 0,
            timeouts: 0,
            fast_retransmits: 0,
            app_paused: false,
            last_sent: None,
            idle_restarts: 0,
            established: !config_handshake,
            syn_due: config_handshake,
            syn_sent_at: None,
            syn_resent: false,
        }
    }

    fn mss(&self) -> u64 {
        u64::from(self.config.mss.max(1))
    }

    /// Whether ns-3 3.44's socket rules apply around the control (see
    /// [`CongestionControl::ns3_socket`]): they are tcp-socket-base.cc's, whatever the control,
    /// so they come with ns-3's recovery ([`Recovery::PrrNs3`]) as well as with a control's
    /// ns-3-compatible variant that asks for them.
    fn ns3_socket_rules(&self) -> bool {
        self.config.recovery == Recovery::PrrNs3 || self.cc.ns3_socket()
    }

    /// RFC 6675 pipe, less what duplicate ACKs without SACK blocks say has left.
    fn pipe(&self) -> u64 {
        self.board.pipe().saturating_sub(self.departed_by_dupacks)
    }

    /// Whether the window has room for `len` more bytes (always for a first segment in flight).
    fn window_allows(&self, len: u64) -> bool {
        let pipe = self.pipe();
        if self.rate_halving() {
            // ns-2.35 tcp-linux.cc:631: send while in_flight < max(cwnd, next_pkts_in_flight_).
            return pipe == 0 || pipe + len <= self.rate_halving_window().max(self.rh_next);
        }
        if self.in_recovery && self.config.recovery != Recovery::Rfc6675 {
            // RFC 6937 §3: in recovery, send what the ACKs' sndcnt allows.
            return pipe == 0 || len <= self.prr_sndcnt;
        }
        pipe == 0 || pipe + len <= self.cc.cwnd()
    }

    /// Count a segment sent in recovery against PRR's allowance (RFC 6937 §3 prr_out).
    fn count_prr_out(&mut self, len: u64) {
        if self.in_recovery {
            self.prr_out += len;
            self.prr_sndcnt = self.prr_sndcnt.saturating_sub(len);
        }
    }

    /// ns-3 3.44 tcp-prr-recovery.cc `DoRecovery` with its 32-bit arithmetic: the window it
    /// sets, `in_flight` (`tcb->m_bytesInFlight`) plus its send count, bytes.
    fn do_recovery_ns3(
        &mut self,
        delivered: u64,
        dupack: bool,
        in_flight: u64,
        safe_ack: bool,
    ) -> u64 {
        let mss = self.mss() as u32;
        let mut delivered = delivered as u32;
        // "if (isDupAck && m_prrDelivered < m_recoveryFlightSize) deliveredBytes += mss"
        // (counted on top of the SACKed bytes: ns-3 issue #1350).
        if dupack && (self.prr_delivered as u32) < self.prr_recover_fs {
            delivered = delivered.wrapping_add(mss);
        }
        if delivered == 0 {
            return self.prr_ns3_cwnd;
        }
        self.prr_delivered = u64::from((self.prr_delivered as u32).wrapping_add(delivered));
        let prr_delivered = self.prr_delivered as u32;
        let prr_out = self.prr_out as u32;
        let ssthresh = self.cc.ssthresh().min(u64::from(u32::MAX)) as u32;
        let in_flight = in_flight.min(u64::from(u32::MAX)) as u32;
        let send_count: i32 = if in_flight > ssthresh {
            // `std::ceil(m_prrDelivered * tcb->m_ssThresh * 1.0 / m_recoveryFlightSize) -
            // m_prrOut`: the product of two uint32_t wraps before the conversion to double
            // (ns-3 issue #1282).
            let product = f64::from(prr_delivered.wrapping_mul(ssthresh));
            let fs = f64::from(self.prr_recover_fs.max(1));
            ((product / fs).ceil() - f64::from(prr_out)) as i32
        } else {
            // PRR-CRB: `std::max(m_prrDelivered - m_prrOut, deliveredBytes)` of two uint32_t
            // (wraps when more was sent than delivered), stored in an int.
            let mut limit = prr_delivered.wrapping_sub(prr_out).max(delivered) as i32;
            if safe_ack {
                limit = limit.wrapping_add(mss as i32);
            }
            limit.min(ssthresh.wrapping_sub(in_flight) as i32)
        };
        // "Force a fast retransmit upon entering fast recovery".
        let send_count = send_count.max(if prr_out > 0 { 0 } else { mss as i32 });
        // `tcb->m_cWnd = tcb->m_bytesInFlight + sendCount` (uint32_t).
        self.prr_ns3_cwnd = u64::from(in_flight.wrapping_add(send_count as u32));
        self.prr_ns3_cwnd
    }

    /// RFC 6937 §3: on an ACK during recovery, the bytes that may be sent now.
    fn update_prr(&mut self, delivered: u64) {
        if !self.in_recovery || self.config.recovery != Recovery::Prr {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = u128::from(self.pipe());
        let ssthresh = u128::from(self.cc.ssthresh());
        let sndcnt: u128 = if pipe > ssthresh {
            // Proportional part: CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let fs = u128::from(self.recovery_flight.max(1));
            (u128::from(self.prr_delivered) * ssthresh)
                .div_ceil(fs)
                .saturating_sub(u128::from(self.prr_out))
        } else {
            // PRR-SSRB: MIN(ssthresh - pipe, MAX(prr_delivered - prr_out, DeliveredData) + MSS).
            let limit = u128::from(self.prr_delivered.saturating_sub(self.prr_out))
                .max(u128::from(delivered))
                + u128::from(self.mss());
            (ssthresh - pipe).min(limit)
        };
        self.prr_sndcnt = u64::try_from(sndcnt).unwrap_or(u64::MAX);
    }

    fn data_segment(&self, seq: u64, len: u32, retransmission: bool) -> Segment {
        Segment {
            seq,
            len,
            ack: 0,
            sack: SackBlocks::new(),
            window: 0,
            retransmission,
            syn: false,
        }
    }

    /// The SYN, if one is due (RFC 9293 §3.5: nothing else goes out before the SYN-ACK).
    fn syn_segment(&mut self, now: Time) -> Option<Segment> {
        if !std::mem::take(&mut self.syn_due) {
            return None;
        }
        self.syn_sent_at = Some(now);
        // RFC 6298 §5.1: the timer runs while the SYN is unanswered.
        self.rto_deadline = Some(now + self.rtt.rto());
        Some(Segment {
            syn: true,
            ..self.data_segment(0, 0, self.syn_resent)
        })
    }

    /// Whether the opening handshake is over.
    pub fn established(&self) -> bool {
        self.established
    }

    /// Next data segment allowed now by cwnd, the peer's window and recovery; None if none.
    pub fn poll_segment(&mut self, now: Time) -> Option<Segment> {
        let pacing = self.cc.pacing_rate().filter(|r| !r.is_zero());
        if pacing.is_some() && now < self.next_send_at {
            self.paced_wait = Some(self.next_send_at);
            return None;
        }
        self.paced_wait = None;
        let segment = self.next_segment(now)?;
        if self.rate_halving() {
            // ns-2.35 tcp-linux.cc:653: next = min(next, max(in_flight - 1, 1)).
            let mss = self.mss();
            self.rh_next = self.rh_next.min(self.pipe().saturating_sub(mss).max(mss));
        }
        self.last_sent = Some(now);
        if let Some(rate) = pacing {
            let bytes = (segment.len + self.config.header_bytes) as usize;
            self.next_send_at = self.next_send_at.max(now) + rate.transmit_time(bytes);
        }
        Some(segment)
    }

    /// The next segment cwnd, the peer's window and recovery allow, pacing aside.
    fn next_segment(&mut self, now: Time) -> Option<Segment> {
        if !self.established {
            return self.syn_segment(now);
        }
        if let Some(head) = self.resend_head.take() {
            if let Some(seg) = self.board.first().filter(|s| s.seq == head) {
                // ns-3 3.44 tcp-socket-base.cc:1729 (EnterRecovery): `SendDataPacket(
                // m_highRxAckMark, ...)` resends the head even if it was resent before. It was
                // in the pipe already (ns-3's BytesInFlight counts a retransmission once), so
                // it leaves the window ns-3's PRR set as it was and only counts in `prr_out`.
                self.resend_now = false;
                self.prr_out += u64::from(seg.len);
                return Some(self.retransmit(seg.seq, seg.len, now));
            }
        }
        // RFC 6675 §5 NextSeg rule 1: segments deemed lost go before new data.
        if let Some(lost) = self.board.next_resend() {
            if !(self.resend_now || self.send_now || self.window_allows(u64::from(lost.len))) {
                return None;
            }
            self.resend_now = false;
            self.send_now = false;
            self.count_prr_out(u64::from(lost.len));
            return Some(self.retransmit(lost.seq, lost.len, now));
        }
        self.resend_now = false;
        let forced = std::mem::take(&mut self.send_now);
        if self.app_paused {
            return None;
        }
        // RFC 6675 §5 NextSeg rule 2 / RFC 5681: new data within cwnd and the peer's window.
        let mss = self.mss();
        let in_peer_window = self.snd_nxt + mss <= self.snd_una.saturating_add(self.peer_window);
        let nothing_outstanding = self.snd_nxt == self.snd_una;
        if !((forced || self.window_allows(mss)) && (in_peer_window || nothing_outstanding)) {
            return None;
        }
        let seq = self.snd_nxt;
        self.snd_nxt += mss;
        self.board.push(seq, self.config.mss.max(1), now);
        self.segments_sent += 1;
        self.arm_timer(now);
        self.count_prr_out(mss);
        Some(self.data_segment(seq, self.config.mss.max(1), false))
    }

    /// Send the segment at `seq` (`len` bytes) again: the scoreboard and counters note it, and
    /// the timer starts if it is not running.
    fn retransmit(&mut self, seq: u64, len: u32, now: Time) -> Segment {
        self.board.resent(seq, now, self.snd_nxt);
        self.segments_sent += 1;
        self.retransmissions += 1;
        self.arm_timer(now);
        self.data_segment(seq, len, true)
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
        if ack.syn || !self.established {
            // The SYN-ACK: the connection is open, and its round trip is the first RTT sample
            // unless the SYN was resent (RFC 6298 §3, Karn; ns-3 tcp-socket-base.cc
            // ProcessSynSent and Linux both measure it). A second SYN-ACK is ignored.
            if ack.syn && !self.established {
                self.established = true;
                self.rto_deadline = None;
                self.peer_window = ack.window;
                if let (Some(sent), false) = (self.syn_sent_at, self.syn_resent) {
                    let (una, nxt) = (self.snd_una, self.snd_nxt);
                    self.rtt.sample_acked(now.saturating_since(sent), una, nxt);
                }
            }
            return;
        }
        self.peer_window = ack.window;
        self.peer_sacks |= !ack.sack.is_empty();
        let in_flight = self.pipe();
        let advanced = ack.ack > self.snd_una;
        let cumulative_advance = ack.ack.saturating_sub(self.snd_una);
        let mut sack = SackBlocks::new();
        for &(start, end) in ack.sack.iter() {
            if start < end && start >= ack.ack && end <= self.snd_nxt {
                sack.push((start, end));
            }
        }
        let sacked = self.board.apply_sack(&sack);
        let newly_sacked = sacked.newly_sacked;
        let mut acked_bytes = newly_sacked;
        let mut ended_recovery = false;
        let mut retransmission_acked = false;
        // The control's RTT sample: the cumulative one if any, else the newest segment SACKed.
        let mut cc_rtt = sacked.rtt_sent_at.map(|sent| now.saturating_since(sent));

        if advanced {
            let cumulative = self.board.ack_cumulative(ack.ack);
            acked_bytes += cumulative.newly_acked;
            retransmission_acked = cumulative.retransmission_acked;
            self.snd_una = ack.ack;
            if self.config.recovery == Recovery::PrrNs3 && self.peer_sacks && newly_sacked > 0 {
                // ns-3 3.44 with SACK: an ACK that SACKs new data is a duplicate "regardless of
                // its status as a cumulative acknowledgment" (tcp-socket-base.cc:2003
                // `isDupack = scoreboardUpdated`, :2020 DupAck, which counts it outside recovery
                // and the loss state, :1745-1758), and it does not reset the count (:2065-2068;
                // the end of a recovery does, :2214).
                if !self.in_recovery && !self.in_loss {
                    self.dupacks += 1;
                }
            } else {
                self.dupacks = 0;
            }
            // RFC 6582 §3.2 step 5: deflate the window by the data newly acknowledged (those
            // bytes left the pipe with the cumulative ACK, so they no longer count as departed).
            self.departed_by_dupacks = self
                .departed_by_dupacks
                .saturating_sub(cumulative.newly_acked);
            // RFC 6298 §3 (Karn): sample only segments sent once.
            let rtt_sample = cumulative
                .rtt_sent_at
                .map(|sent| now.saturating_since(sent));
            // The estimator's sample: the same, or with RttSample::Oldest that of the first
            // segment acknowledged (ns-3 tcp-socket-base.cc EstimateRtt: m_history.front()).
            let estimator_sample = match self.config.rtt_sample {
                RttSample::Newest => rtt_sample,
                RttSample::Oldest => cumulative
                    .oldest_sent_at
                    .map(|sent| now.saturating_since(sent)),
            };
            if let Some(r) = estimator_sample {
                self.rtt.sample_acked(r, self.snd_una, self.snd_nxt);
            }
            if let Some(r) = rtt_sample {
                cc_rtt = Some(r);
            }
            if self.in_recovery {
                if self.recover.is_some_and(|r| self.snd_una >= r) {
                    // RFC 6582 §3.2 step 3: a full ACK ends fast recovery.
                    self.in_recovery = false;
                    self.dupacks = 0;
                    self.departed_by_dupacks = 0;
                    ended_recovery = true;
                    if self.reduced_this_recovery {
                        self.cc.on_recovery_end(now);
                        if self.config.recovery == Recovery::RateHalving && self.cc.reno_min_cwnd()
                        {
                            // ns-2.35 tcp-linux.cc:463-468: the window, below ssthresh, becomes
                            // ssthresh, then tcp_moderate_cwnd: at most in_flight +
                            // tcp_max_burst (3), in_flight counted on the cleared scoreboard.
                            let limit = self.snd_nxt - self.snd_una + 3 * self.mss();
                            self.cc.on_idle_restart(limit);
                        }
                    } else {
                        // The reduction was deferred and never applied: absorbed.
                        self.absorbed += 1;
                    }
                    self.push_event(TcpEvent::RecoveryEnd {
                        now,
                        cwnd: self.cc.cwnd(),
                    });
                    self.restart_timer(now);
                } else {
                    if self.config.recovery == Recovery::PrrNs3 && self.peer_sacks {
                        // ns-3 3.44 tcp-socket-base.cc:2084-2102 (ProcessAck, partial ACK in
                        // CA_RECOVERY): with SACK the head is not marked lost; unless it is a
                        // retransmission already (`IsRetransmittedDataAcked(ackNumber +
                        // segmentSize)`), `DoRetransmit` sends one segment whatever the window:
                        // `NextSeg` rule 1 (the first segment deemed lost and not yet resent),
                        // else rule 2, new data (tcp-socket-base.cc:4086-4116).
                        if !self.board.first().is_some_and(|s| s.retransmitted) {
                            self.send_now = true;
                        }
                    } else if self.board.mark_first_lost() {
                        // RFC 6582 §3.2 step 5: a partial ACK; resend the first unacknowledged
                        // segment.
                        self.resend_now = true;
                    }
                    if self.peer_sacks && self.config.recovery != Recovery::PrrNs3 {
                        // RFC 6298 §5.3: an ACK of new data restarts the timer. RFC 6675 loss
                        // recovery keeps to it, as Linux does (tcp_ack -> tcp_rearm_rto on every
                        // ACK that acknowledges data, which ns-2's TCP/Linux runs too).
                        self.restart_timer(now);
                    } else if !self.partial_ack_seen {
                        // RFC 6582 §3.2 step 5: without SACK, reset the timer on the first
                        // partial ACK only ("Impatient"); ns-3 3.44 does the same with SACK
                        // (tcp-socket-base.cc ProcessAck: `NewAck(ackNumber,
                        // m_isFirstPartialAck)`).
                        self.partial_ack_seen = true;
                        self.restart_timer(now);
                    }
                }
            } else {
                // RFC 6298 §5.2-5.3.
                self.restart_timer(now);
            }
        } else if ack.len == 0
            && self.snd_nxt > self.snd_una
            && !(self.config.recovery == Recovery::PrrNs3 && self.peer_sacks && newly_sacked == 0)
        {
            // RFC 5681 §2: a duplicate ACK. With ns-3's recovery and SACK, only one that SACKs
            // new data (tcp-socket-base.cc ProcessAck: `isDupack = scoreboardUpdated`, RFC 6675
            // §2), not the ACK of a segment the receiver already had; and none in a timeout's
            // loss state (DupAck returns in CA_LOSS, tcp-socket-base.cc:1745).
            if !(self.config.recovery == Recovery::PrrNs3 && self.in_loss) {
                self.dupacks += 1;
            }
            if self.in_recovery && !self.peer_sacks {
                // Without SACK each duplicate ACK stands for a segment that left the network
                // (RFC 6582 §3.2 step 4: the window inflation of fast recovery).
                self.departed_by_dupacks += self.mss();
            }
        }

        if let Some(r) = cc_rtt {
            self.round.sample(r);
        }
        self.round.acked += acked_bytes;
        // The bytes the control's increase gets: those newly acknowledged, except on the ACK
        // that ends a timeout's loss state under ns-3's socket rules (tcp-socket-base.cc:2226,
        // `segsAcked = (ackNumber - m_recover) / m_segmentSize`): only the whole segments above
        // the recovery point, usually none.
        let mut cc_acked = acked_bytes;
        let mut left_loss = false;
        let was_in_loss = self.in_loss;
        if let Some(r) = self.recover.filter(|&r| self.in_loss && self.snd_una >= r) {
            self.in_loss = false;
            if self.ns3_socket_rules() {
                left_loss = true;
                cc_acked = (self.snd_una - r) / self.mss() * self.mss();
            }
        }
        let sample = AckSample {
            now,
            acked_bytes: cc_acked,
            rtt: cc_rtt,
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min_rtt(),
            in_flight,
        };
        if self.in_recovery || ended_recovery {
            if acked_bytes > 0 || cc_rtt.is_some() {
                self.cc.on_ack_in_recovery(&sample);
            }
            if ended_recovery && self.reduced_this_recovery {
                self.cc.on_recovery_exit_ack(now, cumulative_advance);
            }
        } else if advanced && (acked_bytes > 0 || left_loss) {
            // ns-3 calls its control on that ACK even with no segment to count (PktsAcked,
            // IncreaseWindow with segsAcked = 0); its PktsAcked still in CA_LOSS
            // (tcp-socket-base.cc:2228).
            if was_in_loss {
                self.cc.on_ack_in_loss(&sample);
            } else {
                self.cc.on_ack(&sample);
            }
        }
        self.end_round_if_due(now);

        let first_lost_by_sack = newly_sacked > 0 && self.board.mark_lost_by_sack();
        if self.config.lost_retransmit && newly_sacked > 0 {
            // Linux tcp_mark_lost_retrans: a retransmission overtaken by later data is lost.
            self.board.mark_lost_retransmissions();
        }
        let may_enter = match self.recover {
            Some(r) => self.snd_una >= r,
            None => true,
        };
        let was_in_recovery = self.in_recovery;
        // ns-3's `m_bytesInFlight`, set before `ProcessAck`.
        let pipe_before = self.pipe();
        if !self.in_recovery
            && may_enter
            && (self.dupacks >= DUP_THRESH as u32 || first_lost_by_sack)
        {
            self.enter_recovery(now);
        }
        if self.rate_halving() {
            // ns-2.35 tcp-linux.cc:629 (send_much): next = min(next, in_flight + 1).
            self.rh_next = self.rh_next.min(self.pipe() + self.mss());
        }
        if self.config.recovery != Recovery::PrrNs3 {
            self.update_prr(acked_bytes);
        } else if self.in_recovery {
            self.update_prr_ns3(
                acked_bytes,
                was_in_recovery,
                newly_sacked > 0,
                advanced,
                pipe_before,
                retransmission_acked,
            );
        }
    }

    /// The calls of ns-3 3.44's PRR on one ACK in recovery (tcp-socket-base.cc): on entering,
    /// `EnterRecovery` (RecoverFS = `m_bytesInFlight`, after the head is marked lost) then
    /// `DoRecovery` as for a duplicate ACK; in recovery, `DupAck` calls it as for a duplicate ACK
    /// when the ACK brought new SACK information, and `ProcessAck` again on a partial ACK of a
    /// segment or more. The bytes that may be sent: the window it set less the pipe now.
    fn update_prr_ns3(
        &mut self,
        delivered: u64,
        was_in_recovery: bool,
        new_sack: bool,
        advanced: bool,
        pipe_before: u64,
        safe_ack: bool,
    ) {
        let mut in_flight = pipe_before;
        if !was_in_recovery {
            in_flight = self.pipe();
            self.prr_recover_fs = in_flight.min(u64::from(u32::MAX)) as u32;
            self.prr_ns3_cwnd = 0;
            self.do_recovery_ns3(delivered, true, in_flight, safe_ack);
        } else if new_sack {
            self.do_recovery_ns3(delivered, true, in_flight, safe_ack);
        }
        if advanced && delivered >= self.mss() {
            self.do_recovery_ns3(delivered, false, in_flight, safe_ack);
        }
        self.prr_sndcnt = self.prr_ns3_cwnd.saturating_sub(self.pipe());
    }

    /// Close the round when its last byte is acknowledged, and tell the control.
    fn end_round_if_due(&mut self, now: Time) {
        match self.round_end {
            None if self.snd_una > 0 => {}
            Some(end) if self.snd_una >= end => {
                let round = RoundSample {
                    now,
                    duration: now.saturating_since(self.round.start),
                    acked_bytes: self.round.acked,
                    min_rtt: self.round.min_rtt,
                    max_rtt: self.round.max_rtt,
                    rtt_samples: self.round.samples,
                    base_rtt: self.rtt.min_rtt(),
                    srtt: self.rtt.srtt(),
                };
                self.delivery_rate = Rate::from_bytes_over(round.acked_bytes, round.duration);
                self.cc.on_round(&round);
                self.push_event(TcpEvent::Round {
                    now,
                    cwnd: self.cc.cwnd(),
                    srtt: round.srtt,
                    delivery_rate: self.delivery_rate,
                });
            }
            _ => return,
        }
        self.round_end = Some(self.snd_nxt);
        self.round = RoundStats {
            start: now,
            ..RoundStats::default()
        };
    }

    /// In a fast recovery paced by [`Recovery::RateHalving`].
    fn rate_halving(&self) -> bool {
        self.in_recovery && self.config.recovery == Recovery::RateHalving
    }

    /// [`Recovery::RateHalving`]: the window in recovery, the control's `min_cwnd` (ns-2.35
    /// tcp-linux.cc:498-501).
    fn rate_halving_window(&self) -> u64 {
        let ssthresh = self.cc.ssthresh();
        if self.cc.reno_min_cwnd() {
            // tcp_cong.c tcp_reno_min_cwnd: snd_ssthresh / 2, in whole segments.
            let mss = self.mss();
            (ssthresh / mss / 2).max(1) * mss
        } else {
            ssthresh
        }
    }

    /// RFC 5681 §3.2 / RFC 6675 §5 step 4: fast retransmit and enter fast recovery.
    fn enter_recovery(&mut self, now: Time) {
        // ns-2.35 tcp-linux.cc:487: rate halving starts from the window before the reduction.
        self.rh_next = self.cc.cwnd();
        self.in_recovery = true;
        self.partial_ack_seen = false;
        self.fast_retransmits += 1;
        // RFC 6582 §3.2 step 2: recover = highest sequence sent.
        self.recover = Some(self.snd_nxt);
        // RFC 5681 §3.1 eq. (4) uses FlightSize, the data outstanding.
        self.recovery_flight = self.snd_nxt - self.snd_una;
        // RFC 6937 §3: RecoverFS is that same FlightSize; nothing delivered or sent yet.
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.prr_sndcnt = 0;
        let deferred = self.policy == LossPolicy::Defer;
        self.push_event(TcpEvent::CongestionSignal {
            now,
            signal: Signal::FastRetransmit,
            cwnd: self.cc.cwnd(),
            in_flight: self.recovery_flight,
            deferred,
        });
        self.reduced_this_recovery = false;
        self.board.mark_first_lost();
        self.board.mark_lost_by_sack();
        self.resend_now = true;
        // ns-3 3.44 tcp-socket-base.cc:1729 (EnterRecovery): "(4.3) Retransmit the first data
        // segment presumed dropped" is always the head, even one already resent (a segment sent
        // above the last recovery point and resent in that recovery); RFC 6675's NextSeg would
        // skip it for the next lost segment not yet resent.
        self.resend_head = None;
        if self.config.recovery == Recovery::PrrNs3 {
            self.resend_head = self.board.first().filter(|s| s.resent).map(|s| s.seq);
        }
        if !self.peer_sacks {
            // RFC 6582 §3.2 step 3: the three duplicate ACKs stand for three segments gone.
            self.departed_by_dupacks = u64::from(self.dupacks) * self.mss();
        }
        // The pipe once the first unacknowledged segment is deemed lost (ns-3 tcp-socket-base.cc
        // EnterRecovery: MarkHeadAsLost, then BytesInFlight() for GetSsThresh).
        self.recovery_pipe = self.pipe();
        if !deferred {
            self.apply_deferred_reduction(now);
        }
    }

    /// Apply the window reduction of the current fast recovery, if it has not been yet (under
    /// [`LossPolicy::Defer`] the caller decides; returns whether it was applied now).
    pub fn apply_deferred_reduction(&mut self, now: Time) -> bool {
        if !self.in_recovery || self.reduced_this_recovery {
            return false;
        }
        self.reduced_this_recovery = true;
        let in_flight = if self.ns3_socket_rules() {
            self.recovery_pipe
        } else {
            self.recovery_flight
        };
        self.cc.on_congestion_event(now, in_flight);
        true
    }

    /// Back off as after a congestion signal of its own, at another sender's request (a host
    /// controller delegating a loss); outside recovery the reduction takes effect at once.
    pub fn reduce(&mut self, now: Time) {
        self.external_reductions += 1;
        let flight = self.snd_nxt - self.snd_una;
        self.cc.on_congestion_event(now, flight);
        if self.in_recovery {
            self.reduced_this_recovery = true;
        } else {
            self.cc.on_recovery_end(now);
        }
    }

    /// Whether the application has new data to send: a paused sender only retransmits what is
    /// already in flight. On resuming after an idle period longer than the retransmission
    /// timeout, the window restarts from min(initial window, cwnd) (RFC 5681 §4.1).
    pub fn set_app_paused(&mut self, now: Time, paused: bool) {
        if self.app_paused && !paused {
            let idle = self
                .last_sent
                .is_some_and(|t| self.snd_nxt == self.snd_una && now - t > self.rtt.rto());
            if idle {
                // RFC 5681 §4.1: RW = min(IW, cwnd); ssthresh is left as it was.
                let restart = u64::from(self.config.initial_window.max(1)) * self.mss();
                self.cc.on_idle_restart(restart);
                self.idle_restarts += 1;
            }
        }
        self.app_paused = paused;
    }

    /// Times the window restarted after an idle period.
    pub fn idle_restarts(&self) -> u64 {
        self.idle_restarts
    }

    /// Who reacts to fast-retransmit congestion signals from now on.
    pub fn set_loss_policy(&mut self, policy: LossPolicy) {
        self.policy = policy;
    }

    /// Whether to keep [`TcpEvent`]s for [`TcpSender::poll_event`] (off by default).
    pub fn record_events(&mut self, on: bool) {
        self.record_events = on;
        if !on {
            self.events.clear();
        }
    }

    /// The oldest event not yet read.
    pub fn poll_event(&mut self) -> Option<TcpEvent> {
        self.events.pop_front()
    }

    fn push_event(&mut self, event: TcpEvent) {
        if !self.record_events {
            return;
        }
        if self.events.len() == MAX_EVENTS {
            self.events.pop_front();
            self.events_dropped += 1;
        }
        self.events.push_back(event);
    }

    fn restart_timer(&mut self, now: Time) {
        self.rto_deadline = if self.board.is_empty() {
            None
        } else {
            Some(now + self.rtt.rto())
        };
    }

    /// When the sender must be woken: the retransmission timer, or the end of a pacing wait.
    pub fn poll_timeout(&self) -> Option<Time> {
        match (self.rto_deadline, self.paced_wait) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fire the retransmission timer if it is due at `now` (a pacing wait that is over needs
    /// nothing but the next [`TcpSender::poll_segment`]).
    pub fn handle_timeout(&mut self, now: Time) {
        if self.paced_wait.is_some_and(|t| t <= now) {
            self.paced_wait = None;
        }
        match self.rto_deadline {
            Some(deadline) if deadline <= now => {}
            _ => return,
        }
        if !self.established {
            // RFC 6298 §5.5-5.6 for the SYN: back off and send it again.
            self.syn_due = true;
            self.syn_resent = true;
            self.rtt.back_off();
            self.rto_deadline = Some(now + self.rtt.rto());
            return;
        }
        if self.board.is_empty() {
            self.rto_deadline = None;
            return;
        }
        self.timeouts += 1;
        self.push_event(TcpEvent::CongestionSignal {
            now,
            signal: Signal::Timeout,
            cwnd: self.cc.cwnd(),
            in_flight: self.snd_nxt - self.snd_una,
            deferred: false,
        });
        // RFC 5681 §3.1: ssthresh from FlightSize, cwnd to one segment (or from the pipe before
        // the timeout, ns-3 tcp-socket-base.cc:3916 `inFlightBeforeRto = BytesInFlight()`).
        let in_flight = if self.ns3_socket_rules() {
            self.pipe()
        } else {
            self.snd_nxt - self.snd_una
        };
        self.cc.on_retransmission_timeout(now, in_flight);
        // RFC 6582 §3.2 step 4 (and §4): no fast retransmit for data sent before the timeout.
        self.recover = Some(self.snd_nxt);
        self.in_loss = true;
        self.in_recovery = false;
        self.dupacks = 0;
        self.departed_by_dupacks = 0;
        // RFC 6298 §5.4: resend the earliest unacknowledged segment; the others SACK did not
        // cover follow as the window opens again.
        self.board.mark_all_lost();
        self.resend_now = true;
        self.send_now = false;
        self.resend_head = None;
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
            delivery_rate: self.delivery_rate,
            external_reductions: self.external_reductions,
            absorbed: self.absorbed,
            events_dropped: self.events_dropped,
        }
    }

    /// Loss events so far: entries into fast recovery plus retransmission timeouts (each a
    /// congestion signal the sender reacted to, or was told to leave to someone else).
    pub fn loss_events(&self) -> u64 {
        self.fast_retransmits + self.timeouts
    }

    /// Retransmission timeouts so far (RFC 6298 §5.5 expiries of an established connection).
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Smoothed RTT (zero before the first sample).
    pub fn srtt(&self) -> Duration {
        self.rtt.srtt()
    }

    /// Congestion window, bytes.
    pub fn cwnd(&self) -> u64 {
        self.cc.cwnd()
    }

    /// The current retransmission timeout (backed off).
    pub fn rto(&self) -> Duration {
        self.rtt.rto()
    }
}
