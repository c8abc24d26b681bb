//! The bounded queue of events for the application.

use super::Event;
use std::collections::VecDeque;

/// Pending events, oldest first; an event already waiting is not queued twice, so the queue never
/// holds more than one of each kind (the bound).
#[derive(Clone, Debug, Default)]
pub(crate) struct EventQueue {
    pending: VecDeque<Event>,
}

impl EventQueue {
    /// Queue `event` unless an equal one already waits.
    pub(crate) fn push(&mut self, event: Event) {
        if !self.pending.contains(&event) {
            self.pending.push_back(event);
        }
    }

    /// The oldest event.
    pub(crate) fn pop(&mut self) -> Option<Event> {
        self.pending.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_events_are_coalesced() {
        let mut queue = EventQueue::default();
        for _ in 0..100 {
            queue.push(Event::Readable);
        }
        queue.push(Event::Writable);
        queue.push(Event::Readable);
        assert_eq!(queue.pop(), Some(Event::Readable));
        assert_eq!(queue.pop(), Some(Event::Writable));
        assert_eq!(queue.pop(), None);
    }
}
