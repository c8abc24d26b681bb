//! What a sender believes of its receiver's reports (RFC 5348 §9: a receiver that reports a
//! smaller loss event rate or a larger receive rate than it saw makes the sender outrun the
//! path).
//!
//! The sender keeps its own loss history from the SACK ranges: the packets they acknowledge,
//! ascending, with their send times in place of arrival times (RFC 5348 §5.1-5.4 applied on the
//! sender, as RFC 4342 §8.6 lets a DCCP sender compute p from the receiver's loss intervals).
//! Numbers the sender never sent (RFC 9000 §21.4 skips) or sent as path MTU probes (RFC 8899
//! §4.4) count as arrived, so only the receiver is left to wonder about them: skips need not be
//! announced. The rate follows the smaller of this p and the receiver's: the receiver's also
//! counts the skipped numbers as lost, ours also counts packets whose acknowledgement was lost
//! with a feedback (ranges slide out of later ones). A receiver reporting far below ours for long
//! is lying, and the connection closes. Its receive rate X_recv is capped at 1.25 times what was
//! acknowledged over the last RTT.
//!
//! The judgement uses a second history of the same packets whose losses group into events over
//! SRTT + 4 RTTVAR (RFC 6298 §2.3) rather than one RTT: the receiver groups by arrival times
//! (RFC 5348 §5.2), which jitter on the path and its scheduler move closer together than the send
//! times (a receiver taking a burst of packets at once sees their losses as one event), so an
//! honest receiver may count far fewer events than the send times show, never fewer than the
//! send times show apart by more than the RTT and the delay's variation.
//!
//! Only a byte stream's acknowledgements show every packet that crossed the path: its flow
//! control keeps the receiver from ever refusing one. A message receiver may refuse fragments
//! for room (left out of its SACK ranges so they come again), which no loss history of the
//! sender could tell from losses; there the receiver's p is believed, skips are announced, and
//! only X_recv is capped.

use crate::cc::tfrc::equation;
use crate::cc::tfrc::loss_history::LossHistory;
use crate::ec::sack::SentPacket;
use crate::rate::Rate;
use crate::time::{Duration, Time};
use std::collections::VecDeque;

/// Numbers remembered as never sent or probes, not yet passed by an acknowledgement.
const MAX_NOT_LOSSES: usize = 64;

/// Acknowledgement totals remembered, one per feedback.
const MAX_ACK_SAMPLES: usize = 32;

/// The receive rate a receiver may report, as a multiple of what was acknowledged in the last
/// RTT (an honest X_recv and the acknowledged rate measure the same bytes half an RTT apart;
/// the slack covers the difference while the rate grows).
const X_RECV_SLACK: f64 = 1.25;

/// A reported p below ours by this factor is a lie (an honest receiver's p is at least ours: it
/// also counts skipped numbers as lost).
const LIE_FACTOR: f64 = 4.0;

/// Loss events of our own history before reports are judged (the first interval is synthetic).
const MIN_EVENTS: u64 = 3;

/// Consecutive lying feedbacks that close the connection.
const MAX_LIES: u32 = 8;

/// The sender's view of the receiver's honesty.
#[derive(Debug, Clone, Default)]
pub(crate) struct ReceiverCheck {
    /// Whether the sender's own loss history stands for the receiver's p (byte streams).
    own_loss_history: bool,
    /// Whether the receiver's reports are judged and capped (`Config::check_receiver`); a
    /// history kept only for a delegation group (module `delegation`) judges nothing.
    judging: bool,
    history: LossHistory,
    /// The same packets, their losses grouped over the judging window (module doc): the fewest
    /// loss events an honest receiver can count.
    judged: LossHistory,
    /// Skipped and probe numbers above every acknowledged one, ascending.
    not_losses: VecDeque<u64>,
    /// Highest number fed to the history.
    fed: Option<u64>,
    /// (when, bytes acknowledged so far) at recent feedbacks, oldest first.
    acked: VecDeque<(Time, u64)>,
    acked_total: u64,
    /// The latest capped receive rate (for the first loss interval).
    x_recv: Rate,
    /// Consecutive feedbacks whose reported p was a lie.
    lies: u32,
}

