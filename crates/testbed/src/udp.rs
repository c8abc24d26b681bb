//! `cbr` groups: a UDP source following the group's rate schedule and a sink counting what
//! arrives, each on a thread of its own inside its host's namespace.

use crate::hosts::Timing;
use crate::{ns, TestbedError};
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_proto::{Duration, Rate, Time};
use std::net::{SocketAddrV4, UdpSocket};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// The port UDP sinks listen on (discard, RFC 863; as the simulator's packet captures).
pub const UDP_PORT: u16 = 9;
/// Longest sleep of a source or a sink before it looks at the clock again.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// Largest datagram a sink reads (bounds its buffer).
const MAX_DATAGRAM: usize = 65_535;

fn host_error(netns: &str, what: &str, e: std::io::Error) -> TestbedError {
    TestbedError::Host {
        netns: netns.to_string(),
        message: format!("{what}: {e}"),
    }
}

/// Start a sink in namespace `netns` on `addr`; returns once it is bound. The thread yields the
/// UDP payload bytes received per bin (what the simulator's UDP sink counts as delivered).
pub fn spawn_sink(
    netns: String,
    addr: SocketAddrV4,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<Vec<u64>, TestbedError>>, TestbedError> {
    let (ready, bound) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let setup = ns::enter(&netns).and_then(|()| {
            let s = UdpSocket::bind(addr).map_err(|e| host_error(&netns, "bind", e))?;
            s.set_read_timeout(Some(POLL))
                .map_err(|e| host_error(&netns, "socket", e))?;
            Ok(s)
        });
        let Some(socket) = crate::hosts::announce(&ready, setup) else {
            return Ok(Vec::new());
        };
        let mut bins = vec![0u64; timing.bins];
        let mut buf = vec![0u8; MAX_DATAGRAM];
        while !timing.done(&stop) {
            match socket.recv(&mut buf) {
                Ok(n) => {
                    if let Some(b) = bins.get_mut(timing.bin_of(timing.clock.now())) {
                        *b += n as u64;
                    }
                }
                Err(e) if crate::hosts::is_timeout(&e) => {}
                Err(e) => return Err(host_error(&netns, "recv", e)),
            }
        }
        Ok(bins)
    });
    crate::hosts::started(&bound, handle, "udp sink", "binding")
}

/// The schedule's rate at `t` (steps `(from, rate)` sorted by `from`; zero before the first).
pub fn rate_at(schedule: &[(Duration, Rate)], t: Duration) -> Rate {
    schedule
        .iter()
        .take_while(|(from, _)| *from <= t)
        .last()
        .map_or(Rate::ZERO, |&(_, r)| r)
}

/// The on and off periods of an `onoff` source: exponential, with these means, drawn from the
/// flow's own seeded stream.
#[derive(Debug, Clone)]
pub struct OnOff {
    /// Mean on period.
    pub mean_on: Duration,
    /// Mean off period.
    pub mean_off: Duration,
    /// The flow's random stream.
    pub rng: rand_chacha::ChaCha8Rng,
}

impl OnOff {
    /// An exponential period of mean `mean` (at least 1 ns), by inversion: -mean ln(1 - U).
    fn period(&mut self, mean: Duration) -> Duration {
        use rand::RngCore;
        let uniform = (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        mean.mul_f64(-(1.0 - uniform).ln())
            .max(Duration::from_nanos(1))
    }
}

/// What a UDP source sends.
#[derive(Debug)]
pub struct Source {
    /// Its rate over time since the run's start.
    pub schedule: Vec<(Duration, Rate)>,
    /// Bytes per packet on the wire.
    pub size: usize,
    /// Its on and off periods (`None`: always on).
    pub on_off: Option<OnOff>,
    /// The DSCP its packets carry (`None`: the socket's default, CS0).
    pub dscp: Option<u8>,
}

/// Start a UDP source in namespace `netns` sending `source`'s packets to `to` from `start`, at
/// the rate its schedule gives (in time since the run's start): constant bit rate, or, with
/// on/off periods, only during its on periods (the first starts at `start`). The thread yields
/// the datagrams it sent.
pub fn spawn_source(
    netns: String,
    to: SocketAddrV4,
    source: Source,
    start: Time,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Result<u64, TestbedError>> {
    std::thread::spawn(move || {
        ns::enter(&netns)?;
        let Source {
            schedule,
            size,
            mut on_off,
            dscp,
        } = source;
        let socket = UdpSocket::bind("0.0.0.0:0")
            .and_then(|s| s.connect(to).map(|()| s))
            .map_err(|e| host_error(&netns, "socket", e))?;
        if let Some(d) = dscp {
            crate::hosts::set_dscp(&socket2::SockRef::from(&socket), d)
                .map_err(|e| host_error(&netns, "IP_TOS", e))?;
        }
        let payload = vec![0u8; size.saturating_sub(UDP_IP_HEADER as usize).max(1)];
        let mut next = start;
        let mut sent = 0u64;
        // (on, when it switches next)
        let mut phase = on_off.as_mut().map(|o| (true, start + o.period(o.mean_on)));
        while !timing.done(&stop) {
            let now = timing.clock.now();
            if let (Some(o), Some((on, switch_at))) = (on_off.as_mut(), phase.as_mut()) {
                while *switch_at <= now {
                    *on = !*on;
                    let at = *switch_at;
                    *switch_at = at + o.period(if *on { o.mean_on } else { o.mean_off });
                    if *on {
                        // Nothing is owed for the off period: sending resumes at its end.
                        next = next.max(at);
                    }
                }
                if !*on {
                    let wait = (*switch_at - now).as_nanos().min(POLL.as_nanos() as u64);
                    std::thread::sleep(std::time::Duration::from_nanos(wait));
                    continue;
                }
            }
            if next <= now {
                let rate = rate_at(&schedule, next - Time::ZERO);
                if rate.is_zero() {
                    // Idle until the next step of the schedule (or a poll later).
                    next = now + Duration::from_nanos(POLL.as_nanos() as u64);
                    continue;
                }
                // A send the kernel refuses (a full buffer) is a packet lost at the source.
                if socket.send(&payload).is_ok() {
                    sent += 1;
                }
                next += rate.transmit_time(size);
                continue;
            }
            let wait = (next - now).as_nanos().min(POLL.as_nanos() as u64);
            std::thread::sleep(std::time::Duration::from_nanos(wait));
        }
        Ok(sent)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rate_follows_the_schedule_s_steps() {
        let s = |x| Duration::from_secs(x);
        let schedule = vec![(s(0), Rate::from_kbps(300)), (s(60), Rate::from_kbps(1000))];
        assert_eq!(rate_at(&schedule, s(0)), Rate::from_kbps(300));
        assert_eq!(rate_at(&schedule, s(59)), Rate::from_kbps(300));
        assert_eq!(rate_at(&schedule, s(60)), Rate::from_kbps(1000));
        assert_eq!(rate_at(&[], s(1)), Rate::ZERO);
    }
}
