//! The queue-length series of a link: a [`QueueObserver`] that records what the queue holds at the
//! end of every bin (packets and bytes, for the whole queue and each class of a class-based one),
//! as ns-3 users sample a queue's length. The link calls it only at the first change of the queue
//! after a bin ended (it sees no events), so it costs one comparison per event, a link that sees
//! no traffic for many bins costs nothing until it does, and the samples are those of the queue's
//! state between changes, whoever drives the link.

use super::link::{QueueEvent, QueueObserver};
use super::packet::{Packet, QueuedPacket};
use crate::ids::PacketId;
use crate::spec::QueueSeries;
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

impl QueueObserver for QueueMeter {
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

    fn observe(&mut self, _: Time, _: QueueEvent, _: PacketId, _: &Packet, _: usize) {}

    fn as_any_mut(&mut self) -> Option<&mut dyn std::any::Any> {
        Some(self)
    }
}