impl ReceiverCheck {
    /// A check for a byte stream (`own_loss_history`: the rate follows the sender's own loss
    /// history) or for messages (only X_recv is capped).
    pub(crate) fn new(own_loss_history: bool) -> Self {
        ReceiverCheck {
            own_loss_history,
            judging: true,
            ..ReceiverCheck::default()
        }
    }

    /// The sender's own loss history of a byte stream alone, for a delegation group on a
    /// connection that does not check its receiver: reports pass unjudged and uncapped.
    pub(crate) fn history_only() -> Self {
        ReceiverCheck {
            own_loss_history: true,
            judging: false,
            ..ReceiverCheck::default()
        }
    }

    /// Whether the rate follows the sender's own loss history, so skips go unannounced.
    pub(crate) fn own_loss_history(&self) -> bool {
        self.own_loss_history
    }

    /// `number` was never sent (a skip) or was a path MTU probe: its absence is no loss.
    pub(crate) fn on_not_loss(&mut self, number: u64) {
        if self.fed.is_some_and(|fed| number <= fed) {
            return;
        }
        if self.not_losses.len() == MAX_NOT_LOSSES {
            self.not_losses.pop_front();
        }
        self.not_losses.push_back(number);
    }

    /// A feedback acknowledged `bytes` in datagrams at `now`, listed in `packets` (ascending, for
    /// a byte stream); `rtt` groups losses into events, `window` (SRTT + 4 RTTVAR) groups them
    /// for the judgement, and `segment` is TFRC's s.
    pub(crate) fn on_acked(
        &mut self,
        now: Time,
        bytes: u64,
        packets: &[SentPacket],
        (rtt, window): (Duration, Duration),
        segment: usize,
    ) {
        self.acked_total += bytes;
        let first_interval = self.first_interval(rtt, segment);
        let window = window.max(rtt);
        // Only a byte stream's reports are judged (`judge`).
        let judging = self.judging && self.own_loss_history;
        let mut feed = |number: u64, sent: Time| {
            self.history.on_packet(number, sent, rtt, first_interval);
            if judging {
                self.judged.on_packet(number, sent, window, first_interval);
            }
        };
        for packet in packets {
            while let Some(&skipped) = self.not_losses.front() {
                if skipped > packet.packet_number {
                    break;
                }
                self.not_losses.pop_front();
                feed(skipped, packet.sent);
            }
            feed(packet.packet_number, packet.sent);
            self.fed = self.fed.max(Some(packet.packet_number));
        }
        if self.acked.len() == MAX_ACK_SAMPLES {
            self.acked.pop_front();
        }
        self.acked.push_back((now, self.acked_total));
    }

    /// The synthetic first loss interval for segment size `segment` and RTT `rtt` (RFC 5348
    /// §6.3.1: the interval for which the equation gives the latest X_recv).
    fn first_interval(&self, rtt: Duration, segment: usize) -> impl FnOnce() -> f64 + Copy {
        let (s, r) = (segment as f64, rtt.as_secs_f64().max(1e-6));
        let x_recv = self.x_recv.bps() as f64 / 8.0;
        move || equation::first_loss_interval(s, r, x_recv)
    }

    /// Hold new loss events for a delegation group's decision (`LossHistory::defer_events`).
    pub(crate) fn defer_events(&mut self, on: bool) {
        self.history.defer_events(on);
    }

    /// Loss events held for a decision.
    pub(crate) fn deferred(&self) -> usize {
        self.history.deferred()
    }

    /// Count the oldest held loss event; whether one was held.
    pub(crate) fn count_deferred(&mut self, rtt: Duration, segment: usize) -> bool {
        let first = self.first_interval(rtt, segment);
        self.history.count_deferred(first)
    }

    /// The loss event rate if the oldest held loss event were counted (`None` if none is held).
    pub(crate) fn loss_event_rate_if_counted(&self, rtt: Duration, segment: usize) -> Option<f64> {
        if self.history.deferred() == 0 {
            return None;
        }
        let mut what_if = self.history.clone();
        what_if.count_deferred(self.first_interval(rtt, segment));
        Some(what_if.loss_event_rate())
    }

