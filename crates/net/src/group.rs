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
use crate::delegation::GroupState;
pub use crate::delegation::{GroupOptions, GroupStats};
use crate::error::Error;
use crate::state::{Shared, State};
use qstp_proto::{Rate, Time};
use std::sync::Arc;

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
        state.groups.push(GroupState::new(
            id,
            (handles[0], &handles[1..]),
            target,
            options,
            (now, acked, segment),
        ));
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
