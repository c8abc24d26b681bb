//! ns-2.35 TCP/Linux's fast recovery ([`Recovery::RateHalving`]): the window falls to the
//! module's min_cwnd under a ceiling on the pipe that halves the sending rate, then is moderated
//! at the end of recovery, as ns-2.35's tcp-linux.cc runs Linux's modules.

use super::TcpSender;
use crate::Recovery;

impl TcpSender {
    /// In a fast recovery paced by [`Recovery::RateHalving`].
    pub(super) fn rate_halving(&self) -> bool {
        self.in_recovery && self.config.recovery == Recovery::RateHalving
    }

    /// [`Recovery::RateHalving`]: the window in recovery, the control's `min_cwnd` (ns-2.35
    /// tcp-linux.cc:498-501).
    pub(super) fn rate_halving_window(&self) -> u64 {
        let ssthresh = self.cc.ssthresh();
        if self.cc.reno_min_cwnd() {
            // tcp_cong.c tcp_reno_min_cwnd: snd_ssthresh / 2, in whole segments.
            let mss = self.mss();
            (ssthresh / mss / 2).max(1) * mss
        } else {
            ssthresh
        }
    }

    /// [`Recovery::RateHalving`]: whether the window lets `len` more bytes out with `pipe` in
    /// flight (ns-2.35 tcp-linux.cc:631: send while in_flight < max(cwnd,
    /// next_pkts_in_flight_)).
    pub(super) fn rate_halving_allows(&self, pipe: u64, len: u64) -> bool {
        pipe + len <= self.rate_halving_window().max(self.rh_next)
    }

    /// Rate halving starts from the window before the reduction (ns-2.35 tcp-linux.cc:487).
    pub(super) fn rate_halving_on_entry(&mut self) {
        self.rh_next = self.cc.cwnd();
    }

    /// After a segment left in rate-halving recovery: next = min(next, max(in_flight - 1, 1))
    /// (ns-2.35 tcp-linux.cc:653).
    pub(super) fn rate_halving_after_send(&mut self) {
        if self.rate_halving() {
            let mss = self.mss();
            self.rh_next = self.rh_next.min(self.pipe().saturating_sub(mss).max(mss));
        }
    }

    /// After an ACK in rate-halving recovery: next = min(next, in_flight + 1) (ns-2.35
    /// tcp-linux.cc:629, send_much).
    pub(super) fn rate_halving_after_ack(&mut self) {
        if self.rate_halving() {
            self.rh_next = self.rh_next.min(self.pipe() + self.mss());
        }
    }

    /// At the end of a rate-halving recovery of a control with Linux's `tcp_reno_min_cwnd`: the
    /// window, below ssthresh, becomes ssthresh, then tcp_moderate_cwnd: at most in_flight +
    /// tcp_max_burst (3), in_flight counted on the cleared scoreboard (ns-2.35
    /// tcp-linux.cc:463-468).
    pub(super) fn rate_halving_on_exit(&mut self) {
        if self.config.recovery == Recovery::RateHalving && self.cc.reno_min_cwnd() {
            let limit = self.snd_nxt - self.snd_una + 3 * self.mss();
            self.cc.on_moderate(limit);
        }
    }
}
