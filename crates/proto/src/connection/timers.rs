//! The connection's own timers: an enum indexing a small table of deadlines.
//!
//! Timers owned by the parts the connection composes (the rate controller's no-feedback timer, the
//! TFRC receiver's feedback timer, the SACK retransmission timer, the pacer) are asked directly; this
//! table holds only the deadlines the connection itself sets.

use crate::time::Time;

/// A timer of the connection itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timer {
    /// Nothing heard from the peer for the idle timeout: the connection ends.
    Idle = 0,
    /// Send the hello again (the hello or its answer was lost).
    HelloRetransmit = 1,
    /// The handshake took too long: the connection ends.
    HandshakeTimeout = 2,
    /// A closing connection stops answering the peer and is over.
    Drain = 3,
    /// Send the close packet again: the peer has not confirmed it yet.
    CloseRepeat = 4,
}

/// How many timers there are.
const TIMERS: usize = 5;

/// One optional deadline per [`Timer`].
#[derive(Debug, Clone, Default)]
pub(crate) struct TimerTable {
    deadlines: [Option<Time>; TIMERS],
}

impl TimerTable {
    /// Arm `timer` to expire at `deadline`.
    pub(crate) fn set(&mut self, timer: Timer, deadline: Time) {
        self.deadlines[timer as usize] = Some(deadline);
    }

    /// Disarm `timer`.
    pub(crate) fn stop(&mut self, timer: Timer) {
        self.deadlines[timer as usize] = None;
    }

    /// When `timer` expires, if armed.
    pub(crate) fn get(&self, timer: Timer) -> Option<Time> {
        self.deadlines[timer as usize]
    }

    /// Whether `timer` is armed and due at `now`.
    pub(crate) fn is_expired(&self, timer: Timer, now: Time) -> bool {
        self.get(timer).is_some_and(|t| t <= now)
    }

    /// The earliest armed deadline.
    pub(crate) fn next(&self) -> Option<Time> {
        self.deadlines.iter().flatten().copied().min()
    }

    /// Disarm every timer.
    pub(crate) fn stop_all(&mut self) {
        self.deadlines = [None; TIMERS];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_is_the_earliest_armed_deadline() {
        let mut table = TimerTable::default();
        assert_eq!(table.next(), None);
        table.set(Timer::Idle, Time::from_nanos(50));
        table.set(Timer::Drain, Time::from_nanos(20));
        assert_eq!(table.next(), Some(Time::from_nanos(20)));
        table.stop(Timer::Drain);
        assert_eq!(table.next(), Some(Time::from_nanos(50)));
        assert!(table.is_expired(Timer::Idle, Time::from_nanos(50)));
        assert!(!table.is_expired(Timer::HelloRetransmit, Time::MAX));
        table.stop_all();
        assert_eq!(table.next(), None);
    }
}
