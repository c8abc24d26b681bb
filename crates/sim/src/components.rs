//! Builds the queues, markers and loss models a spec names, as the network needs them.

use crate::error::SimError;
use crate::loss::LossModel;
use crate::marker::Marker;
use crate::network::QueuedPacket;
use crate::queue::QueueDiscipline;
use crate::spec::{LossSpec, MarkerSpec, QueueSpec};

/// The queue `spec` describes; `component` names it in errors.
pub(crate) fn queue(
    spec: &QueueSpec,
    group_names: &[String],
    component: &str,
) -> Result<Box<dyn QueueDiscipline<QueuedPacket>>, SimError> {
    let _ = group_names;
    match spec {
        QueueSpec::DropTail { limit } => Ok(Box::new(interim::Fifo::new(*limit))),
        other => Err(unsupported(component, other)),
    }
}

/// The marker `spec` describes.
pub(crate) fn marker(spec: &MarkerSpec, component: &str) -> Result<Box<dyn Marker>, SimError> {
    Err(unsupported(component, spec))
}

/// The loss model `spec` describes.
pub(crate) fn loss(spec: &LossSpec, component: &str) -> Result<Box<dyn LossModel>, SimError> {
    Err(unsupported(component, spec))
}

fn unsupported(component: &str, spec: &dyn std::fmt::Debug) -> SimError {
    SimError::Component { component: component.to_string(), reason: format!("not available yet: {spec:?}") }
}

/// A drop-tail FIFO used until the queue disciplines land.
mod interim {
    use crate::queue::{Dequeue, DropKind, QueueDiscipline, Queued};
    use crate::spec::{CodePointCounters, Color};
    use qstp_proto::{Rate, Time};
    use rand::RngCore;
    use std::collections::VecDeque;

    pub struct Fifo<P> {
        limit: usize,
        items: VecDeque<P>,
        counters: [CodePointCounters; 3],
    }

    impl<P> Fifo<P> {
        pub fn new(limit: usize) -> Self {
            Fifo { limit, items: VecDeque::new(), counters: [CodePointCounters::default(); 3] }
        }
    }

    impl<P: Queued> QueueDiscipline<P> for Fifo<P> {
        fn enqueue(&mut self, _now: Time, packet: P, _rng: &mut dyn RngCore) -> Result<(), (P, DropKind)> {
            let c = &mut self.counters[packet.color() as usize];
            c.packets += 1;
            if self.items.len() >= self.limit {
                c.ldrops += 1;
                return Err((packet, DropKind::Overflow));
            }
            self.items.push_back(packet);
            Ok(())
        }
        fn dequeue(&mut self, _now: Time, _link_rate: Rate) -> Dequeue<P> {
            match self.items.pop_front() {
                Some(p) => Dequeue::Packet(p),
                None => Dequeue::Empty,
            }
        }
        fn len(&self) -> usize {
            self.items.len()
        }
        fn counters(&self, color: Color) -> CodePointCounters {
            self.counters[color as usize]
        }
    }
}