    /// Drop the oldest held loss event; whether one was held.
    pub(crate) fn forgive_deferred(&mut self) -> bool {
        self.history.forgive_deferred()
    }

    /// Count a loss event at `now` in another connection's place.
    pub(crate) fn take_event(&mut self, now: Time, rtt: Duration, segment: usize) {
        let first = self.first_interval(rtt, segment);
        self.history.take_event(now, first);
    }

    /// The loss event rate the acknowledgements imply (zero before the first loss event).
    pub(crate) fn loss_event_rate(&self) -> f64 {
        self.history.loss_event_rate()
    }

    /// The receiver's X_recv, capped at [`X_RECV_SLACK`] times the rate acknowledged over the
    /// last `rtt` (over all that was acknowledged, if the first feedback was less than an RTT
    /// ago), but never below one `segment` per RTT: at a few packets per RTT a feedback may
    /// acknowledge nothing new (its packet lost, a duplicate arrived), and a cap of zero would
    /// drive an honest sender to TFRC's floor and keep it there.
    pub(crate) fn cap_x_recv(
        &mut self,
        now: Time,
        reported: Rate,
        rtt: Duration,
        segment: usize,
    ) -> Rate {
        let Some(&(_, total)) = self.acked.back().filter(|_| self.judging) else {
            return reported;
        };
        let since = now - rtt;
        let (t0, bytes0) = self
            .acked
            .iter()
            .rev()
            .find(|(t, _)| *t <= since)
            .or(self.acked.front())
            .copied()
            .unwrap_or((now, total));
        let span = now.saturating_since(t0).max(rtt);
        let acked_rate = (total - bytes0) as f64 * 8.0 / span.as_secs_f64().max(1e-6);
        let floor = segment as f64 * 8.0 / rtt.as_secs_f64().max(1e-6);
        let cap = Rate::from_bps((acked_rate * X_RECV_SLACK).max(floor) as u64);
        self.x_recv = reported.min(cap);
        self.x_recv
    }

