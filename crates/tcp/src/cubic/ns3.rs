//! CUBIC as ns-3 3.44's `TcpCubic` computes it (src/internet/model/tcp-cubic.cc), for
//! comparisons with ns-3: `congestion = { name = "cubic", ns3 = 1 }`. The default `cubic` is RFC
//! 9438's; this is Linux's older `bictcp_update` arithmetic as ns-3 ported it, with ns-3's own
//! choices:
//! - windows in whole segments, the cubic target truncated to whole segments (`Update`: `uint32_t
//!   delta, bicTarget`), aimed one *smallest* RTT ahead (`t = now + m_delayMin - m_epochStart`),
//!   turned into `cnt`, the segments to acknowledge per one-segment increase
//!   (`segCwnd / (bicTarget - segCwnd)`, `100 * segCwnd` at or below the target, at least 2);
//! - the increase counter `m_cWndCnt` keeps what one increase leaves over (`m_cWndCnt -= cnt`),
//!   at most one segment per ACK, and is never reset, so segments acknowledged while the window
//!   sits at its target are credit for later (`IncreaseWindow`);
//! - TCP friendliness counts segments into a Reno window with the Linux scale 15/8 per segment
//!   (`(segCwnd * scale) >> 3`), 0.53 segments per RTT throughout (no switch to 1 past W_max);
//! - fast convergence compares with the last *reduced* maximum, as Linux `tcp_cubic.c`
//!   (`GetSsThresh`: `segCwnd < m_lastMaxCwnd`), not with the last window at loss (RFC 8312
//!   §4.6's W_last_max, which the default follows);
//!   W_max and ssthresh are truncated to whole segments;
//! - slow start counts bytes (`m_cWnd += segmentsAcked * m_segmentSize`);
//! - HyStart as `HystartUpdate`: an ACK train lasting longer than the smallest RTT, or a round's
//!   RTT above the smallest by the smallest RTT itself clamped to [4 ms, 1 s]
//!   (`HystartDelayThresh(m_delayMin)`, not Linux's eighth of it); once found it stays found
//!   until a timeout; RTT samples within 10 ms of an epoch's start are ignored (`PktsAcked`);
//! - every RTT it sees is the smoothed RTT (tcp-socket-base.cc hands `m_srtt` to `PktsAcked`);
//! - a timeout forgets the origin, K, the Reno window, the smallest RTT and HyStart's finding but
//!   not W_max (`CongestionStateSet(CA_LOSS)` -> `CubicReset`, `HystartReset`);
//! - the ACK that ends fast recovery grows the window by its whole cumulative advance
//!   (tcp-socket-base.cc `ProcessAck` -> `IncreaseWindow`).
//!
//! Not reproduced: `m_isCwndLimited` (the lab's bulk senders always fill the window) and ns-3's
//! PRR window at a timeout during recovery (here the window then is ssthresh, where PRR ends).

use crate::{AckSample, CongestionControl, RoundSample};
use qstp_proto::{Duration, Time};

/// tcp-cubic.cc attribute `HyStartLowWindow`: 16 segments.
const HYSTART_LOW_WINDOW: u64 = 16;
/// tcp-cubic.cc attribute `HyStartMinSamples`: 8.
const HYSTART_MIN_SAMPLES: u32 = 8;
/// tcp-cubic.cc attribute `HyStartAckDelta`: ACKs at most 2 ms apart make a train.
const HYSTART_ACK_DELTA: Duration = Duration::from_millis(2);
/// tcp-cubic.cc attributes `HyStartDelayMin` (4 ms) and `HyStartDelayMax` (1000 ms).
const HYSTART_DELAY_MIN: Duration = Duration::from_millis(4);
const HYSTART_DELAY_MAX: Duration = Duration::from_millis(1000);
/// tcp-cubic.cc attribute `CubicDelta`: RTT samples this soon after an epoch starts are ignored.
const CUBIC_DELTA: Duration = Duration::from_millis(10);
/// tcp-cubic.cc attribute `CntClamp`: before any loss, at least 5 % growth per RTT.
const CNT_CLAMP: u64 = 20;

