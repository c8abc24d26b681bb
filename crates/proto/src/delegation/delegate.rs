//! Delegation of congestion signals between the Free connection and its Stunts
//! (Free & Stunts paper §II-B), over any sender that can be steered ([`Steerable`]): a TCP sender
//! (`qstp_tcp::TcpSender`, whose share is its window) or a QSTP connection (whose share is its
//! allowed rate). One group holds senders of one kind, so that their shares compare.
//!
//! The senders run with their reactions deferred: a congestion signal leaves the sender as it is
//! and is reported; the [`Delegator`] then decides who backs off. Timeouts and slow start are
//! never delegated ("we have chosen to delegate losses during the AIMD behavior").

use crate::Time;

/// What the delegator needs of a sender.
pub trait Steerable {
    /// Its share of the path, in the unit of its kind: a window's bytes (TCP), or an allowed
    /// rate's bytes per second (QSTP). The total-window check of §II-B compares these.
    fn share(&self) -> u64;
    /// What the Stunts must give up together, in [`Steerable::share`]'s unit, when this sender
    /// (the Free) delegates a signal: by default half its share, TCP's reaction (§II-B: "until
    /// the total reduction is at least half the Free's window"). An equation-based sender owes
    /// nothing beyond the signal itself (its reaction is the loss event's place in its history,
    /// not a halving), so one Stunt takes each of its events.
    fn owed(&self) -> u64 {
        self.share() / 2
    }
    /// Back off in another connection's place.
    fn reduce(&mut self, now: Time);
    /// Take its own deferred reaction.
    fn react(&mut self, now: Time);
}

/// Who backed off for one congestion signal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The connection that saw the signal reacted itself.
    Reacted,
    /// The Stunts (indices, in the order halved) backed off in the Free's place.
    Delegated(Vec<usize>),
    /// The Free took a Stunt's signal (reverse delegation).
    TakenByFree,
}

/// The delegation state of one Free connection and its Stunts.
#[derive(Debug, Clone, Default)]
pub struct Delegator {
    /// The Stunt to halve first at the next delegation (round robin).
    next: usize,
    /// Signals of the Free delegated to the Stunts.
    pub delegated: u64,
    /// Signals of the Free it reacted to itself.
    pub reacted: u64,
    /// Of [`Delegator::reacted`], the signals the controller chose to delegate that the Free
    /// kept because the Stunts' shares together were not above its own (§II-B): the group
    /// had too few Stunts, or too small ones, for the Free's share.
    pub kept_stunts_short: u64,
    /// Signals of Stunts the Free took (reverse delegation).
    pub taken_by_free: u64,
}

impl Delegator {
    /// A delegator starting its round robin at the first Stunt.
    pub fn new() -> Self {
        Delegator::default()
    }

    /// The Free saw a fast-retransmit signal at `now` (its reduction deferred). `delegate` is
    /// the controller's decision for this signal (drawn with its fraction g).
    ///
    /// §II-B: if the Stunts' windows sum to more than the Free's, halve the Stunts one by one,
    /// round robin, each at most once, until the total reduction is at least half the Free's
    /// window; otherwise the Free reacts itself.
    pub fn on_free_signal(
        &mut self,
        now: Time,
        free: &mut dyn Steerable,
        stunts: &mut [&mut dyn Steerable],
        delegate: bool,
    ) -> Decision {
        let free_share = free.share();
        let total: u64 = stunts.iter().map(|s| s.share()).sum();
        if !delegate || stunts.is_empty() || total <= free_share {
            free.react(now);
            self.reacted += 1;
            // §II-B: the controller said delegate, the Stunts could not cover the Free.
            self.kept_stunts_short += u64::from(delegate);
            return Decision::Reacted;
        }
        self.delegate(now, free.owed(), stunts)
    }

    /// The Free reacted to a signal of its own, as decided before it came.
    pub fn free_reacted(&mut self) {
        self.reacted += 1;
    }

    /// The Stunts back off in the Free's place for one of its signals, `owed` being what they
    /// must give up together ([`Steerable::owed`] of the Free): §II-B, halve them one by one,
    /// round robin, each at most once, until the total reduction is at least `owed`.
    pub fn delegate(
        &mut self,
        now: Time,
        owed: u64,
        stunts: &mut [&mut dyn Steerable],
    ) -> Decision {
        let wanted = owed;
        let mut reduced = 0u64;
        let mut halved = Vec::new();
        let n = stunts.len();
        for k in 0..n {
            if reduced >= wanted && !halved.is_empty() {
                break;
            }
            let i = (self.next + k) % n;
            let before = stunts[i].share();
            stunts[i].reduce(now);
            reduced += before.saturating_sub(stunts[i].share());
            halved.push(i);
        }
        self.next = (self.next + halved.len()) % n;
        self.delegated += 1;
        Decision::Delegated(halved)
    }

