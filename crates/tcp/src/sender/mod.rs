//! A bulk TCP sender as a sans-IO state machine: it always has data, sends what the window
//! allows, and recovers losses by fast retransmit / fast recovery (NewReno partial ACKs, RFC 6582,
//! steered by the SACK scoreboard as in RFC 6675) or by the retransmission timer (RFC 6298).
//!
//! It can be steered from outside, as a host-level controller needs (loss delegation between the
//! connections of one host): it reports its congestion signals, recovery ends and round trips as
//! [`TcpEvent`]s; under [`LossPolicy::Defer`] it leaves the window reduction of a fast retransmit
//! to the caller, who applies it ([`TcpSender::apply_deferred_reduction`]) or absorbs it; and
//! [`TcpSender::reduce`] makes it back off in another connection's place.

mod ns3;
mod prr;
mod rate;
mod rate_halving;

use super::ecn::EcnSender;
use super::rtt::RttEstimator;
use super::scoreboard::{Delivered, Scoreboard, TxState, DUP_THRESH};
use super::EcnFlags;
use super::{
    AckSample, CaState, CcRttSample, CongestionControl, RateSample, Recovery, RoundSample,
    RttSample, SackBlocks, Segment, TcpConfig,
};
use qstp_proto::{Duration, Rate, Time};
use std::collections::VecDeque;

/// What one ACK acknowledged, as the steps of [`TcpSender::on_ack`] pass it on.
#[derive(Debug, Clone, Copy, Default)]
struct Acked {
    /// Bytes newly acknowledged, cumulatively or by SACK.
    bytes: u64,
    /// Of them, bytes newly SACKed.
    newly_sacked: u64,
    /// Whether the cumulative ACK covers a retransmitted segment.
    retransmission_acked: bool,
    /// Whether the SACK blocks newly cover a retransmitted segment.
    resent_sacked: bool,
    /// Whether it ended a fast recovery.
    ended_recovery: bool,
    /// The newest segment it delivered, for the delivery-rate sample.
    newest: Option<Delivered>,
}

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
    /// [`LossPolicy::Defer`] for a signal that finds the window below this many bytes, and
    /// [`LossPolicy::React`] for one that does not: a caller that decides beforehand (Free &
    /// Stunts paper §II-B: a Free delegates only while its Stunts' windows sum to more than
    /// its own) leaves the sender nothing to send on a window it should have reduced while the
    /// caller has not yet looked.
    DeferBelow(u64),
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
    /// With [`RttSample::Timed`], the segment being timed: the end of its bytes and when it was
    /// sent.
    timed: Option<(u64, Time)>,
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
    /// ns-2's header-only first segment ([`TcpConfig::ns2_syn`]): still to send, and when it
    /// left while unacknowledged (it then takes a segment of the window).
    ns2_syn_due: bool,
    ns2_syn_out: Option<Time>,
    /// ECN's sender state (RFC 3168 §6.1).
    ecn: EcnSender,
    /// Delivery-rate sampling, for a control that sets its window from it
    /// ([`CongestionControl::cong_control`]); `None` for the others.
    rate: Option<rate::DeliveryRate>,
}

impl TcpSender {
    /// A sender with `config`, controlled by `cc`.
    pub fn new(config: TcpConfig, mut cc: Box<dyn CongestionControl>) -> Self {
        let mss = u64::from(config.mss.max(1));
        let config_handshake = config.handshake;
        let config_ns2_syn = config.ns2_syn && !config.handshake;
        let config_ecn = config.ecn;
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
        let rate = cc.cong_control().then(rate::DeliveryRate::default);
        TcpSender {
            rate,
            rtt: RttEstimator::new(config.initial_rto, config.min_rto, config.max_rto)
                .with_rule(config.rto),
            timed: None,
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
            ns2_syn_due: config_ns2_syn,
            ns2_syn_out: None,
            ecn: EcnSender::new(config_ecn),
        }
    }

    fn mss(&self) -> u64 {
        u64::from(self.config.mss.max(1))
    }