/// ns-3 3.44's `TcpCubic`.
#[derive(Debug, Clone)]
pub struct Ns3Cubic {
    mss: u64,
    c: f64,
    beta: f64,
    fast_convergence: bool,
    hystart: bool,
    /// Window and threshold, bytes (`m_cWnd`, `m_ssThresh`).
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged but not yet a whole segment (tcp-socket-base.cc
    /// `m_bytesAckedNotProcessed`).
    bytes_not_processed: u64,
    /// Segments acknowledged towards the next one-segment increase (`m_cWndCnt`).
    cwnd_cnt: u64,
    /// W_max, segments (`m_lastMaxCwnd`).
    last_max: u64,
    /// The epoch's origin point, segments, and K, seconds (`m_bicOriginPoint`, `m_bicK`).
    origin: u64,
    k: f64,
    /// Smallest smoothed RTT (`m_delayMin`).
    delay_min: Option<Duration>,
    /// Start of the epoch (`m_epochStart`).
    epoch_start: Option<Time>,
    /// Segments acknowledged in the epoch towards the Reno window, and that window, segments
    /// (`m_ackCnt`, `m_tcpCwnd`).
    ack_cnt: u64,
    tcp_cwnd: u64,
    /// HyStart: the slow-start exit was found (`m_found`).
    found: bool,
    /// HyStart: start of the round and the last ACK of the train (`m_roundStart`, `m_lastAck`).
    round_start: Option<Time>,
    last_ack: Option<Time>,
    /// HyStart: the smallest of this round's first samples, and their count (`m_currRtt`,
    /// `m_sampleCnt`).
    curr_rtt: Option<Duration>,
    sample_cnt: u32,
    /// The round ended: the next slow-start ACK starts a new one (`m_lastAckedSeq > m_endSeq`).
    round_ended: bool,
}

impl Ns3Cubic {
    /// ns-3's CUBIC for segments of `mss` bytes.
    pub fn new(mss: u32, c: f64, beta: f64, fast_convergence: bool, hystart: bool) -> Self {
        let mss = u64::from(mss.max(1));
        Ns3Cubic {
            mss,
            c,
            beta,
            fast_convergence,
            hystart,
            cwnd: 2 * mss,
            ssthresh: u64::MAX,
            bytes_not_processed: 0,
            cwnd_cnt: 0,
            last_max: 0,
            origin: 0,
            k: 0.0,
            delay_min: None,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            found: false,
            round_start: None,
            last_ack: None,
            curr_rtt: None,
            sample_cnt: 0,
            round_ended: true,
        }
    }

    /// `tcb->GetCwndInSegments()`.
    fn seg_cwnd(&self) -> u64 {
        self.cwnd / self.mss
    }

    /// tcp-socket-base.cc `ProcessAck`: segments acknowledged, the remainder carried over.
    fn segments_acked(&mut self, bytes: u64) -> u64 {
        let mut segments = bytes / self.mss;
        self.bytes_not_processed += bytes % self.mss;
        if self.bytes_not_processed >= self.mss {
            segments += 1;
            self.bytes_not_processed -= self.mss;
        }
        segments
    }

    /// tcp-cubic.cc `HystartReset`.
    fn hystart_reset(&mut self, now: Time) {
        self.round_start = Some(now);
        self.last_ack = Some(now);
        self.curr_rtt = None;
        self.sample_cnt = 0;
        self.round_ended = false;
    }

    /// tcp-cubic.cc `PktsAcked`, with ns-3's smoothed RTT.
    fn pkts_acked(&mut self, sample: &AckSample) {
        let rtt = sample.srtt;
        if rtt.is_zero() {
            // No RTT measured yet (ns-3's handshake always gives one before data).
            return;
        }
        // "Discard delay samples right after fast recovery".
        if self
            .epoch_start
            .is_some_and(|e| sample.now.saturating_since(e) < CUBIC_DELTA)
        {
            return;
        }
        if self.delay_min.map_or(true, |d| d > rtt) {
            self.delay_min = Some(rtt);
        }
        if self.hystart && self.cwnd <= self.ssthresh && self.cwnd >= HYSTART_LOW_WINDOW * self.mss
        {
            self.hystart_update(sample.now, rtt);
        }
    }

