//! Datagram packetization layer path MTU discovery (DPLPMTUD, RFC 8899): data packets start at a
//! size nearly every path carries and grow once a padded probe of a larger size is acknowledged.
//!
//! A probe is a padding chunk (RFC 8899 §4.1) that error control never tracks and the receiver
//! leaves out of loss detection, so a lost probe moves neither TFRC's loss event rate nor the SACK
//! retransmissions (RFC 8899 §4.4: probe loss is not congestion). The search is a bisection
//! between the largest size confirmed and the smallest size known to fail.

use crate::time::{Duration, Time};

/// The size every connection may start with: 1200 bytes of UDP payload cross any IPv6 path
/// (RFC 9000 §14) and nearly every IPv4 one (RFC 8899 §5.1.2: BASE_PLPMTU).
pub const BASE_DATAGRAM: usize = 1200;

/// RFC 8899 §5.1.2: MAX_PROBES, the losses of one size that declare it too large.
const MAX_PROBES: u32 = 3;

/// The search ends once the size confirmed and the size refused are this close (RFC 8899 §5.3.2
/// leaves the search method to the implementation).
const SEARCH_GRANULARITY: usize = 16;

/// RFC 8899 §5.1.1: PMTU_RAISE_TIMER, after which a completed search looks for more room again.
const RAISE_INTERVAL: Duration = Duration::from_secs(600);

/// A probe counts as lost once this many later packet numbers were acknowledged (RFC 9002 §6.1.1's
/// packet threshold; probes may be reordered behind smaller packets).
const PROBE_PACKET_THRESHOLD: u64 = 3;

/// A probe on its way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Probe {
    packet_number: u64,
    size: usize,
    sent: Time,
    /// Bytes 2..19 of the datagram as sent (destination id, then the protection sequence number
    /// or, unprotected, the flags and packet number): what an ICMP message quoting it must show.
    quote: Option<[u8; QUOTE_LEN]>,
}

/// Bytes of a probe an ICMP Packet Too Big must quote to be believed (RFC 8899 §4.6.1).
pub(crate) const QUOTE: core::ops::Range<usize> = 2..19;
const QUOTE_LEN: usize = QUOTE.end - QUOTE.start;

/// What a report of a datagram too large for the path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TooBig {
    /// It was a probe, or larger than what data packets use: the search goes on below it.
    ProbeFailed,
    /// Data packets of the current size no longer pass: they drop to the base size.
    Shrunk,
    /// Data packets cannot shrink (the size is pinned, or already the base): the connection
    /// cannot send.
    Fatal,
    /// Not a size this connection sent lately (stale, or forged): ignored.
    Ignored,
}

/// The path MTU state of one connection's sender.
#[derive(Debug, Clone)]
pub(crate) struct PathMtu {
    /// The size data packets use (the PLPMTU): the base, or a size a probe confirmed.
    current: usize,
    /// The size the search falls back to.
    base: usize,
    /// The ceiling of the search (the configured largest datagram).
    max: usize,
    /// The smallest size known not to pass; `max + 1` when none is.
    too_big: usize,
    /// Whether probing is on (off: `current` is pinned).
    enabled: bool,
    probe: Option<Probe>,
    /// Consecutive losses of probes of the size being tried.
    losses: u32,
    /// No probe before this (the raise timer of a completed search).
    resume_at: Option<Time>,
    /// Probes sent, acknowledged and lost, and falls back to the base size.
    pub(crate) counters: PmtuCounters,
    /// The next probe's size, from a validated Packet Too Big (RFC 8899 §4.6.2).
    hint: Option<usize>,
}

/// Counters of path MTU discovery, for statistics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PmtuCounters {
    /// Probes sent.
    pub probes_sent: u64,
    /// Probes acknowledged.
    pub probes_acked: u64,
    /// Probes lost or refused by the local network (EMSGSIZE).
    pub probes_lost: u64,
    /// Times data packets had to fall back to the base size (a black hole, or a path that shrank).
    pub black_holes: u64,
    /// ICMP Packet Too Big messages that quoted a probe on its way, and were believed.
    pub ptb_accepted: u64,
    /// ICMP Packet Too Big messages ignored: quoting no probe on its way, or an impossible size.
    pub ptb_ignored: u64,
}

