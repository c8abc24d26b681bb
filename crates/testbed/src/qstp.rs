//! `qstp`, `tfrc-sack`, `tfrc` and `gtfrc` groups: a qstp-net endpoint (`qstp_net::Endpoint`, the
//! UDP endpoint of `qstp send` and `qstp recv`) on each side, each on a thread of its own inside
//! its host's namespace with a single-threaded tokio runtime (the endpoint's driver is one more
//! thread, started in the same namespace).
//!
//! The sender is saturated: its application always has data to send, bytes for the byte-stream
//! compositions and datagram-sized messages for the others, as the simulator's qstp agent. It
//! samples the connection's statistics at the end of every bin (packets sent and retransmitted,
//! the rate controller's X, X_recv, p and RTT). The sink counts the bytes its application reads
//! per bin: the goodput.
//!
//! The connection's configuration is the group's, made to match the simulator's: the datagram is
//! the scenario's packet size less the IPv4 and UDP headers, and packets go unprotected (as in
//! the lab, where they are the protocol's own bytes; the receiver's policy allows it here only).

use crate::hosts::{SenderOutput, Timing};
use crate::{ns, TestbedError};
use qstp_dataplane::headers::UDP_IP_HEADER;
use qstp_net::{Config, Connection, Endpoint, EndpointOptions, ServerPolicy};
use qstp_proto::Protection;
use qstp_proto::Time;
use qstp_sim::{RateSample, SenderSeries};
use std::future::Future;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The port qstp sinks listen on.
pub const QSTP_PORT: u16 = 4433;
/// How long a wait lasts before the loop looks at the clock and the stop flag again.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);
/// Bytes per read or write call.
const CHUNK: usize = 64 * 1024;

/// A group's configuration made to match the simulator's: datagrams of `packet_size` bytes on
/// the wire (IPv4 and UDP headers included), no packet protection, every packet number used.
pub fn flow_config(config: &Config, packet_size: usize) -> Result<Config, TestbedError> {
    let mut c = config.clone();
    c.max_datagram = packet_size.saturating_sub(UDP_IP_HEADER as usize);
    c.protection = Protection::Null;
    c.skip_packet_numbers = false;
    c.check_receiver = false;
    c.validate()
        .map_err(|e| TestbedError::Unsupported(format!("qstp configuration: {e}")))?;
    Ok(c)
}

fn host_error(netns: &str, what: &str, e: impl std::fmt::Display) -> TestbedError {
    TestbedError::Host {
        netns: netns.to_string(),
        message: format!("{what}: {e}"),
    }
}

fn runtime(netns: &str) -> Result<tokio::runtime::Runtime, TestbedError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| host_error(netns, "tokio runtime", e))
}

/// Run `f` until it resolves or the run is over (`None`), looking at the clock every [`POLL`].
async fn until_done<F: Future>(f: F, timing: &Timing, stop: &AtomicBool) -> Option<F::Output> {
    tokio::pin!(f);
    loop {
        if timing.done(stop) {
            return None;
        }
        if let Ok(out) = tokio::time::timeout(POLL, &mut f).await {
            return Some(out);
        }
    }
}

/// Start a sink in namespace `netns` accepting on `addr` with `config`'s limits; returns once it
/// is bound. The thread yields the bytes its application read per bin.
pub fn spawn_sink(
    netns: String,
    addr: SocketAddrV4,
    config: Config,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<Vec<u64>, TestbedError>>, TestbedError> {
    let (ready, bound) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let setup = ns::enter(&netns).and_then(|()| {
            let rt = runtime(&netns)?;
            let options = EndpointOptions {
                accept: Some(config),
                policy: ServerPolicy {
                    allow_unprotected: true,
                    ..ServerPolicy::default()
                },
                ..EndpointOptions::default()
            };
            let endpoint = rt
                .block_on(async { Endpoint::bind_with(SocketAddr::V4(addr), options) })
                .map_err(|e| host_error(&netns, "bind", e))?;
            Ok((rt, endpoint))
        });
        let Some((rt, endpoint)) = crate::hosts::announce(&ready, setup) else {
            return Ok(Vec::new());
        };
        let mut bins = vec![0u64; timing.bins];
        rt.block_on(async {
            let Some(Some(mut conn)) = until_done(endpoint.accept(), &timing, &stop).await else {
                return Ok(());
            };
            let stream = conn.config().map(|c| c.supports_stream()).unwrap_or(true);
            let mut buf = vec![0u8; CHUNK];
            loop {
                let n = if stream {
                    match until_done(conn.read(&mut buf), &timing, &stop).await {
                        None | Some(Ok(0)) => break,
                        Some(Ok(n)) => n,
                        // The sender going away as the run ends is not a failure.
                        Some(Err(_)) if timing.done(&stop) => break,
                        Some(Err(e)) => return Err(host_error(&netns, "read", e)),
                    }
                } else {
                    match until_done(conn.recv_message(), &timing, &stop).await {
                        None | Some(Ok(None)) => break,
                        Some(Ok(Some(m))) => m.len(),
                        Some(Err(_)) if timing.done(&stop) => break,
                        Some(Err(e)) => return Err(host_error(&netns, "receive", e)),
                    }
                };
                if let Some(b) = bins.get_mut(timing.bin_of(timing.clock.now())) {
                    *b += n as u64;
                }
            }
            conn.close(0, b"end of run");
            Ok(())
        })?;
        Ok(bins)
    });
    crate::hosts::started(&bound, handle, "qstp sink", "binding")
}

