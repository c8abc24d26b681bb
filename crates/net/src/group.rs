//! A Free & Stunts delegation group of one endpoint's connections (Free & Stunts paper; the
//! protocol rules are `qstp_proto::delegation` and the connection's `delegation` module): the
//! Free follows a target on a best-effort path by handing loss events to its Stunts, the
//! application's other connections, which react in its place.
//!
//! The driver runs the group after every turn: at each control instant it samples the Free's
//! acknowledged throughput and updates the controller; then it settles the loss events the
//! connections hold. The application changes the target while the group runs
//! ([`Group::set_target`]); dropping the [`Group`] (or closing the Free) ends it, and the Stunts
//! go back to reacting to their own loss events.

use crate::connection::Connection;
use crate::error::Error;
use crate::state::{Shared, State};
use qstp_proto::delegation::{controller::MARGIN, Controller, ControllerSpec, Delegator};
use qstp_proto::{ConnectionHandle, Duration, Rate, Time};
use std::sync::Arc;

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
    id: u64,
    free: ConnectionHandle,
    stunts: Vec<ConnectionHandle>,
    options: GroupOptions,
    controller: Controller,
    delegator: Delegator,
    target: Rate,
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
    /// When the group next wants a turn.
    pub(crate) fn next_control(&self) -> Time {
        self.next_control
    }

    /// Run the group at `now`: control instants due, then the held loss events. Whether it goes
    /// on (false once the Free is gone).
    fn run(&mut self, proto: &mut qstp_proto::Endpoint, now: Time) -> bool {
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
    fn release(&self, proto: &mut qstp_proto::Endpoint, now: Time) {
        for &h in std::iter::once(&self.free).chain(&self.stunts) {
            if let Some(conn) = proto.connection_mut(h) {
                let _ = conn.defer_loss_events(now, false);
            }
        }
    }

    fn stats(&self) -> GroupStats {
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

impl State {
    /// Run every group at `now`; the ones whose Free is gone end.
    pub(crate) fn run_groups(&mut self, now: Time) {
        let proto = &mut self.proto;
        self.groups.retain_mut(|g| {
            let goes_on = g.run(proto, now);
            if !goes_on {
                g.release(proto, now);
            }
            goes_on
        });
    }

    /// The earliest control instant of the groups.
    pub(crate) fn groups_deadline(&self) -> Option<Time> {
        self.groups.iter().map(GroupState::next_control).min()
    }
}

/// The application's handle on a running group; dropping it ends the group.
#[derive(Debug)]
pub struct Group {
    shared: Arc<Shared>,
    id: u64,
}

impl Group {
    /// Form a group of `free` and `stunts`, all connections of the endpoint behind `shared`.
    pub(crate) fn start(
        shared: Arc<Shared>,
        free: &Connection,
        stunts: &[&Connection],
        target: Rate,
        options: GroupOptions,
    ) -> Result<Group, Error> {
        let invalid = |why: String| Error::Group(why);
        if options.period.is_zero() {
            return Err(invalid("the control period must be positive".into()));
        }
        if stunts.is_empty() {
            return Err(invalid("a group needs at least one Stunt".into()));
        }
        let mut handles = vec![free.handle()];
        for s in stunts {
            if !s.belongs_to(&shared) || handles.contains(&s.handle()) {
                return Err(invalid(
                    "every Stunt must be another connection of the Free's endpoint".into(),
                ));
            }
            handles.push(s.handle());
        }
        if !free.belongs_to(&shared) {
            return Err(invalid(
                "the Free must be a connection of this endpoint".into(),
            ));
        }
        let mut state = shared.lock();
        if state
            .groups
            .iter()
            .any(|g| handles.contains(&g.free) || g.stunts.iter().any(|s| handles.contains(s)))
        {
            return Err(invalid("a connection may be in one group only".into()));
        }
        let now = state.now();
        let mut segment = 0;
        for &h in &handles {
            let conn = state
                .proto
                .connection_mut(h)
                .filter(|c| !c.is_closed())
                .ok_or_else(|| invalid("a member is closed".into()))?;
            segment = segment.max(conn.config().segment_size());
            conn.defer_loss_events(now, true)
                .map_err(|e| invalid(e.to_string()))?;
        }
        let id = state.groups.iter().map(|g| g.id + 1).max().unwrap_or(0);
        let acked = state
            .proto
            .connection(handles[0])
            .map_or(0, |c| c.stats().bytes_acked);
        state.groups.push(GroupState {
            id,
            free: handles[0],
            stunts: handles[1..].to_vec(),
            options,
            controller: Controller::new(options.controller),
            delegator: Delegator::new(),
            target,
            segment_bits: segment as u64 * 8,
            next_control: now + options.period,
            acked_at_last_control: acked,
            throughput: Rate::ZERO,
            credit: 0.0,
        });
        drop(state);
        shared.driver.notify_one();
        Ok(Group { shared, id })
    }

    /// Change the target the Free follows (the application's trace, point by point).
    pub fn set_target(&self, target: Rate) {
        let mut state = self.shared.lock();
        if let Some(g) = state.groups.iter_mut().find(|g| g.id == self.id) {
            g.target = target;
        }
    }

    /// What the group did so far; `None` once it ended (its Free closed).
    pub fn stats(&self) -> Option<GroupStats> {
        let state = self.shared.lock();
        state
            .groups
            .iter()
            .find(|g| g.id == self.id)
            .map(GroupState::stats)
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        let now = state.now();
        if let Some(i) = state.groups.iter().position(|g| g.id == self.id) {
            let group = state.groups.swap_remove(i);
            group.release(&mut state.proto, now);
        }
    }
}