impl PathMtu {
    /// Searching from `base` up to `max` if `enabled`, else fixed at `max`.
    pub(crate) fn new(enabled: bool, base: usize, max: usize) -> Self {
        let base = base.min(max);
        PathMtu {
            current: if enabled { base } else { max },
            base,
            max,
            too_big: max + 1,
            enabled,
            probe: None,
            losses: 0,
            resume_at: None,
            counters: PmtuCounters::default(),
            hint: None,
        }
    }

    /// The largest datagram data packets may use now.
    pub(crate) fn current(&self) -> usize {
        self.current
    }

    /// The size the next probe would try, if the search is not over.
    fn next_size(&self) -> Option<usize> {
        let upper = self.max.min(self.too_big - 1);
        if upper <= self.current {
            return None;
        }
        if let Some(hint) = self.hint.filter(|&h| h > self.current && h <= upper) {
            return Some(hint);
        }
        if upper - self.current <= SEARCH_GRANULARITY {
            // Close enough to a size that failed; but the ceiling, never refused, is worth a try.
            return (self.too_big > self.max).then_some(upper);
        }
        // Bisection, rounded up so that the last step reaches `upper`.
        Some(self.current + (upper - self.current).div_ceil(2))
    }

    /// The size of a probe to send at `now`, if one is due: probing is on, no probe is on its
    /// way, the search is not over and the raise timer (if any) has expired.
    pub(crate) fn probe_due(&mut self, now: Time) -> Option<usize> {
        if !self.enabled || self.probe.is_some() {
            return None;
        }
        if let Some(at) = self.resume_at {
            if now < at {
                return None;
            }
            // RFC 8899 §5.2: the raise timer expired: search upwards from the current size again.
            self.resume_at = None;
            self.too_big = self.max + 1;
        }
        let size = self.next_size();
        if size.is_none() {
            // RFC 8899 §5.2: SEARCH_COMPLETE until the raise timer expires.
            self.resume_at = Some(now + RAISE_INTERVAL);
        }
        size
    }

    /// A probe of `size` bytes left as packet `packet_number`.
    pub(crate) fn on_probe_sent(&mut self, now: Time, packet_number: u64, size: usize) {
        self.counters.probes_sent += 1;
        self.probe = Some(Probe {
            packet_number,
            size,
            sent: now,
            quote: None,
        });
    }

    /// The probe just sent left as `datagram` (sealed, if protected): remember what an ICMP
    /// message about it must quote.
    pub(crate) fn on_probe_sealed(&mut self, datagram: &[u8]) {
        if let (Some(probe), Some(quote)) = (self.probe.as_mut(), datagram.get(QUOTE)) {
            if probe.quote.is_none() && datagram.len() == probe.size {
                let mut bytes = [0u8; QUOTE_LEN];
                bytes.copy_from_slice(quote);
                probe.quote = Some(bytes);
            }
        }
    }

    /// An ICMP Packet Too Big quoting `quoted` (the start of the datagram it concerns) says the
    /// path carries datagrams of at most `limit` bytes. Believed only if it quotes the probe on
    /// its way (RFC 8899 §4.6.1: validation) and names a size below the probe's and no smaller
    /// than the base (§4.6.2); then the probe failed, and the next one tries `limit` if it is
    /// above the current size. Returns whether it was believed.
    pub(crate) fn on_packet_too_big(&mut self, limit: usize, quoted: &[u8]) -> bool {
        let matches = self.probe.is_some_and(|p| {
            p.quote.is_some_and(|q| quoted.get(QUOTE) == Some(&q[..])) && limit < p.size
        });
        if !matches || limit < self.base {
            self.counters.ptb_ignored += 1;
            return false;
        }
        self.counters.ptb_accepted += 1;
        let size = self.probe.map_or(limit + 1, |p| p.size);
        self.on_too_big(size);
        // RFC 8899 §4.6.2: a PTB_SIZE between the PLPMTU and the probed size is the next probe.
        self.hint = Some(limit);
        true
    }