    /// tcp-cubic.cc `HystartUpdate` (detection `BOTH`: ACK train and delay).
    fn hystart_update(&mut self, now: Time, delay: Duration) {
        if self.found {
            return;
        }
        let delay_min = self.delay_min.unwrap_or(delay);
        if let (Some(last), Some(start)) = (self.last_ack, self.round_start) {
            if now.saturating_since(last) <= HYSTART_ACK_DELTA {
                self.last_ack = Some(now);
                if now.saturating_since(start) > delay_min {
                    self.found = true;
                }
            }
        }
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.curr_rtt = Some(self.curr_rtt.map_or(delay, |c| c.min(delay)));
            self.sample_cnt += 1;
        } else if self.curr_rtt.is_some_and(|c| {
            // HystartDelayThresh(m_delayMin): the smallest RTT itself, within [4 ms, 1 s].
            c > delay_min + delay_min.clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX)
        }) {
            self.found = true;
        }
        if self.found {
            self.ssthresh = self.cwnd;
        }
    }

    /// tcp-cubic.cc `IncreaseWindow`.
    fn increase_window(&mut self, now: Time, mut segments: u64) {
        if self.cwnd < self.ssthresh {
            if self.hystart && self.round_ended {
                self.hystart_reset(now);
            }
            // Byte counting in slow start ("approximate the effect of QUICKACK").
            self.cwnd += segments * self.mss;
            segments = 0;
        }
        if self.cwnd >= self.ssthresh && segments > 0 {
            self.cwnd_cnt += segments;
            let cnt = self.update(now, segments);
            if self.cwnd_cnt >= cnt {
                self.cwnd += self.mss;
                self.cwnd_cnt -= cnt;
            }
        }
    }

    /// tcp-cubic.cc `Update`: segments to acknowledge per one-segment increase.
    fn update(&mut self, now: Time, segments: u64) -> u64 {
        let seg_cwnd = self.seg_cwnd();
        self.ack_cnt += segments;
        let epoch = match self.epoch_start {
            Some(e) => e,
            None => {
                self.ack_cnt = segments;
                self.tcp_cwnd = seg_cwnd;
                if self.last_max <= seg_cwnd {
                    self.k = 0.0;
                    self.origin = seg_cwnd;
                } else {
                    self.k = ((self.last_max - seg_cwnd) as f64 / self.c).powf(1.0 / 3.0);
                    self.origin = self.last_max;
                }
                self.epoch_start = Some(now);
                now
            }
        };
        let t = (now + self.delay_min.unwrap_or(Duration::ZERO))
            .saturating_since(epoch)
            .as_secs_f64();
        let offs = (t - self.k).abs();
        // `uint32_t delta = m_c * std::pow(offs, 3)`: truncated.
        let delta = (self.c * offs * offs * offs) as u64;
        let target = if t < self.k {
            self.origin.saturating_sub(delta)
        } else {
            self.origin + delta
        };
        let mut cnt = if target > seg_cwnd {
            seg_cwnd / (target - seg_cwnd)
        } else {
            100 * seg_cwnd
        };
        if self.last_max == 0 && cnt > CNT_CLAMP {
            cnt = CNT_CLAMP;
        }
        // TCP friendliness: one Reno segment per scale/8 windows of segments acknowledged.
        let scale =
            (8.0 * (1024.0 + self.beta * 1024.0) / 3.0 / (1024.0 - self.beta * 1024.0)) as u64;
        let per = ((seg_cwnd * scale) >> 3).max(1);
        while self.ack_cnt > per {
            self.ack_cnt -= per;
            self.tcp_cwnd += 1;
        }
        if self.tcp_cwnd > seg_cwnd {
            let max_cnt = seg_cwnd / (self.tcp_cwnd - seg_cwnd);
            cnt = cnt.min(max_cnt);
        }
        // "The maximum rate of cwnd increase CUBIC allows is 1 packet per 2 packets ACKed".
        cnt.max(2)
    }

    /// tcp-cubic.cc `GetSsThresh`: W_max with fast convergence, the new ssthresh, bytes.
    fn get_ssthresh(&mut self) -> u64 {
        let seg_cwnd = self.seg_cwnd();
        self.last_max = if seg_cwnd < self.last_max && self.fast_convergence {
            // `(segCwnd * (1 + m_beta)) / 2` stored in a uint32_t.
            (seg_cwnd as f64 * (1.0 + self.beta) / 2.0) as u64
        } else {
            seg_cwnd
        };
        self.epoch_start = None;
        ((seg_cwnd as f64 * self.beta) as u64).max(2) * self.mss
    }
}