    /// Judge a reported loss event rate against ours; the reason to close once the receiver kept
    /// reporting far less loss than its own acknowledgements show (byte streams only).
    pub(crate) fn judge(&mut self, reported: f64) -> Option<String> {
        if !self.own_loss_history || !self.judging {
            return None;
        }
        let ours = self.judged.loss_event_rate();
        if self.judged.loss_events() >= MIN_EVENTS && reported * LIE_FACTOR < ours {
            self.lies += 1;
        } else {
            self.lies = 0;
        }
        (self.lies >= MAX_LIES).then(|| {
            format!(
                "the receiver reports a loss event rate of {reported:.6} where its \
                 acknowledgements show {ours:.6} ({MAX_LIES} feedbacks in a row)"
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::tfrc::loss_history::LossHistory;
    use crate::ec::sack::SentChunk;

    fn sent(number: u64, ms: u64) -> SentPacket {
        SentPacket {
            packet_number: number,
            sent: Time::ZERO + Duration::from_millis(ms),
            size: 1000,
            chunk: SentChunk::Empty,
        }
    }

    /// Packets 0..n sent 1 ms apart, acknowledged except those in `lost`.
    fn acked(n: u64, lost: &[u64]) -> Vec<SentPacket> {
        (0..n)
            .filter(|k| !lost.contains(k))
            .map(|k| sent(k, k))
            .collect()
    }

    #[test]
    fn losses_the_sacks_show_make_loss_events_and_skips_do_not() {
        let rtt = Duration::from_millis(10);
        let now = Time::ZERO + Duration::from_secs(1);
        // Losses 100 ms apart (each its own event), every 100th packet.
        let lost: Vec<u64> = (1..10).map(|k| k * 100).collect();
        let mut check = ReceiverCheck::new(true);
        let packets = acked(1000, &lost);
        check.on_acked(now, 1000 * packets.len() as u64, &packets, (rtt, rtt), 1000);
        let p = check.loss_event_rate();
        assert!((0.008..0.012).contains(&p), "p = {p}");
        // The same gaps as skipped numbers are no loss at all.
        let mut check = ReceiverCheck::new(true);
        for &n in &lost {
            check.on_not_loss(n);
        }
        let packets = acked(1000, &lost);
        check.on_acked(now, 1000 * packets.len() as u64, &packets, (rtt, rtt), 1000);
        assert_eq!(check.loss_event_rate(), 0.0);
    }

    #[test]
    fn a_receiver_hiding_its_losses_is_caught_and_an_honest_one_is_not() {
        let rtt = Duration::from_millis(10);
        let lost: Vec<u64> = (1..10).map(|k| k * 100).collect();
        let mut liar = ReceiverCheck::new(true);
        let packets = acked(1000, &lost);
        liar.on_acked(
            Time::ZERO,
            1000 * packets.len() as u64,
            &packets,
            (rtt, rtt),
            1000,
        );
        let ours = liar.loss_event_rate();
        let mut honest = liar.clone();
        for _ in 0..MAX_LIES - 1 {
            assert_eq!(liar.judge(0.0), None);
            assert_eq!(honest.judge(ours * 1.3), None);
        }
        let reason = liar.judge(0.0).expect("caught");
        assert!(
            reason.contains("reports a loss event rate of 0.000000"),
            "{reason}"
        );
        assert_eq!(
            honest.judge(ours * 0.5),
            None,
            "within the factor is no lie"
        );
    }

    #[test]
    fn a_receiver_taking_its_packets_in_bursts_is_no_liar_and_one_hiding_them_still_is() {
        // Packets sent 1 ms apart, every tenth lost: by send times a loss event every 10 packets
        // (RTT 8 ms). The receiver is scheduled once every 60 ms and stamps each burst with one
        // arrival time, so its own history (RFC 5348 §5.2, by arrival) sees one event a burst.
        let rtt = Duration::from_millis(8);
        let lost: Vec<u64> = (0..300).map(|k| 10 * k + 5).collect();
        let packets = acked(3000, &lost);
        let mut receiver = LossHistory::new();
        for p in &packets {
            let burst = p.packet_number / 60 * 60;
            let at = Time::ZERO + Duration::from_millis(burst + 60);
            receiver.on_packet(p.packet_number, at, rtt, || 1000.0);
        }
        let reported = receiver.loss_event_rate();
        // Jitter of that size shows in the RTT samples: RTTVAR near 13 ms, RTO 60 ms.
        let window = Duration::from_millis(60);
        let mut check = ReceiverCheck::new(true);
        check.on_acked(Time::ZERO, 1000 * 2700, &packets, (rtt, window), 1000);
        let by_send_times = check.loss_event_rate();
        assert!(
            reported * LIE_FACTOR < by_send_times,
            "the bursts hide events: {reported} against {by_send_times}"
        );
        for _ in 0..2 * MAX_LIES {
            assert_eq!(check.judge(reported), None, "{reported}");
        }
        let mut liar = check.clone();
        for _ in 0..MAX_LIES - 1 {
            assert_eq!(liar.judge(reported / 2.0 / LIE_FACTOR), None);
        }
        assert!(liar.judge(reported / 2.0 / LIE_FACTOR).is_some());
    }

    #[test]
    fn the_reported_receive_rate_is_capped_by_what_was_acknowledged() {
        let rtt = Duration::from_millis(100);
        let mut check = ReceiverCheck::new(true);
        // 1000 bytes acknowledged every 10 ms: 800 kbit/s.
        for k in 0..50u64 {
            let now = Time::ZERO + Duration::from_millis(10 * k);
            check.on_acked(now, 1000, &[sent(k, 10 * k)], (rtt, rtt), 1000);
        }
        let now = Time::ZERO + Duration::from_millis(490);
        let capped = check.cap_x_recv(now, Rate::from_mbps(10_000), rtt, 1000);
        assert!(
            capped >= Rate::from_kbps(950) && capped <= Rate::from_kbps(1050),
            "{capped}"
        );
        // An honest report passes untouched.
        assert_eq!(
            check.cap_x_recv(now, Rate::from_kbps(790), rtt, 1000),
            Rate::from_kbps(790)
        );
    }
}
