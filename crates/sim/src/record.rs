//! Per-flow series recorded at fixed bins: memory grows with duration / bin, never with packets.

use crate::ids::FlowId;
use crate::output::{DelayStats, FlowRecord, MessageSeries, RateSample, SenderSeries};
use hdrhistogram::Histogram;
use qstp_proto::{Duration, Time};

/// Delays the histograms tell apart: 1 us to 1000 s (longer ones count as 1000 s), two
/// significant digits (3,200 counters, 25 KiB per flow).
const DELAY_RANGE_NS: (u64, u64) = (1_000, 1_000_000_000_000);
const DELAY_DIGITS: u8 = 2;

/// One flow's one-way delays, in bounded memory: what [`DelayStats`] is made from. The testbed's
/// router keeps one per flow too.
#[derive(Debug, Clone)]
pub struct Delays {
    histogram: Histogram<u64>,
    /// Exact sum, for an exact mean.
    sum_ns: u128,
}

impl Default for Delays {
    fn default() -> Self {
        Self::new()
    }
}

impl Delays {
    /// No delay yet.
    pub fn new() -> Self {
        let (low, high) = DELAY_RANGE_NS;
        Delays {
            histogram: Histogram::new_with_bounds(low, high, DELAY_DIGITS)
                .expect("constant histogram bounds are valid"),
            sum_ns: 0,
        }
    }

    /// One packet's delay.
    pub fn record(&mut self, delay: Duration) {
        let ns = delay.as_nanos();
        self.histogram.saturating_record(ns);
        self.sum_ns += u128::from(ns);
    }

    /// Mean and percentiles (`None` before the first delay).
    pub fn stats(&self) -> Option<DelayStats> {
        let samples = self.histogram.len();
        (samples > 0).then(|| DelayStats {
            samples,
            mean_ns: self.sum_ns as f64 / samples as f64,
            p50_ns: self.histogram.value_at_quantile(0.50),
            p95_ns: self.histogram.value_at_quantile(0.95),
            p99_ns: self.histogram.value_at_quantile(0.99),
        })
    }
}

/// Collects what the receivers saw, bin by bin.
#[derive(Debug)]
pub struct Recorder {
    bin: Duration,
    bins: usize,
    flows: Vec<FlowRecord>,
    /// One-way delay of the last packet each flow's receiver got.
    last_delay: Vec<Option<Duration>>,
    /// Delays are measured from this instant (the warm-up's end).
    measure_from: Time,
    /// Each flow's delays since `measure_from`.
    delays: Vec<Delays>,
    /// Each flow's sender's RTT measurements since `measure_from`.
    rtts: Vec<Delays>,
}

impl Recorder {
    /// A recorder of `bins` bins of width `bin` for `flows` flows given as `(group, flow)`,
    /// measuring one-way delays of packets that arrive from `measure_from` on.
    pub fn new(bin: Duration, bins: usize, flows: &[(usize, u32)], measure_from: Time) -> Self {
        let records = flows
            .iter()
            .map(|&(group, flow)| FlowRecord {
                group,
                flow,
                received_bytes: vec![0; bins],
                delivered_bytes: vec![0; bins],
                jitter_ns: vec![0; bins],
                received_packets: vec![0; bins],
                delay: None,
                rtt: None,
                packets_sent: 0,
                packets_retransmitted: 0,
                sender: SenderSeries::default(),
                messages: None,
            })
            .collect();
        Recorder {
            bin,
            bins,
            flows: records,
            last_delay: vec![None; flows.len()],
            measure_from,
            delays: flows.iter().map(|_| Delays::new()).collect(),
            rtts: flows.iter().map(|_| Delays::new()).collect(),
        }
    }

    #[inline]
    fn bin_of(&self, now: Time) -> Option<usize> {
        let index = (now.as_nanos() / self.bin.as_nanos().max(1)) as usize;
        (index < self.bins).then_some(index)
    }

    /// A packet of `size` bytes sent at `sent` reached the flow's receiver at `now`.
    #[inline]
    pub fn on_received(&mut self, flow: FlowId, now: Time, size: u32, sent: Time) {
        let delay = now.saturating_since(sent);
        let previous = self.last_delay[flow.index()].replace(delay);
        let Some(bin) = self.bin_of(now) else { return };
        if now >= self.measure_from {
            self.delays[flow.index()].record(delay);
        }
        let record = &mut self.flows[flow.index()];
        record.received_bytes[bin] += u64::from(size);
        record.received_packets[bin] += 1;
        if let Some(previous) = previous {
            record.jitter_ns[bin] += delay.as_nanos().abs_diff(previous.as_nanos());
        }
    }

    /// The flow's sender measured a round-trip time `rtt` at `now`.
    #[inline]
    pub fn on_rtt(&mut self, flow: FlowId, now: Time, rtt: Duration) {
        if now >= self.measure_from && self.bin_of(now).is_some() {
            self.rtts[flow.index()].record(rtt);
        }
    }