    /// RFC 6675 pipe, less what duplicate ACKs without SACK blocks say has left.
    fn pipe(&self) -> u64 {
        // ns-2's header-only first segment takes one segment of the window until acknowledged.
        let syn = if self.ns2_syn_out.is_some() {
            self.mss()
        } else {
            0
        };
        self.board.pipe().saturating_sub(self.departed_by_dupacks) + syn
    }

    /// Whether the window has room for `len` more bytes (always for a first segment in flight).
    fn window_allows(&self, len: u64) -> bool {
        let pipe = self.pipe();
        if self.rate.is_some() {
            // A `cong_control` module's window holds in recovery too (Linux tcp_cwnd_test).
            return pipe == 0 || pipe + len <= self.cc.cwnd();
        }
        if self.rate_halving() {
            return pipe == 0 || self.rate_halving_allows(pipe, len);
        }
        if self.in_recovery && self.config.recovery != Recovery::Rfc6675 {
            // RFC 6937 §3: in recovery, send what the ACKs' sndcnt allows.
            return pipe == 0 || len <= self.prr_sndcnt;
        }
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
            syn: false,
            ecn: EcnFlags::default(),
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
        self.rate_halving_after_send();
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
        if std::mem::take(&mut self.ns2_syn_due) {
            // ns-2.35 tcp.cc:699-705: seqno 0 carries no data, only the 40-byte header.
            self.ns2_syn_out = Some(now);
            self.arm_timer(now);
            return Some(Segment {
                syn: true,
                ..self.data_segment(0, 0, false)
            });
        }
        if let Some(head) = self.ns3_resend_head(now) {
            return Some(head);
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
            self.check_app_limited();
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
        if self.config.rtt_sample == RttSample::Timed && self.timed.is_none() {
            // ns-2.35 tcp.cc:780-786: time this new segment if none is being timed.
            self.timed = Some((self.snd_nxt, now));
        }
        let tx = self.tx_state(now);
        self.board.push_sent(seq, self.config.mss.max(1), now, tx);
        self.segments_sent += 1;
        self.arm_timer(now);
        self.count_prr_out(mss);
        let mut segment = self.data_segment(seq, self.config.mss.max(1), false);
        segment.ecn = self.ecn.data_flags(false);
        Some(segment)
    }

    /// Send the segment at `seq` (`len` bytes) again: the scoreboard and counters note it, and
    /// the timer starts if it is not running.
    fn retransmit(&mut self, seq: u64, len: u32, now: Time) -> Segment {
        let tx = self.tx_state(now);
        self.board.resent_with(seq, now, self.snd_nxt, tx);
        self.segments_sent += 1;
        self.retransmissions += 1;
        self.arm_timer(now);
        let mut segment = self.data_segment(seq, len, true);
        segment.ecn = self.ecn.data_flags(true);
        segment
    }

    /// The delivery state a segment sent now carries, when rates are sampled.
    fn tx_state(&mut self, now: Time) -> TxState {
        let nothing_outstanding = self.board.is_empty();
        match &mut self.rate {
            Some(rate) => rate.on_send(now, nothing_outstanding),
            None => TxState::default(),
        }
    }

    /// draft-cheng-iccrg-delivery-rate-estimation-02 §3.4 (Linux tcp_rate_check_app_limited):
    /// no new data, nothing lost awaiting a resend, and room in the window: the sender is
    /// application-limited until what is in flight is delivered.
    fn check_app_limited(&mut self) {
        let pipe = self.pipe();
        if let Some(rate) = &mut self.rate {
            if pipe < self.cc.cwnd() && self.board.next_resend().is_none() {
                rate.mark_app_limited(pipe);
            }
        }
    }

    /// Hand a `cong_control` module its delivery-rate sample for this ACK, after loss detection
    /// (Linux tcp_ack: tcp_rate_gen, then tcp_cong_control).
    fn feed_rate_sample(
        &mut self,
        now: Time,
        acked: &Acked,
        rtt: Option<Duration>,
        prior_in_flight: u64,
        lost_before: u64,
    ) {
        let min_rtt = self.rtt.min_rtt();
        let Some(rate) = &mut self.rate else {
            return;
        };
        let sample = rate.on_ack(now, acked.bytes, acked.newest, min_rtt);
        let state = if self.in_loss {
            CaState::Loss
        } else if self.in_recovery {
            CaState::Recovery
        } else {
            CaState::Open
        };
        let rs = RateSample {
            now,
            delivered_total: rate.delivered(),
            delivered_time: rate.delivered_time(),
            prior_delivered: sample.prior_delivered,
            delivered: sample.delivered,
            interval: sample.interval,
            is_app_limited: sample.is_app_limited,
            acked_sacked: acked.bytes,
            losses: self.board.lost_total() - lost_before,
            lost_total: self.board.lost_total(),
            prior_in_flight,
            in_flight: self.pipe(),
            rtt,
            srtt: self.rtt.srtt(),
            state,
            next_departure: self.next_send_at,
            header_bytes: self.config.header_bytes,
        };
        self.cc.on_rate_sample(&rs);
        if self.cc.mark_app_limited() {
            let pipe = self.pipe();
            if let Some(rate) = &mut self.rate {
                rate.mark_app_limited(pipe);
            }
        }
    }

    /// Seed the control's own random choices (a flow's random stream gives it).
    pub fn seed_control(&mut self, seed: u64) {
        self.cc.seed(seed);
    }

    /// RFC 6298 §5.1: start the timer when sending if it is not running.
    fn arm_timer(&mut self, now: Time) {
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }

    /// Process an acknowledgement: the cumulative ACK or a duplicate (RFC 5681, RFC 6582), the
    /// SACK blocks (RFC 6675), the control fed, then loss detection and recovery.
    pub fn on_ack(&mut self, now: Time, ack: &Segment) {
        if ack.ack > self.snd_nxt || ack.ack < self.snd_una {
            // Acknowledges data never sent, or is older than what we know: ignore.
            return;
        }
        if ack.syn || !self.established {
            self.on_syn_ack(now, ack);
            return;
        }
        self.cc.on_sequence(ack.ack, self.snd_nxt);
        self.peer_window = ack.window;
        self.peer_sacks |= !ack.sack.is_empty();
        let advanced = ack.ack > self.snd_una;
        if advanced {
            // ns-2 acknowledges its header-only first segment with the data after it (seqno 0
            // comes before them); its own ACK was lost or is late, and gives no sample.
            self.ns2_syn_out = None;
        }
        let in_flight = self.pipe();
        let cumulative_advance = ack.ack.saturating_sub(self.snd_una);
        let mut sack = SackBlocks::new();
        for &(start, end) in ack.sack.iter() {
            if start < end && start >= ack.ack && end <= self.snd_nxt {
                sack.push((start, end));
            }
        }
        let lost_before = self.board.lost_total();
        let sacked = self.board.apply_sack(&sack);
        let newly_sacked = sacked.newly_sacked;
        let mut acked = Acked {
            bytes: newly_sacked,
            newly_sacked,
            newest: sacked.newest,
            resent_sacked: sacked.resent_sacked,
            ..Acked::default()
        };
        // The control's RTT sample: the cumulative one if any, else the newest segment SACKed
        // (ns-2.35's TCP/Linux: none from a SACK, tcp-linux.cc:374).
        let mut cc_rtt = sacked
            .rtt_sent_at
            .filter(|_| self.config.cc_rtt_sample == CcRttSample::Karn)
            .map(|sent| now.saturating_since(sent));
        if advanced {
            self.on_cumulative_ack(now, ack.ack, &mut acked, &mut cc_rtt);
        } else if ack.len == 0 && self.snd_nxt > self.snd_una && !self.not_a_dupack(&acked) {
            self.on_duplicate_ack();
        }
        self.feed_control(now, &acked, cc_rtt, in_flight, advanced, cumulative_advance);
        self.end_round_if_due(now);
        self.detect_loss(now, &acked, advanced);
        self.react_to_ece(now, ack);
        if self.rate.is_some() {
            self.feed_rate_sample(now, &acked, cc_rtt, in_flight, lost_before);
        }
        if self.config.recovery == Recovery::RateHalving {
            // ns-2.35's TCP/Linux renews the timer on every ACK (tcp-linux.cc:168, :226).
            self.restart_timer(now);
        }
    }

    /// The SYN-ACK: the connection is open, and its round trip is the first RTT sample unless
    /// the SYN was resent (RFC 6298 §3, Karn; ns-3 tcp-socket-base.cc ProcessSynSent and Linux
    /// both measure it). A second SYN-ACK, or an ACK before the first, is ignored.
    fn on_syn_ack(&mut self, now: Time, ack: &Segment) {
        if ack.syn && self.established {
            if let Some(sent) = self.ns2_syn_out {
                self.on_ns2_syn_acked(now, now.saturating_since(sent));
            }
            return;
        }
        if ack.syn && !self.established {
            self.established = true;
            self.rto_deadline = None;
            self.peer_window = ack.window;
            if let (Some(sent), false) = (self.syn_sent_at, self.syn_resent) {
                let (una, nxt) = (self.snd_una, self.snd_nxt);
                self.rtt.sample_acked(now.saturating_since(sent), una, nxt);
            }
        }
    }

    /// The ACK of ns-2's header-only first segment, an ordinary ACK there (tcp-linux.cc recv):
    /// one segment acknowledged, the estimator's sample and the control's (`pkts_acked`).
    fn on_ns2_syn_acked(&mut self, now: Time, rtt: Duration) {
        let in_flight = self.pipe();
        self.ns2_syn_out = None;
        let (una, nxt) = (self.snd_una, self.snd_nxt);
        self.rtt.sample_acked(rtt, una, nxt);
        let acked = Acked {
            bytes: self.mss(),
            ..Acked::default()
        };
        self.feed_control(now, &acked, Some(rtt), in_flight, true, 0);
    }

    /// An ACK that advances `snd_una` to `ack_no`: the scoreboard, the duplicate count, the RTT
    /// samples, and the end of a fast recovery (full ACK) or its next step (partial ACK).
    fn on_cumulative_ack(
        &mut self,
        now: Time,
        ack_no: u64,
        acked: &mut Acked,
        cc_rtt: &mut Option<Duration>,
    ) {
        let cumulative = self.board.ack_cumulative(ack_no);
        acked.bytes += cumulative.newly_acked;
        acked.retransmission_acked = cumulative.retransmission_acked;
        acked.newest = Delivered::newest(acked.newest, cumulative.newest);
        self.snd_una = ack_no;
        if !self.ns3_count_sacking_ack(acked) {
            self.dupacks = 0;
        }
        // RFC 6582 §3.2 step 5: deflate the window by the data newly acknowledged (those bytes
        // left the pipe with the cumulative ACK, so they no longer count as departed).
        self.departed_by_dupacks = self
            .departed_by_dupacks
            .saturating_sub(cumulative.newly_acked);
        // RFC 6298 §3 (Karn): sample only segments sent once.
        let rtt_sample = cumulative
            .rtt_sent_at()
            .map(|sent| now.saturating_since(sent));
        // The estimator's sample: the same, or with RttSample::Oldest that of the first segment
        // acknowledged (ns-3 tcp-socket-base.cc EstimateRtt: m_history.front()).
        let estimator_sample = match self.config.rtt_sample {
            RttSample::Newest => rtt_sample,
            RttSample::Oldest => cumulative
                .oldest_sent_at
                .map(|sent| now.saturating_since(sent)),
            // ns-2.35 tcp-linux.cc:210-222: the timed segment is acknowledged.
            RttSample::Timed => match self.timed {
                Some((end, sent)) if ack_no >= end => {
                    self.timed = None;
                    Some(now.saturating_since(sent))
                }
                _ => None,
            },
        };
        if let Some(r) = estimator_sample {
            self.rtt.sample_acked(r, self.snd_una, self.snd_nxt);
        }
        match self.config.cc_rtt_sample {
            CcRttSample::Karn => {
                if let Some(r) = rtt_sample {
                    *cc_rtt = Some(r);
                }
            }
            // ns-2.35 tcp-linux.cc:379: `tss[tcph->seqno() % tss_size_]`, the latest send time
            // of the highest segment the ACK covers; none when the ACK is "unsure"
            // (tcp-linux.cc:376): it covers a retransmitted segment that no SACK had covered
            // (scoreboard1.cc:84-89) or SACKs one (scoreboard1.cc:197-199).
            CcRttSample::Ns2 => {
                let unsure = cumulative.retransmission_acked || acked.resent_sacked;
                *cc_rtt = cumulative
                    .last_sent_at
                    .filter(|_| !unsure)
                    .map(|sent| now.saturating_since(sent));
            }
        }
        if !self.in_recovery {
            // RFC 6298 §5.2-5.3.
            self.restart_timer(now);
        } else if self.recover.is_some_and(|r| self.snd_una >= r) {
            self.on_full_ack(now);
            acked.ended_recovery = true;
        } else {
            self.on_partial_ack(now);
        }
    }

    /// RFC 6582 §3.2 step 3: a full ACK ends fast recovery.
    fn on_full_ack(&mut self, now: Time) {
        self.in_recovery = false;
        if self.config.ns2_clear_scoreboard {
            // ns-2.35 tcp-linux.cc:460-462: the recovery ends with the scoreboard cleared.
            self.board.clear_sack_state();
        }
        self.dupacks = 0;
        self.departed_by_dupacks = 0;
        if self.reduced_this_recovery {
            self.cc.on_recovery_end(now);
            self.rate_halving_on_exit();
        } else {
            // The reduction was deferred and never applied: absorbed.
            self.absorbed += 1;
        }
        self.push_event(TcpEvent::RecoveryEnd {
            now,
            cwnd: self.cc.cwnd(),
        });
        self.restart_timer(now);
    }

    /// RFC 6582 §3.2 step 5: a partial ACK in fast recovery resends the first unacknowledged
    /// segment and resets the timer.
    fn on_partial_ack(&mut self, now: Time) {
        if !self.ns3_partial_ack() && self.board.mark_first_lost() {
            self.resend_now = true;
        }
        if self.peer_sacks && self.config.recovery != Recovery::PrrNs3 {
            // RFC 6298 §5.3: an ACK of new data restarts the timer. RFC 6675 loss recovery keeps
            // to it, as Linux does (tcp_ack -> tcp_rearm_rto on every ACK that acknowledges
            // data, which ns-2's TCP/Linux runs too).
            self.restart_timer(now);
        } else if !self.partial_ack_seen {
            // RFC 6582 §3.2 step 5: without SACK, reset the timer on the first partial ACK only
            // ("Impatient"); ns-3 3.44 does the same with SACK (tcp-socket-base.cc ProcessAck:
            // `NewAck(ackNumber, m_isFirstPartialAck)`).
            self.partial_ack_seen = true;
            self.restart_timer(now);
        }
    }

    /// Whether an ACK that does not advance is no duplicate ACK: with SACK, only one that SACKs
    /// data not SACKed before counts (RFC 6675 §2), not the ACK of a segment the receiver
    /// already had (a spurious retransmission's). Linux and ns-2.35's TCP/Linux enter recovery
    /// from their SACK scoreboards alone (tcp-linux.cc:483, FLAG_DATA_LOST), ns-3 3.44 by the
    /// same rule (tcp-socket-base.cc ProcessAck: `isDupack = scoreboardUpdated`).
    fn not_a_dupack(&self, acked: &Acked) -> bool {
        self.peer_sacks && acked.newly_sacked == 0
    }

    /// RFC 5681 §2: a duplicate ACK.
    fn on_duplicate_ack(&mut self) {
        if !self.ns3_dupack_in_loss_state() {
            self.dupacks += 1;
        }
        if self.in_recovery && !self.peer_sacks {
            // Without SACK each duplicate ACK stands for a segment that left the network
            // (RFC 6582 §3.2 step 4: the window inflation of fast recovery).
            self.departed_by_dupacks += self.mss();
        }
    }

    /// Hand the control what this ACK acknowledged, with the round's RTT samples.
    fn feed_control(
        &mut self,
        now: Time,
        acked: &Acked,
        cc_rtt: Option<Duration>,
        in_flight: u64,
        advanced: bool,
        cumulative_advance: u64,
    ) {
        if let Some(r) = cc_rtt {
            self.round.sample(r);
        }
        self.round.acked += acked.bytes;
        // The bytes the control's increase gets: those newly acknowledged, unless ns-3's socket
        // rules count otherwise on the ACK that ends a timeout's loss state.
        let mut cc_acked = acked.bytes;
        let mut left_loss = false;
        let was_in_loss = self.in_loss;
        if let Some(r) = self.recover.filter(|&r| self.in_loss && self.snd_una >= r) {
            self.in_loss = false;
            if self.config.ns2_clear_scoreboard {
                // ns-2.35 tcp-linux.cc:460-462: the Loss state ends the way a recovery does.
                self.board.clear_sack_state();
            }
            self.cc.on_loss_end(now);
            if let Some(bytes) = self.ns3_acked_leaving_loss(r) {
                left_loss = true;
                cc_acked = bytes;
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
        if self.in_recovery || acked.ended_recovery {
            if acked.bytes > 0 || cc_rtt.is_some() {
                self.cc.on_ack_in_recovery(&sample);
            }
            if acked.ended_recovery && self.reduced_this_recovery {
                self.cc.on_recovery_exit_ack(now, cumulative_advance);
            }
        } else if advanced && (acked.bytes > 0 || left_loss) {
            // ns-3 calls its control on that ACK even with no segment to count (PktsAcked,
            // IncreaseWindow with segsAcked = 0); its PktsAcked still in CA_LOSS
            // (tcp-socket-base.cc:2228).
            if was_in_loss {
                self.cc.on_ack_in_loss(&sample);
            } else {
                self.cc.on_ack(&sample);
            }
        }
    }

    /// After an ACK: segments SACK says are lost, entry into fast recovery (RFC 5681 §3.2: three
    /// duplicate ACKs; RFC 6675 §5: or SACK), and what the recovery lets out next.
    fn detect_loss(&mut self, now: Time, acked: &Acked, advanced: bool) {
        let new_sack = acked.newly_sacked > 0;
        let first_lost_by_sack = new_sack && self.board.mark_lost_by_sack();
        if self.config.lost_retransmit && new_sack {
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
        self.rate_halving_after_ack();
        if self.config.recovery != Recovery::PrrNs3 {
            self.update_prr(acked.bytes);
        } else if self.in_recovery {
            self.update_prr_ns3(acked, was_in_recovery, advanced, pipe_before);
        }
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

    /// RFC 5681 §3.2 / RFC 6675 §5 step 4: fast retransmit and enter fast recovery.
    fn enter_recovery(&mut self, now: Time) {
        self.rate_halving_on_entry();
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
        let deferred = match self.policy {
            LossPolicy::React => false,
            LossPolicy::Defer => true,
            LossPolicy::DeferBelow(bound) => self.cc.cwnd() < bound,
        };
        self.push_event(TcpEvent::CongestionSignal {
            now,
            signal: Signal::FastRetransmit,
            cwnd: self.cc.cwnd(),
            in_flight: self.recovery_flight,
            deferred,
        });
        self.reduced_this_recovery = false;
        self.ecn.on_loss_reduction(self.snd_nxt);
        self.board.mark_first_lost();
        self.board.mark_lost_by_sack();
        self.resend_now = true;
        self.resend_head = self.ns3_head_to_resend();
        if self.config.recovery != Recovery::PrrNs3 {
            // The fast retransmission gets a whole RTO to be acknowledged: Linux rearms the timer
            // when it resends the first unacknowledged segment (tcp_xmit_retransmit_queue), and
            // ns-2 on a fast retransmit (tcp-newreno.cc and tcp-sack1.cc `reset_rtx_timer`).
            // Left running from the last new ACK (RFC 6298 §5.1 starts it only when it is not
            // running), the timer fires before that ACK can arrive once the RTO is close to the
            // RTT. ns-3's recovery keeps the lab's ns-3 rules unchanged.
            self.restart_timer(now);
        }
        if !self.peer_sacks {
            // RFC 6582 §3.2 step 3: the three duplicate ACKs stand for three segments gone.
            self.departed_by_dupacks = u64::from(self.dupacks) * self.mss();
        }
        // The pipe once the first unacknowledged segment is deemed lost, for ns-3's socket
        // rules ([`TcpSender::reduction_in_flight`]).
        self.recovery_pipe = self.pipe();
        if !deferred {
            self.apply_deferred_reduction(now);
        }
    }

    /// RFC 3168 §6.1.2: ECE reduces the window as a loss would (the control's congestion event),
    /// at most once per window and not during a loss recovery, without resending anything.
    fn react_to_ece(&mut self, now: Time, ack: &Segment) {
        if self
            .ecn
            .on_ack(ack, self.in_recovery || self.in_loss, self.snd_nxt)
        {
            let flight = self.snd_nxt - self.snd_una;
            self.cc.on_congestion_event(now, flight);
            self.cc.on_recovery_end(now);
        }
    }

    /// Window reductions made for ECN-Echo (RFC 3168 §6.1.2).
    pub fn ecn_reductions(&self) -> u64 {
        self.ecn.reductions()
    }

    /// Apply the window reduction of the current fast recovery, if it has not been yet (under
    /// [`LossPolicy::Defer`] the caller decides; returns whether it was applied now).
    pub fn apply_deferred_reduction(&mut self, now: Time) -> bool {
        if !self.in_recovery || self.reduced_this_recovery {
            return false;
        }
        self.reduced_this_recovery = true;
        self.cc.on_congestion_event(now, self.reduction_in_flight());
        true
    }

    /// Back off as after a congestion signal of its own, at another sender's request (a host
    /// controller delegating a loss); outside recovery the reduction takes effect at once.
    ///
    /// Free & Stunts paper §II-B: "we halve each one's congestion window". The halving is of the
    /// window, and it never raises it: the sender's own rule, half the flight (RFC 5681 eq. 4),
    /// would lift a window below half its flight, as after a timeout (one segment, the old
    /// flight still outstanding), and the Stunt would then send more for the Free's loss.
    pub fn reduce(&mut self, now: Time) {
        self.external_reductions += 1;
        let before = self.cc.cwnd();
        let flight = (self.snd_nxt - self.snd_una).min(before);
        self.cc.on_congestion_event(now, flight);
        if self.in_recovery {
            self.reduced_this_recovery = true;
        } else {
            self.cc.on_recovery_end(now);
        }
        if self.cc.cwnd() > before {
            self.cc.on_moderate(before);
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
        // An unanswered header-only first segment is not sent again; its window slot is freed.
        self.ns2_syn_out = None;
        if self.board.is_empty() {
            self.rto_deadline = None;
            return;
        }
        self.timeouts += 1;
        // ns-2.35 tcp.cc:972 (reset_rtx_timer): a timeout ends the timing (Karn).
        self.timed = None;
        self.push_event(TcpEvent::CongestionSignal {
            now,
            signal: Signal::Timeout,
            cwnd: self.cc.cwnd(),
            in_flight: self.snd_nxt - self.snd_una,
            deferred: false,
        });
        // RFC 5681 §3.1: ssthresh from FlightSize, cwnd to one segment.
        self.cc
            .on_retransmission_timeout(now, self.timeout_in_flight());
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

    /// RTT measurements taken so far and the latest (zero before the first).
    pub fn latest_rtt(&self) -> (u64, Duration) {
        self.rtt.latest()
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