    /// Feedback acknowledged `ranges` (inclusive, highest first): the probe passed or, with later
    /// packets acknowledged around it, was lost.
    pub(crate) fn on_ack(&mut self, ranges: &[(u64, u64)]) {
        let Some(probe) = self.probe else { return };
        let pn = probe.packet_number;
        if ranges.iter().any(|&(lo, hi)| (lo..=hi).contains(&pn)) {
            // RFC 8899 §5.2: a probe acknowledged confirms its size as the new PLPMTU.
            self.probe = None;
            self.losses = 0;
            self.counters.probes_acked += 1;
            self.current = self.current.max(probe.size);
            return;
        }
        if ranges
            .first()
            .is_some_and(|&(_, hi)| hi >= pn.saturating_add(PROBE_PACKET_THRESHOLD))
        {
            self.on_probe_lost();
        }
    }

    /// The probe on its way is lost if it left more than `timeout` ago (RFC 8899 §5.1.1:
    /// PROBE_TIMER).
    pub(crate) fn on_timeout(&mut self, now: Time, timeout: Duration) {
        if self.probe.is_some_and(|p| p.sent + timeout <= now) {
            self.on_probe_lost();
        }
    }

    /// When the probe on its way counts as lost for want of an answer.
    pub(crate) fn poll_timeout(&self, timeout: Duration) -> Option<Time> {
        self.probe.map(|p| p.sent + timeout)
    }

    fn on_probe_lost(&mut self) {
        let Some(probe) = self.probe.take() else {
            return;
        };
        self.counters.probes_lost += 1;
        self.losses += 1;
        // RFC 8899 §5.1.2: MAX_PROBES losses in a row and the size is too large.
        if self.losses >= MAX_PROBES {
            self.losses = 0;
            self.too_big = self.too_big.min(probe.size);
        }
    }

    /// The local network refused a datagram of `size` bytes (EMSGSIZE), or a validated ICMP
    /// Packet Too Big said `size` does not pass (RFC 8899 §4.6.2).
    pub(crate) fn on_too_big(&mut self, size: usize) -> TooBig {
        if let Some(probe) = self.probe.filter(|p| p.size == size) {
            // RFC 8899 §4.6.2: a probe refused is a probe that failed, at once and for certain.
            self.probe = None;
            self.losses = 0;
            self.counters.probes_lost += 1;
            self.too_big = self.too_big.min(probe.size);
            return TooBig::ProbeFailed;
        }
        if size > self.current {
            if size <= self.max {
                self.too_big = self.too_big.min(size);
                return TooBig::ProbeFailed;
            }
            return TooBig::Ignored;
        }
        if !self.enabled || self.current <= self.base || size <= self.base {
            return TooBig::Fatal;
        }
        self.fall_back(size);
        TooBig::Shrunk
    }

    /// Data packets of the current size keep being lost while smaller ones may pass: a black hole
    /// (RFC 8899 §4.3). Returns whether the size dropped.
    pub(crate) fn on_black_hole(&mut self) -> bool {
        if !self.enabled || self.current <= self.base {
            return false;
        }
        let current = self.current;
        self.fall_back(current);
        true
    }

    /// RFC 8899 §5.2: back to BASE_PLPMTU and search again below `failed`.
    fn fall_back(&mut self, failed: usize) {
        self.counters.black_holes += 1;
        self.current = self.base;
        self.too_big = failed;
        self.probe = None;
        self.losses = 0;
        self.resume_at = None;
        self.hint = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Time = Time::ZERO;

    /// Probe until the search completes on a path that passes datagrams up to `path` bytes,
    /// answering each probe by an acknowledgement or, three times, by later packets only.
    fn search(pmtu: &mut PathMtu, path: usize) -> (usize, u64) {
        let mut pn = 0;
        let mut probes = 0;
        while let Some(size) = pmtu.probe_due(NOW) {
            probes += 1;
            assert!(probes < 100, "the search must end");
            pmtu.on_probe_sent(NOW, pn, size);
            if size <= path {
                pmtu.on_ack(&[(pn, pn)]);
            } else {
                pmtu.on_ack(&[(pn + 1, pn + 3)]);
            }
            pn += 4;
        }
        (pmtu.current(), probes)
    }

    #[test]
    fn starts_at_1200_and_finds_an_ethernet_path() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        assert_eq!(pmtu.current(), 1200);
        let (found, _) = search(&mut pmtu, 1472);
        assert!(
            (1472 - SEARCH_GRANULARITY..=1472).contains(&found),
            "{found}"
        );
    }