    /// The flow's receiving application got `bytes` more bytes in order at `now`.
    #[inline]
    pub fn on_delivered(&mut self, flow: FlowId, now: Time, bytes: u64) {
        if bytes == 0 {
            return;
        }
        if let Some(bin) = self.bin_of(now) {
            self.flows[flow.index()].delivered_bytes[bin] += bytes;
        }
    }

    /// The flow's sender emitted a data packet at `now` (`retransmission` if it carried old
    /// data); `per_bin` also counts it in the flow's sender series.
    #[inline]
    pub fn on_sent(&mut self, flow: FlowId, now: Time, retransmission: bool, per_bin: bool) {
        let bin = self.bin_of(now);
        let bins = self.bins;
        let record = &mut self.flows[flow.index()];
        record.packets_sent += 1;
        record.packets_retransmitted += u64::from(retransmission);
        if let (true, Some(bin)) = (per_bin, bin) {
            let s = &mut record.sender;
            if s.sent.is_empty() {
                s.sent = vec![0; bins];
                s.retransmitted = vec![0; bins];
            }
            s.sent[bin] += 1;
            s.retransmitted[bin] += u64::from(retransmission);
        }
    }

    /// The flow's sender took an acknowledgement at `now`: its smoothed RTT and window after it.
    #[inline]
    pub fn on_sender_state(&mut self, flow: FlowId, now: Time, srtt: Duration, cwnd: u64) {
        let Some(bin) = self.bin_of(now) else { return };
        let bins = self.bins;
        let s = &mut self.flows[flow.index()].sender;
        if s.rtt_ns.is_empty() {
            s.rtt_ns = vec![0; bins];
            s.rtt_samples = vec![0; bins];
            s.cwnd_bytes = vec![0; bins];
        }
        if s.loss_events.is_empty() {
            s.loss_events = vec![0; bins];
            s.timeouts = vec![0; bins];
        }
        if !srtt.is_zero() {
            s.rtt_ns[bin] += srtt.as_nanos();
            s.rtt_samples[bin] += 1;
        }
        s.cwnd_bytes[bin] = cwnd;
    }

    /// The flow's TCP sender saw `count` more loss events (congestion signals) at `now`, of which
    /// `timeouts` were retransmission timeouts.
    pub fn on_loss_events(&mut self, flow: FlowId, now: Time, count: u64, timeouts: u64) {
        let Some(bin) = self.bin_of(now) else { return };
        let bins = self.bins;
        let s = &mut self.flows[flow.index()].sender;
        if s.loss_events.is_empty() {
            s.loss_events = vec![0; bins];
        }
        if s.timeouts.is_empty() {
            s.timeouts = vec![0; bins];
        }
        s.loss_events[bin] += count;
        s.timeouts[bin] += timeouts;
    }

    /// A rate-based sender's state at the end of bin `bin` (`None`: no connection yet), and the
    /// loss events it learnt of during the bin. Called once per bin, at its end.
    pub fn on_rate_sample(
        &mut self,
        flow: FlowId,
        bin: usize,
        sample: Option<RateSample>,
        loss_events: u64,
    ) {
        if bin >= self.bins {
            return;
        }
        let bins = self.bins;
        let s = &mut self.flows[flow.index()].sender;
        if s.rate.is_empty() {
            s.rate = vec![None; bins];
            s.rtt_ns = vec![0; bins];
            s.rtt_samples = vec![0; bins];
            s.loss_events = vec![0; bins];
        }
        s.rate[bin] = sample;
        s.loss_events[bin] += loss_events;
        if let Some(rtt) = sample.map(|r| r.rtt_ns).filter(|&r| r > 0) {
            // One sample: the smoothed RTT at the end of the bin.
            s.rtt_ns[bin] = rtt;
            s.rtt_samples[bin] = 1;
        }
    }

    /// Set the sender's totals directly (for agents that count them themselves).
    pub fn set_sent(&mut self, flow: FlowId, sent: u64, retransmitted: u64) {
        let record = &mut self.flows[flow.index()];
        record.packets_sent = sent;
        record.packets_retransmitted = retransmitted;
    }

    /// The flow's sending application wrote a message at `now`.
    pub fn on_message_written(&mut self, flow: FlowId, now: Time) {
        let Some(bin) = self.bin_of(now) else { return };
        let bins = self.bins;
        let m = self.flows[flow.index()]
            .messages
            .get_or_insert_with(|| MessageSeries {
                written: vec![0; bins],
                delivered: vec![0; bins],
            });
        m.written[bin] += 1;
    }

    /// The flow's receiving application got the message written at `written`.
    pub fn on_message_delivered(&mut self, flow: FlowId, written: Time) {
        let Some(bin) = self.bin_of(written) else {
            return;
        };
        if let Some(m) = self.flows[flow.index()].messages.as_mut() {
            m.delivered[bin] += 1;
        }
    }

