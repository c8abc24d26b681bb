//! The queue-length series of a link: a [`QueueObserver`] that records what the queue holds at the
//! end of every bin (packets and bytes, for the whole queue and each class of a class-based one),
//! as ns-3 users sample a queue's length. The link calls it only at the first change of the queue
//! after a bin ended (it sees no events), so it costs one comparison per event, a link that sees
//! no traffic for many bins costs nothing until it does, and the samples are those of the queue's
//! state between changes, whoever drives the link.

use crate::ids::PacketId;
use crate::output::QueueSeries;
use qstp_dataplane::link::{QueueEvent, QueueObserver, QueuedPacket};
use qstp_dataplane::queue::QueueDiscipline;
use qstp_proto::{Duration, Time};

/// Records a queue's length at the end of each bin.
#[derive(Debug)]
pub struct QueueMeter {
    bin: Duration,
    bins: usize,
    /// The end of the first bin not sampled yet.
    next_end: Time,
    /// The whole queue first, then each class in class order.
    series: Vec<QueueSeries>,
}

impl QueueMeter {
    /// A meter of `queue` (its series named `name`, and `name/<class>` for each class) over
    /// `bins` bins of width `bin`, from time zero. Its memory is two numbers per bin and series,
    /// reserved here.
    pub fn new(
        name: &str,
        queue: &dyn QueueDiscipline<QueuedPacket>,
        bin: Duration,
        bins: usize,
    ) -> Self {
        let series = |name: String| QueueSeries {
            name,
            packets: Vec::with_capacity(bins),
            bytes: Vec::with_capacity(bins),
        };
        let mut all = vec![series(name.to_string())];
        all.extend(
            queue
                .class_lengths()
                .iter()
                .map(|(class, ..)| series(format!("{name}/{class}"))),
        );
        QueueMeter {
            bin,
            bins,
            next_end: Time::ZERO + bin,
            series: all,
        }
    }

    /// Record `queue` as it is for every bin that ended by `now`.
    fn catch_up(&mut self, now: Time, queue: &dyn QueueDiscipline<QueuedPacket>) {
        while now >= self.next_end && self.series[0].packets.len() < self.bins {
            self.sample(queue);
            self.next_end += self.bin;
        }
    }

    fn sample(&mut self, queue: &dyn QueueDiscipline<QueuedPacket>) {
        let whole = &mut self.series[0];
        whole.packets.push(queue.len() as u64);
        whole.bytes.push(queue.bytes());
        for (series, (_, packets, bytes)) in self.series[1..].iter_mut().zip(queue.class_lengths())
        {
            series.packets.push(packets as u64);
            series.bytes.push(bytes);
        }
    }

    /// The series, every bin filled: the bins that end after the queue's last change see it as
    /// that change left it.
    pub fn finish(&mut self, queue: &dyn QueueDiscipline<QueuedPacket>) -> Vec<QueueSeries> {
        while self.series[0].packets.len() < self.bins {
            self.sample(queue);
        }
        std::mem::take(&mut self.series)
    }
}

impl<P> QueueObserver<P> for QueueMeter {
    fn before_change(&mut self, now: Time, queue: &dyn QueueDiscipline<QueuedPacket>) {
        self.catch_up(now, queue);
    }

    fn due(&self) -> Time {
        if self.series[0].packets.len() < self.bins {
            self.next_end
        } else {
            Time::MAX
        }
    }

    fn sees_events(&self) -> bool {
        false
    }

    fn observe(&mut self, _: Time, _: QueueEvent, _: PacketId, _: &P, _: usize) {}

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{AgentId, FlowId, NodeId};
    use crate::network::{Packet, PacketLink, PacketStore, Payload};
    use qstp_dataplane::color::Color;
    use qstp_dataplane::queue::DropTail;
    use qstp_proto::Rate;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    fn packet(store: &mut PacketStore, size: u32) -> QueuedPacket {
        let id = store.insert(Packet {
            size,
            flow: FlowId(0),
            group: 0,
            color: Color::Green,
            sent: Time::ZERO,
            source: AgentId(0),
            destination: AgentId(1),
            destination_node: NodeId(1),
            ecn: qstp_dataplane::ecn::Ecn::NotEct,
            payload: Payload::Udp,
        });
        QueuedPacket {
            id,
            size,
            group: 0,
            flow: 0,
            color: Color::Green,
            ecn: qstp_dataplane::ecn::Ecn::NotEct,
        }
    }

    fn ms(m: u64) -> Time {
        Time::ZERO + Duration::from_millis(m)
    }

    #[test]
    fn a_meter_records_the_queue_at_each_bin_end_whoever_changes_it() {
        let mut store = PacketStore::default();
        // A 1 Mbit/s link (8 ms per 1000 bytes) with 10 ms of delay.
        let mut link = PacketLink::new(
            Rate::from_mbps(1),
            Duration::from_millis(10),
            Box::new(DropTail::new(10)),
            None,
            ChaCha8Rng::seed_from_u64(1),
            ChaCha8Rng::seed_from_u64(2),
        );
        let meter = QueueMeter::new("q", &*link.queue, Duration::from_millis(5), 8);
        assert!(link.add_observer(Box::new(meter)).is_ok());
        // Four 1000-byte packets at 1 ms: one on the wire until 9 ms, three queued; they leave
        // the queue at 9, 17 and 25 ms. Nothing happens after 25 ms.
        for _ in 0..4 {
            let p = packet(&mut store, 1000);
            link.offer(ms(1), p, &mut store);
        }
        for at in [9, 17, 25, 33] {
            link.handle_timeout(ms(at), &mut store);
        }
        let (observers, queue) = link.observers_mut();
        let meter = observers[0]
            .as_any_mut()
            .and_then(|a| a.downcast_mut::<QueueMeter>())
            .unwrap();
        let series = meter.finish(queue);
        assert_eq!(series.len(), 1, "a FIFO has no classes");
        // Bins end at 5, 10, ..., 40 ms: what the queue held then.
        assert_eq!(series[0].packets, [3, 2, 2, 1, 1, 0, 0, 0]);
        assert_eq!(series[0].bytes, [3000, 2000, 2000, 1000, 1000, 0, 0, 0]);
    }
}