impl CongestionControl for Ns3Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, initial_cwnd: u64, initial_ssthresh: u64) {
        self.cwnd = initial_cwnd.max(self.mss);
        self.ssthresh = initial_ssthresh.max(2 * self.mss);
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        self.cwnd = self.cwnd.min(restart_window.max(self.mss));
    }

    fn cwnd(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, sample: &AckSample) {
        // tcp-socket-base.cc ProcessAck: PktsAcked, then IncreaseWindow.
        self.pkts_acked(sample);
        let segments = self.segments_acked(sample.acked_bytes);
        self.increase_window(sample.now, segments);
    }

    fn on_ack_in_recovery(&mut self, sample: &AckSample) {
        // In recovery ns-3 calls PktsAcked only.
        self.pkts_acked(sample);
        self.segments_acked(sample.acked_bytes);
    }

    fn on_round(&mut self, _round: &RoundSample) {
        self.round_ended = true;
    }

    fn on_congestion_event(&mut self, _now: Time, _in_flight: u64) {
        self.ssthresh = self.get_ssthresh();
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Time) {
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_exit_ack(&mut self, now: Time, advanced: u64) {
        // `segsAcked = (ackNumber - oldHeadSequence) / m_segmentSize`, no remainder kept.
        self.increase_window(now, advanced / self.mss);
    }

    fn on_retransmission_timeout(&mut self, now: Time, _in_flight: u64) {
        self.ssthresh = self.get_ssthresh();
        // CongestionStateSet(CA_LOSS): CubicReset and HystartReset; W_max is kept.
        self.origin = 0;
        self.k = 0.0;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.delay_min = None;
        self.found = false;
        self.hystart_reset(now);
        self.cwnd = self.mss;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn ack(now: Time, segments: u64, srtt_ms: u64) -> AckSample {
        AckSample {
            now,
            acked_bytes: segments * MSS,
            rtt: Some(Duration::from_millis(srtt_ms)),
            srtt: Duration::from_millis(srtt_ms),
            min_rtt: Duration::from_millis(srtt_ms),
            in_flight: 0,
        }
    }

    fn at_s(secs: f64) -> Time {
        Time::ZERO + Duration::from_secs_f64(secs)
    }

    fn at(w: u64) -> Ns3Cubic {
        let mut cc = Ns3Cubic::new(MSS as u32, 0.4, 0.7, true, true);
        cc.init(w * MSS, 2 * MSS);
        cc
    }

    #[test]
    fn fast_convergence_compares_with_the_reduced_maximum() {
        let mut cc = at(100);
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!((cc.last_max, cc.ssthresh()), (100, 70 * MSS));
        // Lost at 90 < 100: W_max = 90 * 1.7 / 2 = 76.5 -> 76; ssthresh 90 * 0.7 is
        // 62.99999999999999 in doubles, truncated to 62 as in ns-3.
        cc.cwnd = 90 * MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!((cc.last_max, cc.ssthresh()), (76, 62 * MSS));
        // Lost at 80: above the reduced 76 (RFC 8312 would compare with 90 and reduce again).
        cc.cwnd = 80 * MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        assert_eq!((cc.last_max, cc.ssthresh()), (80, 56 * MSS));
    }

    #[test]
    fn the_target_is_whole_segments_one_smallest_rtt_ahead() {
        let mut cc = at(100);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.on_recovery_end(Time::ZERO);
        // Smallest srtt 200 ms, the current one larger: t = now + 200 ms - epoch.
        cc.on_ack(&ack(Time::ZERO, 2, 200));
        cc.on_ack(&ack(at_s(1.0), 2, 260));
        assert_eq!(cc.delay_min, Some(Duration::from_millis(200)));
        // K = cbrt(30 / 0.4) = 4.217 s; at t = 1.2 s delta = (uint32) 0.4 * 3.017^3 = 10, target
        // 90, cnt = 70 / (90 - 70) = 3.
        assert!((cc.k - 75f64.cbrt()).abs() < 1e-9);
        assert_eq!(cc.update(at_s(1.0), 0), 3);
        // Near K the target is W_max exactly: at or below it, 100 * segCwnd.
        cc.cwnd = 100 * MSS;
        let near_k = at_s(cc.k - 0.2);
        assert_eq!(cc.update(near_k, 0), 100 * 100);
    }

    #[test]
    fn the_increase_counter_keeps_its_credit() {
        let mut cc = at(100);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.on_recovery_end(Time::ZERO);
        // Segments acknowledged at a plateau (cnt = 100 segCwnd) are credit: 3000 of them.
        cc.cwnd_cnt = 3000;
        // Just after the epoch starts (t = 0.2 s, target 75): cnt = 70 / 5 = 14, 71 / 4 = 17,
        // 72 / 3 = 24, 73 / 2 = 36, each paid from the credit, one segment per ACK.
        for i in 0..4 {
            cc.on_ack(&ack(Time::ZERO + Duration::from_millis(i), 2, 200));
        }
        assert_eq!(cc.cwnd(), 74 * MSS);
        assert_eq!(cc.cwnd_cnt, 3000 + 8 - 14 - 17 - 24 - 36);
        // One short of the target: cnt = 74; at it, 100 segCwnd = 7500, more than the credit.
        cc.on_ack(&ack(Time::ZERO + Duration::from_millis(5), 2, 200));
        assert_eq!(cc.cwnd(), 75 * MSS);
        cc.on_ack(&ack(Time::ZERO + Duration::from_millis(6), 2, 200));
        assert_eq!(cc.cwnd(), 75 * MSS);
    }

    #[test]
    fn slow_start_counts_bytes_and_the_recovery_exit_ack_counts_its_whole_advance() {
        let mut cc = Ns3Cubic::new(MSS as u32, 0.4, 0.7, true, false);
        cc.init(10 * MSS, u64::MAX);
        cc.on_ack(&ack(Time::ZERO, 2, 200));
        assert_eq!(cc.cwnd(), 12 * MSS);
        cc.cwnd = 100 * MSS;
        cc.on_congestion_event(Time::ZERO, 0);
        cc.on_recovery_end(Time::ZERO);
        // 50 segments at once: cnt = 70 / (75 - 70) = 14 at t = 0.2 s, one increase per ACK.
        cc.on_recovery_exit_ack(Time::ZERO, 50 * MSS + 10);
        assert_eq!((cc.cwnd(), cc.cwnd_cnt), (71 * MSS, 50 - 14));
    }

    #[test]
    fn the_reno_window_grows_by_one_per_fifteen_eighths_of_a_window() {
        let mut cc = at(100);
        cc.on_congestion_event(Time::ZERO, 0);
        cc.on_recovery_end(Time::ZERO);
        cc.last_max = 70; // K = 0: no cubic growth yet.
        cc.on_ack(&ack(Time::ZERO, 1, 200));
        // scale = (uint32) 15.1 = 15: one Reno segment per 70 * 15 >> 3 = 131 segments.
        cc.update(Time::ZERO, 131);
        assert_eq!(cc.tcp_cwnd, 71);
    }

    #[test]
    fn hystart_threshold_is_the_smallest_rtt_itself() {
        let mut cc = Ns3Cubic::new(MSS as u32, 0.4, 0.7, true, true);
        cc.init(20 * MSS, u64::MAX);
        let mut now = Time::ZERO;
        // ACKs 5 ms apart: no train. srtt 200 ms, then 8 samples at 380 ms: 180 < 200 ms above.
        for srtt in [200, 380, 380, 380, 380, 380, 380, 380, 380, 380, 380] {
            now += Duration::from_millis(5);
            cc.on_ack(&ack(now, 1, srtt));
        }
        assert!(cc.in_slow_start());
        // A new round whose samples are 401 ms: more than the smallest RTT above it.
        cc.round_ended = true;
        for _ in 0..10 {
            now += Duration::from_millis(5);
            cc.on_ack(&ack(now, 1, 401));
        }
        assert!(!cc.in_slow_start());
    }

    #[test]
    fn hystart_ends_slow_start_on_an_ack_train_longer_than_the_smallest_rtt() {
        let mut cc = Ns3Cubic::new(MSS as u32, 0.4, 0.7, true, true);
        cc.init(20 * MSS, u64::MAX);
        let mut now = Time::ZERO;
        cc.on_ack(&ack(now, 1, 100));
        // ACKs 1 ms apart for 100 ms: the train is not longer than 100 ms yet.
        for _ in 0..100 {
            now += Duration::from_millis(1);
            cc.on_ack(&ack(now, 1, 100));
        }
        assert!(cc.in_slow_start());
        now += Duration::from_millis(1);
        cc.on_ack(&ack(now, 1, 100));
        assert!(!cc.in_slow_start());
        assert_eq!(cc.ssthresh(), cc.cwnd());
    }

    #[test]
    fn a_timeout_keeps_w_max_and_forgets_the_rest() {
        let mut cc = at(100);
        cc.on_ack(&ack(Time::ZERO, 1, 200));
        cc.found = true;
        cc.on_retransmission_timeout(Time::ZERO, 0);
        assert_eq!(
            (cc.cwnd(), cc.ssthresh(), cc.last_max),
            (MSS, 70 * MSS, 100)
        );
        assert_eq!((cc.delay_min, cc.found), (None, false));
    }
}