    /// The records, flows in the order given to [`Recorder::new`].
    pub fn into_records(self) -> Vec<FlowRecord> {
        let mut flows = self.flows;
        for ((record, delays), rtts) in flows.iter_mut().zip(&self.delays).zip(&self.rtts) {
            record.delay = delays.stats();
            record.rtt = rtts.stats();
        }
        flows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_jitter_and_the_end_of_the_run() {
        let mut r = Recorder::new(Duration::from_secs(1), 2, &[(0, 0)], Time::ZERO);
        let f = FlowId(0);
        let ms = |m: u64| Time::ZERO + Duration::from_millis(m);
        r.on_received(f, ms(100), 1500, ms(50)); // delay 50 ms
        r.on_received(f, ms(900), 1500, ms(830)); // delay 70 ms: jitter 20 ms
        r.on_received(f, ms(1500), 500, ms(1440)); // delay 60 ms: jitter 10 ms
        r.on_received(f, ms(2500), 500, ms(2400)); // after the last bin: not counted
        r.on_delivered(f, ms(1500), 1000);
        r.on_sent(f, ms(10), false, true);
        r.on_sent(f, ms(1200), true, true);
        r.on_sender_state(f, ms(300), Duration::from_millis(40), 3000);
        r.on_sender_state(f, ms(700), Duration::from_millis(60), 4500);
        r.on_loss_events(f, ms(1100), 1, 0);
        r.on_loss_events(f, ms(1900), 2, 1);
        r.on_loss_events(f, ms(2100), 5, 5); // after the last bin: not counted
        let rec = &r.into_records()[0];
        assert_eq!(rec.sender.loss_events, vec![0, 3]);
        assert_eq!(rec.sender.timeouts, vec![0, 1]);
        // Per bin: sends, retransmissions, mean smoothed RTT, the last window.
        assert_eq!(rec.sender.sent, vec![1, 1]);
        assert_eq!(rec.sender.retransmitted, vec![0, 1]);
        assert_eq!(rec.sender.rtt_ns, vec![100_000_000, 0]);
        assert_eq!(rec.sender.rtt_samples, vec![2, 0]);
        assert_eq!(rec.sender.cwnd_bytes, vec![4500, 0]);
        assert_eq!(rec.received_bytes, vec![3000, 500]);
        assert_eq!(rec.received_packets, vec![2, 1]);
        assert_eq!(rec.jitter_ns, vec![20_000_000, 10_000_000]);
        assert_eq!(rec.delivered_bytes, vec![0, 1000]);
        assert_eq!((rec.packets_sent, rec.packets_retransmitted), (2, 1));
    }

    #[test]
    fn delays_count_from_the_warm_up_with_an_exact_mean_and_percentiles_within_one_percent() {
        let mut r = Recorder::new(Duration::from_secs(1), 10, &[(0, 0), (0, 1)], ms_time(1000));
        let f = FlowId(0);
        // Before the warm-up's end: not measured.
        r.on_received(f, ms_time(999), 1500, ms_time(0));
        // 1..=100 ms, each once.
        for d in 1..=100u64 {
            r.on_received(f, ms_time(2000 + d), 1500, ms_time(2000));
        }
        let records = r.into_records();
        let delay = records[0].delay.unwrap();
        assert_eq!(delay.samples, 100);
        assert_eq!(delay.mean_ns, 50.5e6);
        for (got, want) in [
            (delay.p50_ns, 50e6),
            (delay.p95_ns, 95e6),
            (delay.p99_ns, 99e6),
        ] {
            assert!(
                got as f64 >= want && (got as f64) < want * 1.01,
                "{got} for {want}"
            );
        }
        assert_eq!(
            records[1].delay, None,
            "a flow that received nothing has no delay"
        );
        assert_eq!(records[0].rtt, None, "no RTT measured");
    }

    #[test]
    fn rtt_samples_count_from_the_warm_up() {
        let mut r = Recorder::new(Duration::from_secs(1), 10, &[(0, 0)], ms_time(1000));
        let f = FlowId(0);
        r.on_rtt(f, ms_time(500), Duration::from_millis(500));
        r.on_rtt(f, ms_time(1500), Duration::from_millis(40));
        r.on_rtt(f, ms_time(1600), Duration::from_millis(60));
        let rtt = r.into_records()[0].rtt.unwrap();
        assert_eq!((rtt.samples, rtt.mean_ns), (2, 50e6));
    }

    fn ms_time(m: u64) -> Time {
        Time::ZERO + Duration::from_millis(m)
    }

    #[test]
    fn rate_samples_fill_their_bins() {
        let mut r = Recorder::new(Duration::from_secs(1), 3, &[(0, 0)], Time::ZERO);
        let f = FlowId(0);
        let sample = RateSample {
            rate_bps: 400_000,
            x_recv_bps: 390_000,
            loss_event_rate_ppb: 1_000_000,
            rtt_ns: 30_000_000,
        };
        r.on_rate_sample(f, 0, None, 0);
        r.on_rate_sample(f, 1, Some(sample), 2);
        r.on_rate_sample(f, 3, Some(sample), 7); // past the last bin: ignored
        let s = &r.into_records()[0].sender;
        assert_eq!(s.rate, vec![None, Some(sample), None]);
        assert_eq!(s.loss_events, vec![0, 2, 0]);
        assert_eq!(s.rtt_ns, vec![0, 30_000_000, 0]);
        assert_eq!(s.rtt_samples, vec![0, 1, 0]);
        assert!(s.cwnd_bytes.is_empty() && s.sent.is_empty());
    }
}