    /// A Stunt saw a fast-retransmit signal at `now` (its reduction deferred). With reverse
    /// delegation on and the Free above its target (`free_above_target`), the Free takes it when
    /// its window is the larger ("paying back the Stunts", §II-B); otherwise the Stunt reacts.
    pub fn on_stunt_signal(
        &mut self,
        now: Time,
        stunt: &mut dyn Steerable,
        free: &mut dyn Steerable,
        reverse: bool,
        free_above_target: bool,
    ) -> Decision {
        if reverse && free_above_target && free.share() > stunt.share() {
            return self.take_by_free(now, free);
        }
        stunt.react(now);
        Decision::Reacted
    }

    /// The Free backs off for a Stunt's signal, as decided before it came (reverse delegation,
    /// §II-B).
    pub fn take_by_free(&mut self, now: Time, free: &mut dyn Steerable) -> Decision {
        free.reduce(now);
        self.taken_by_free += 1;
        Decision::TakenByFree
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Reno-like window: halves on every reduction.
    #[derive(Debug)]
    struct Window {
        cwnd: u64,
        reductions: u32,
        reacted: u32,
    }

    impl Window {
        fn new(cwnd: u64) -> Self {
            Window {
                cwnd,
                reductions: 0,
                reacted: 0,
            }
        }
    }

    impl Steerable for Window {
        fn share(&self) -> u64 {
            self.cwnd
        }
        fn reduce(&mut self, _now: Time) {
            self.cwnd /= 2;
            self.reductions += 1;
        }
        fn react(&mut self, _now: Time) {
            self.cwnd /= 2;
            self.reacted += 1;
        }
    }

    fn signal(
        d: &mut Delegator,
        free: &mut Window,
        stunts: &mut [Window],
        delegate: bool,
    ) -> Decision {
        let mut refs: Vec<&mut dyn Steerable> =
            stunts.iter_mut().map(|s| s as &mut dyn Steerable).collect();
        d.on_free_signal(Time::ZERO, free, &mut refs, delegate)
    }

    #[test]
    fn stunts_are_halved_round_robin_until_half_the_free_window_is_given_up() {
        let mut d = Delegator::new();
        let mut free = Window::new(100);
        let mut stunts: Vec<Window> = [40, 40, 40, 40].map(Window::new).into();
        // Half of 100 is 50: 20 + 20 + 20 from three Stunts.
        assert_eq!(
            signal(&mut d, &mut free, &mut stunts, true),
            Decision::Delegated(vec![0, 1, 2])
        );
        assert_eq!(free.cwnd, 100, "the Free keeps its window");
        // The next delegation starts where the last stopped.
        let mut free = Window::new(20);
        assert_eq!(
            signal(&mut d, &mut free, &mut stunts, true),
            Decision::Delegated(vec![3])
        );
        assert_eq!(d.delegated, 2);
        assert_eq!(stunts.iter().map(|s| s.reductions).sum::<u32>(), 4);
    }

    #[test]
    fn the_free_reacts_when_the_stunts_cannot_cover_it_or_the_controller_says_no() {
        let mut d = Delegator::new();
        let mut free = Window::new(100);
        let mut stunts: Vec<Window> = [30, 30, 30].map(Window::new).into();
        assert_eq!(
            signal(&mut d, &mut free, &mut stunts, true),
            Decision::Reacted
        );
        assert_eq!((free.cwnd, free.reacted), (50, 1));
        assert!(stunts.iter().all(|s| s.reductions == 0));
        assert_eq!(d.kept_stunts_short, 1, "the Stunts' 90 do not cover 100");
        let mut stunts: Vec<Window> = [300].map(Window::new).into();
        assert_eq!(
            signal(&mut d, &mut free, &mut stunts, false),
            Decision::Reacted
        );
        assert_eq!(d.reacted, 2);
        assert_eq!(
            d.kept_stunts_short, 1,
            "the controller said no: not the Stunts' fault"
        );
        // Each Stunt backs off at most once per signal, even if that is not enough.
        let mut free = Window::new(1000);
        let mut stunts: Vec<Window> = [600, 600].map(Window::new).into();
        assert_eq!(
            signal(&mut d, &mut free, &mut stunts, true),
            Decision::Delegated(vec![0, 1])
        );
    }

    #[test]
    fn reverse_delegation_pays_back_the_stunts_only_from_a_larger_free() {
        let mut d = Delegator::new();
        let (mut free, mut stunt) = (Window::new(100), Window::new(40));
        let t = Time::ZERO;
        assert_eq!(
            d.on_stunt_signal(t, &mut stunt, &mut free, true, true),
            Decision::TakenByFree
        );
        assert_eq!((free.cwnd, stunt.cwnd), (50, 40));
        assert_eq!(
            d.on_stunt_signal(t, &mut stunt, &mut free, true, false),
            Decision::Reacted
        );
        assert_eq!(stunt.cwnd, 20);
        let mut big = Window::new(80);
        assert_eq!(
            d.on_stunt_signal(t, &mut big, &mut free, true, true),
            Decision::Reacted
        );
        assert_eq!(
            d.on_stunt_signal(t, &mut stunt, &mut free, false, true),
            Decision::Reacted
        );
        assert_eq!(d.taken_by_free, 1);
    }
}
