//! The running side of a Free & Stunts delegation group (module `group` has the application's
//! handle): its options, what it did, and the state the driver runs after every turn, which the
//! endpoint's state holds. It needs only the protocol endpoint, so that the state can hold it
//! without depending on the handle.

use qstp_proto::delegation::{controller::MARGIN, Controller, ControllerSpec, Delegator};
use qstp_proto::{ConnectionHandle, Duration, Rate, Time};

/// How a group decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GroupOptions {
    /// The controller that turns the Free's throughput into the fraction of its loss events to
    /// delegate (Free & Stunts paper eqs. 3-4).
    pub controller: ControllerSpec,
    /// Time between control instants.
    pub period: Duration,
    /// Reverse delegation: the Free takes a Stunt's loss event while it runs above its target.
    pub reverse: bool,
}

impl Default for GroupOptions {
    /// The PI controller with the gain the lab's Free & Stunts scenarios use, every 500 ms, with
    /// reverse delegation.
    fn default() -> Self {
        GroupOptions {
            controller: ControllerSpec::Pi { gain: 0.0005 },
            period: Duration::from_millis(500),
            reverse: true,
        }
    }
}

/// What a group did so far.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct GroupStats {
    /// The Free's throughput over the last control period.
    pub throughput: Rate,
    /// The target in force.
    pub target: Rate,
    /// The fraction of the Free's loss events the controller delegates now.
    pub fraction: f64,
    /// Loss events of the Free the Stunts took.
    pub delegated: u64,
    /// Loss events of the Free it reacted to itself.
    pub reacted: u64,
    /// Of `reacted`, the loss events the controller would have delegated that the Free kept
    /// because the Stunts' allowed rates together were not above its own (Free & Stunts paper
    /// §II-B): more Stunts (or a lower target) would have taken them.
    pub kept_stunts_short: u64,
    /// Loss events of Stunts the Free took (reverse delegation).
    pub taken_by_free: u64,
}

/// The running group, inside the endpoint's state.
#[derive(Debug)]
pub(crate) struct GroupState {
    pub(crate) id: u64,
    pub(crate) free: ConnectionHandle,
    pub(crate) stunts: Vec<ConnectionHandle>,
    options: GroupOptions,
    controller: Controller,
    delegator: Delegator,
    pub(crate) target: Rate,
    /// Bits of payload per datagram, the controller's unit.
    segment_bits: u64,
    next_control: Time,
    acked_at_last_control: u64,
    throughput: Rate,
    /// The fraction's running sum: a loss event is delegated each time it passes a whole one,
    /// so that exactly the fraction g of them is (§II-A: "the ratio of congestion signals to be
    /// delegated"), without a random draw.
    credit: f64,
}

impl GroupState {
    /// A group of `free` and `stunts` (their loss events already deferred) following `target`,
    /// its first control instant one period after `now`; `acked` is the Free's acknowledged
    /// bytes so far and `segment` the members' largest segment.
    pub(crate) fn new(
        id: u64,
        (free, stunts): (ConnectionHandle, &[ConnectionHandle]),
        target: Rate,
        options: GroupOptions,
        (now, acked, segment): (Time, u64, usize),
    ) -> Self {
        GroupState {
            id,
            free,
            stunts: stunts.to_vec(),
            options,
            controller: Controller::new(options.controller),
            delegator: Delegator::new(),
            target,
            segment_bits: segment as u64 * 8,
            next_control: now + options.period,
            acked_at_last_control: acked,
            throughput: Rate::ZERO,
            credit: 0.0,
        }
    }

    /// When the group next wants a turn.
    pub(crate) fn next_control(&self) -> Time {
        self.next_control
    }

    /// Run the group at `now`: control instants due, then the held loss events. Whether it goes
    /// on (false once the Free is gone).
    pub(crate) fn run(&mut self, proto: &mut qstp_proto::Endpoint, now: Time) -> bool {
        let Some(free) = proto.connection(self.free).filter(|c| !c.is_closed()) else {
            return false;
        };
        while now >= self.next_control {
            let acked = free.stats().bytes_acked;
            let bytes = acked.saturating_sub(self.acked_at_last_control);
            self.acked_at_last_control = acked;
            self.throughput = Rate::from_bytes_over(bytes, self.options.period);
            self.controller
                .update(self.throughput, self.target, self.segment_bits);
            self.next_control += self.options.period;
        }
        // Stunts that closed leave the group; the others go on.
        self.stunts
            .retain(|&s| proto.connection(s).is_some_and(|c| !c.is_closed()));
        let mut handles = Vec::with_capacity(self.stunts.len() + 1);
        handles.push(self.free);
        handles.extend_from_slice(&self.stunts);
        let Some(mut conns) = proto.connections_mut(&handles) else {
            return true;
        };
        if conns.iter().all(|c| c.deferred_loss_events() == 0) {
            return true;
        }
        let above = self.throughput.bps() as f64 > MARGIN * self.target.bps() as f64;
        let (free, stunts) = conns.split_first_mut().expect("the Free is first");
        let g = self.controller.fraction();
        let credit = &mut self.credit;
        let draw = || {
            *credit += g;
            let delegate = *credit >= 1.0;
            if delegate {
                *credit -= 1.0;
            }
            delegate
        };
        self.delegator
            .settle(now, free, stunts, draw, self.options.reverse, above);
        true
    }

    /// Stop deferring every member's loss events (the group ends).
    pub(crate) fn release(&self, proto: &mut qstp_proto::Endpoint, now: Time) {
        for &h in std::iter::once(&self.free).chain(&self.stunts) {
            if let Some(conn) = proto.connection_mut(h) {
                let _ = conn.defer_loss_events(now, false);
            }
        }
    }

    pub(crate) fn stats(&self) -> GroupStats {
        GroupStats {
            throughput: self.throughput,
            target: self.target,
            fraction: self.controller.fraction(),
            delegated: self.delegator.delegated,
            reacted: self.delegator.reacted,
            kept_stunts_short: self.delegator.kept_stunts_short,
            taken_by_free: self.delegator.taken_by_free,
        }
    }
}