    #[test]
    fn finds_a_jumbo_path_and_stops_at_the_ceiling() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        assert_eq!(search(&mut pmtu, 65_000).0, 8952);
    }

    #[test]
    fn a_path_narrower_than_the_base_keeps_the_base() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        assert_eq!(search(&mut pmtu, 1000).0, 1200);
    }

    #[test]
    fn one_lost_probe_does_not_condemn_a_size() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 1500);
        let size = pmtu.probe_due(NOW).unwrap();
        pmtu.on_probe_sent(NOW, 10, size);
        pmtu.on_ack(&[(11, 13)]);
        assert_eq!(pmtu.counters.probes_lost, 1);
        // The same size is tried again.
        assert_eq!(pmtu.probe_due(NOW), Some(size));
    }

    #[test]
    fn a_refused_probe_fails_at_once() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        let size = pmtu.probe_due(NOW).unwrap();
        pmtu.on_probe_sent(NOW, 0, size);
        assert_eq!(pmtu.on_too_big(size), TooBig::ProbeFailed);
        assert!(pmtu.probe_due(NOW).unwrap() < size);
    }

    #[test]
    fn a_probe_times_out() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 1500);
        let size = pmtu.probe_due(NOW).unwrap();
        pmtu.on_probe_sent(NOW, 0, size);
        let timeout = Duration::from_secs(1);
        assert_eq!(pmtu.poll_timeout(timeout), Some(NOW + timeout));
        pmtu.on_timeout(NOW + Duration::from_millis(999), timeout);
        assert_eq!(pmtu.counters.probes_lost, 0);
        pmtu.on_timeout(NOW + timeout, timeout);
        assert_eq!(pmtu.counters.probes_lost, 1);
    }

    #[test]
    fn a_shrinking_path_drops_to_the_base_and_searches_below() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        search(&mut pmtu, 8952);
        assert_eq!(pmtu.on_too_big(8952), TooBig::Shrunk);
        assert_eq!(pmtu.current(), BASE_DATAGRAM);
        let (found, _) = search(&mut pmtu, 1400);
        assert!((1400 - SEARCH_GRANULARITY..=1400).contains(&found));
        assert!(pmtu.on_black_hole());
        assert_eq!(pmtu.current(), BASE_DATAGRAM);
        assert_eq!(pmtu.counters.black_holes, 2);
    }

    #[test]
    fn a_pinned_size_never_probes_and_cannot_shrink() {
        let mut pmtu = PathMtu::new(false, BASE_DATAGRAM, 1400);
        assert_eq!(pmtu.current(), 1400);
        assert_eq!(pmtu.probe_due(NOW), None);
        assert_eq!(pmtu.on_too_big(1400), TooBig::Fatal);
        assert!(!pmtu.on_black_hole());
    }

    #[test]
    fn a_packet_too_big_is_believed_only_when_it_quotes_the_probe() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 8952);
        let size = pmtu.probe_due(NOW).unwrap();
        pmtu.on_probe_sent(NOW, 7, size);
        let mut datagram = vec![0u8; size];
        datagram[2..19].copy_from_slice(&[9; 17]);
        pmtu.on_probe_sealed(&datagram);
        // Forged: another quote, or a size above the probe's, or below the base.
        assert!(!pmtu.on_packet_too_big(1400, &[1; 40]));
        assert!(!pmtu.on_packet_too_big(size + 1, &datagram[..40]));
        assert!(!pmtu.on_packet_too_big(1000, &datagram[..40]));
        assert_eq!(pmtu.counters.ptb_ignored, 3);
        assert_eq!(pmtu.counters.probes_lost, 0);
        // Genuine: the probe failed at once and the next probe tries the size the router named.
        assert!(pmtu.on_packet_too_big(1400, &datagram[..40]));
        assert_eq!(pmtu.counters.probes_lost, 1);
        assert_eq!(pmtu.probe_due(NOW), Some(1400));
    }

    #[test]
    fn the_search_resumes_after_the_raise_timer() {
        let mut pmtu = PathMtu::new(true, BASE_DATAGRAM, 1500);
        search(&mut pmtu, 1300);
        assert_eq!(pmtu.probe_due(NOW + Duration::from_secs(1)), None);
        assert!(pmtu.probe_due(NOW + RAISE_INTERVAL).is_some());
    }
}