/// Start a saturated sender in namespace `netns` that connects to `to` at `start` with `config`,
/// its datagrams marked with `dscp` (`None`: qstp-net's choice, AF11 with a target rate).
pub fn spawn_sender(
    netns: String,
    to: SocketAddrV4,
    config: Config,
    dscp: Option<u8>,
    start: Time,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Result<SenderOutput, TestbedError>> {
    std::thread::spawn(move || {
        ns::enter(&netns)?;
        crate::hosts::wait_until(start, &timing, &stop);
        if timing.done(&stop) {
            return Ok(SenderOutput::default());
        }
        let rt = runtime(&netns)?;
        rt.block_on(async {
            let options = qstp_net::EndpointOptions {
                dscp: dscp.and_then(qstp_net::Dscp::new),
                ..qstp_net::EndpointOptions::default()
            };
            let endpoint = Endpoint::bind_with("0.0.0.0:0".parse().expect("an address"), options)
                .map_err(|e| host_error(&netns, "bind", e))?;
            let stream = config.supports_stream();
            // One message per datagram, as the simulator's saturated application.
            let message = config
                .max_datagram
                .saturating_sub(qstp_proto::wire::MAX_DATA_HEADER)
                .max(1);
            let conn = match until_done(
                endpoint.connect(SocketAddr::V4(to), config),
                &timing,
                &stop,
            )
            .await
            {
                None => return Ok(SenderOutput::default()),
                Some(Ok(c)) => c,
                Some(Err(e)) => return Err(host_error(&netns, "connect", e)),
            };
            let mut sampler = Sampler::new(timing.bins);
            let mut sampled = timing.bin_of(timing.clock.now());
            let data = vec![0x5au8; CHUNK];
            let mut conn = conn;
            while !timing.done(&stop) {
                // A write waits at most one poll (a full send buffer can hold it much longer),
                // so that every bin is sampled; an unfinished write has taken nothing.
                let wrote = if stream {
                    tokio::time::timeout(POLL, conn.write(&data))
                        .await
                        .map(|r| r.map(|_| ()))
                } else {
                    tokio::time::timeout(POLL, conn.send_message(&data[..message]))
                        .await
                        .map(|r| r.map_err(std::io::Error::from))
                };
                match wrote {
                    Err(_) | Ok(Ok(())) => {}
                    Ok(Err(_)) if timing.done(&stop) => break,
                    Ok(Err(e)) => return Err(host_error(&netns, "write", e)),
                }
                let bin = timing.bin_of(timing.clock.now());
                if bin > sampled {
                    sampler.sample(&conn, sampled);
                    sampled = bin;
                }
            }
            sampler.sample(&conn, sampled);
            conn.close(0, b"end of run");
            Ok(sampler.finish(&conn))
        })
    })
}

/// A sender's statistics, bin by bin.
pub(crate) struct Sampler {
    out: SenderOutput,
    last_sent: u64,
    last_retransmitted: u64,
    last_events: u64,
}

impl Sampler {
    pub(crate) fn new(bins: usize) -> Self {
        Sampler {
            out: SenderOutput {
                series: SenderSeries {
                    sent: vec![0; bins],
                    retransmitted: vec![0; bins],
                    rtt_ns: vec![0; bins],
                    rtt_samples: vec![0; bins],
                    cwnd_bytes: vec![0; bins],
                    loss_events: vec![0; bins],
                    timeouts: Vec::new(),
                    rate: vec![None; bins],
                },
                ..SenderOutput::default()
            },
            last_sent: 0,
            last_retransmitted: 0,
            last_events: 0,
        }
    }

    /// What the connection did up to the end of bin `bin`.
    pub(crate) fn sample(&mut self, conn: &Connection, bin: usize) {
        let Ok(s) = conn.stats() else { return };
        let series = &mut self.out.series;
        if bin >= series.sent.len() {
            return;
        }
        series.sent[bin] += s.packets_sent.saturating_sub(self.last_sent);
        series.retransmitted[bin] += s
            .packets_retransmitted
            .saturating_sub(self.last_retransmitted);
        series.loss_events[bin] += s.loss_event_rate_increases.saturating_sub(self.last_events);
        series.rtt_ns[bin] = s.rtt.as_nanos();
        series.rtt_samples[bin] = 1;
        series.rate[bin] = Some(RateSample {
            rate_bps: s.rate.bps(),
            x_recv_bps: s.x_recv.bps(),
            loss_event_rate_ppb: (s.loss_event_rate * 1e9).round() as u64,
            rtt_ns: s.rtt.as_nanos(),
        });
        self.last_sent = s.packets_sent;
        self.last_retransmitted = s.packets_retransmitted;
        self.last_events = s.loss_event_rate_increases;
    }

    pub(crate) fn finish(mut self, conn: &Connection) -> SenderOutput {
        if let Ok(s) = conn.stats() {
            self.out.packets_sent = s.packets_sent;
            self.out.packets_retransmitted = s.packets_retransmitted;
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use qstp_net::Rate;

    #[test]
    fn the_flow_s_datagram_leaves_room_for_ip_and_udp_and_goes_unprotected() {
        let c = flow_config(&Config::qstp(Rate::from_kbps(500)), 1500).unwrap();
        assert_eq!(c.max_datagram, 1472);
        assert_eq!(c.protection, Protection::Null);
        assert!(!c.skip_packet_numbers);
        assert!(!c.check_receiver);
        assert!(flow_config(&Config::default(), 30).is_err());
    }
}
