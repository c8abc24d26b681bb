//! Per-flow series recorded at fixed bins: memory grows with duration / bin, never with packets.

use crate::ids::FlowId;
use crate::spec::FlowRecord;
use qstp_proto::{Duration, Time};

/// Collects what the receivers saw, bin by bin.
#[derive(Debug)]
pub struct Recorder {
    bin: Duration,
    bins: usize,
    flows: Vec<FlowRecord>,
    /// One-way delay of the last packet each flow's receiver got.
    last_delay: Vec<Option<Duration>>,
}

impl Recorder {
    /// A recorder of `bins` bins of width `bin` for `flows` flows given as `(group, flow)`.
    pub fn new(bin: Duration, bins: usize, flows: &[(usize, u32)]) -> Self {
        let records = flows
            .iter()
            .map(|&(group, flow)| FlowRecord {
                group,
                flow,
                received_bytes: vec![0; bins],
                delivered_bytes: vec![0; bins],
                jitter_ns: vec![0; bins],
                received_packets: vec![0; bins],
                packets_sent: 0,
                packets_retransmitted: 0,
            })
            .collect();
        Recorder {
            bin,
            bins,
            flows: records,
            last_delay: vec![None; flows.len()],
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
        let record = &mut self.flows[flow.index()];
        record.received_bytes[bin] += u64::from(size);
        record.received_packets[bin] += 1;
        if let Some(previous) = previous {
            record.jitter_ns[bin] += delay.as_nanos().abs_diff(previous.as_nanos());
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

    /// The flow's sender emitted a data packet (`retransmission` if it carried old data).
    #[inline]
    pub fn on_sent(&mut self, flow: FlowId, retransmission: bool) {
        let record = &mut self.flows[flow.index()];
        record.packets_sent += 1;
        record.packets_retransmitted += u64::from(retransmission);
    }

    /// Set the sender's totals directly (for agents that count them themselves).
    pub fn set_sent(&mut self, flow: FlowId, sent: u64, retransmitted: u64) {
        let record = &mut self.flows[flow.index()];
        record.packets_sent = sent;
        record.packets_retransmitted = retransmitted;
    }

    /// The records, flows in the order given to [`Recorder::new`].
    pub fn into_records(self) -> Vec<FlowRecord> {
        self.flows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_jitter_and_the_end_of_the_run() {
        let mut r = Recorder::new(Duration::from_secs(1), 2, &[(0, 0)]);
        let f = FlowId(0);
        let ms = |m: u64| Time::ZERO + Duration::from_millis(m);
        r.on_received(f, ms(100), 1500, ms(50)); // delay 50 ms
        r.on_received(f, ms(900), 1500, ms(830)); // delay 70 ms: jitter 20 ms
        r.on_received(f, ms(1500), 500, ms(1440)); // delay 60 ms: jitter 10 ms
        r.on_received(f, ms(2500), 500, ms(2400)); // after the last bin: not counted
        r.on_delivered(f, ms(1500), 1000);
        r.on_sent(f, false);
        r.on_sent(f, true);
        let rec = &r.into_records()[0];
        assert_eq!(rec.received_bytes, vec![3000, 500]);
        assert_eq!(rec.received_packets, vec![2, 1]);
        assert_eq!(rec.jitter_ns, vec![20_000_000, 10_000_000]);
        assert_eq!(rec.delivered_bytes, vec![0, 1000]);
        assert_eq!((rec.packets_sent, rec.packets_retransmitted), (2, 1));
    }
}
