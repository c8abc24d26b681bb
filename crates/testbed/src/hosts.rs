//! The hosts: a kernel TCP bulk sender and a sink of ours, each on a thread of its own inside its
//! host's namespace.
//!
//! The sender writes as fast as its socket takes data, with the group's congestion control set by
//! `TCP_CONGESTION` before it connects, and samples `TCP_INFO` at the end of every bin (segments
//! sent and retransmitted, smoothed RTT, window) and its namespace's `TcpExt` counters (its loss
//! recoveries: the namespace holds this one connection). The sink counts the bytes its
//! application reads per bin: the goodput.

use crate::lines::Clock;
use crate::{ns, TestbedError};
use qstp_proto::{Duration, Time};
use qstp_sim::SenderSeries;
use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

/// The port sinks listen on (the simulator's pcap uses 5001 for TCP too).
pub const TCP_PORT: u16 = 5001;
/// Bytes per read or write call.
const CHUNK: usize = 64 * 1024;
/// How long a blocking socket call waits before the loop looks at the clock again.
const POLL: std::time::Duration = std::time::Duration::from_millis(20);

/// When and how long the hosts run, and how they count.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// The run's clock.
    pub clock: Clock,
    /// When every host stops.
    pub end: Time,
    /// Bin width.
    pub bin: Duration,
    /// Bins recorded.
    pub bins: usize,
}

impl Timing {
    pub(crate) fn bin_of(&self, t: Time) -> usize {
        (t.as_nanos() / self.bin.as_nanos().max(1)) as usize
    }
    pub(crate) fn done(&self, stop: &AtomicBool) -> bool {
        self.clock.now() >= self.end || stop.load(Ordering::Relaxed) || crate::signal::interrupted()
    }
}

/// The congestion controls this kernel offers (`tcp_available_congestion_control`).
pub fn available_congestion() -> Result<Vec<String>, TestbedError> {
    let path = "/proc/sys/net/ipv4/tcp_available_congestion_control";
    let text = std::fs::read_to_string(path).map_err(|e| TestbedError::Command {
        command: format!("read {path}"),
        message: e.to_string(),
    })?;
    Ok(text.split_whitespace().map(str::to_string).collect())
}

/// The kernel's name for a scenario's congestion control: the simulator's `newreno` (alias
/// `reno`) is Linux's `reno` (RFC 5681 with RFC 6582 recovery); other names are the kernel's.
pub fn kernel_congestion(name: &str) -> String {
    match name.to_ascii_lowercase().as_str() {
        "newreno" | "reno" => "reno".into(),
        other => other.to_string(),
    }
}

/// Tell the spawning thread how a receiver's setup went (`ready`), and hand back what it set up;
/// `None` after a failure, which the spawner reports.
pub(crate) fn announce<T>(
    ready: &mpsc::Sender<Result<(), TestbedError>>,
    setup: Result<T, TestbedError>,
) -> Option<T> {
    match setup {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            Some(x)
        }
        Err(e) => {
            let _ = ready.send(Err(e));
            None
        }
    }
}

/// Start a sink in namespace `netns` listening on `addr`; returns once it listens. The thread
/// yields the bytes read per bin.
pub fn spawn_sink(
    netns: String,
    addr: SocketAddrV4,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<Vec<u64>, TestbedError>>, TestbedError> {
    let (ready, listening) = mpsc::channel();
    let handle = std::thread::spawn(move || {
        let Some(listener) = announce(&ready, ns::enter(&netns).and_then(|()| bind(addr))) else {
            return Ok(Vec::new());
        };
        let mut bins = vec![0u64; timing.bins];
        let mut stream = loop {
            if timing.done(&stop) {
                return Ok(bins);
            }
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
                Err(e) => return Err(host_error(&netns, "accept", e)),
            }
        };
        stream
            .set_nonblocking(false)
            .and_then(|()| stream.set_read_timeout(Some(POLL)))
            .map_err(|e| host_error(&netns, "socket", e))?;
        let mut buf = vec![0u8; CHUNK];
        while !timing.done(&stop) {
            match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if let Some(b) = bins.get_mut(timing.bin_of(timing.clock.now())) {
                        *b += n as u64;
                    }
                }
                Err(e) if is_timeout(&e) => {}
                // The sender closing as the run ends is not a failure.
                Err(_) if timing.done(&stop) => break,
                Err(e) => return Err(host_error(&netns, "read", e)),
            }
        }
        Ok(bins)
    });
    started(&listening, handle, "sink", "listening")
}

/// Wait for a sink thread to say it is ready (`ready` after `what`) and hand back its handle.
pub(crate) fn started<T>(
    ready: &mpsc::Receiver<Result<(), TestbedError>>,
    handle: std::thread::JoinHandle<T>,
    netns: &str,
    what: &str,
) -> Result<std::thread::JoinHandle<T>, TestbedError> {
    match ready.recv() {
        Ok(Ok(())) => Ok(handle),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(TestbedError::Host {
            netns: netns.into(),
            message: format!("the {netns} thread ended before {what}"),
        }),
    }
}

fn bind(addr: SocketAddrV4) -> Result<TcpListener, TestbedError> {
    let l = TcpListener::bind(addr).map_err(|e| TestbedError::Host {
        netns: addr.to_string(),
        message: format!("bind: {e}"),
    })?;
    l.set_nonblocking(true).map_err(|e| TestbedError::Host {
        netns: addr.to_string(),
        message: e.to_string(),
    })?;
    Ok(l)
}

pub(crate) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

fn host_error(netns: &str, what: &str, e: std::io::Error) -> TestbedError {
    TestbedError::Host {
        netns: netns.to_string(),
        message: format!("{what}: {e}"),
    }
}

/// What a sender measured.
#[derive(Debug, Clone, Default)]
pub struct SenderOutput {
    /// Per bin, from `TCP_INFO`.
    pub series: SenderSeries,
    /// Data segments sent, retransmissions included (`tcpi_data_segs_out`).
    pub packets_sent: u64,
    /// Segments retransmitted (`tcpi_total_retrans`).
    pub packets_retransmitted: u64,
}

/// Mark what `socket` sends with `dscp`: its TOS byte is the code point and two ECN bits, left
/// zero here for the kernel (RFC 2474 §3, RFC 3168 §5).
pub fn set_dscp(socket: &socket2::Socket, dscp: u8) -> std::io::Result<()> {
    socket.set_tos(u32::from(dscp & 0x3f) << 2)
}

/// Start a bulk sender in namespace `netns` that connects to `to` at `start` with the kernel
/// congestion control `congestion`, its packets marked with `dscp`.
pub fn spawn_sender(
    netns: String,
    to: SocketAddrV4,
    congestion: String,
    dscp: Option<u8>,
    start: Time,
    timing: Timing,
    stop: Arc<AtomicBool>,
) -> JoinHandle<Result<SenderOutput, TestbedError>> {
    std::thread::spawn(move || {
        ns::enter(&netns)?;
        wait_until(start, &timing, &stop);
        if timing.done(&stop) {
            return Ok(SenderOutput::default());
        }
        let err = |what: &str, e: std::io::Error| host_error(&netns, what, e);
        let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .map_err(|e| err("socket", e))?;
        set_congestion(&socket, &congestion).map_err(|e| err("TCP_CONGESTION", e))?;
        if let Some(d) = dscp {
            set_dscp(&socket, d).map_err(|e| err("IP_TOS", e))?;
        }
        // A handshake still unanswered when the run ends (its SYNs lost in a full queue and
        // retried after 1 s, 2 s, .., RFC 6298 §2.1 and §5.5) is a flow that never started, not
        // a failure; the wait watches the clock and the stop flag.
        match connect(&socket, to, &timing, &stop) {
            Ok(true) => {}
            Ok(false) => return Ok(SenderOutput::default()),
            Err(e) => return Err(err("connect", e)),
        }
        let mut stream: TcpStream = socket.into();
        stream
            .set_write_timeout(Some(POLL))
            .map_err(|e| err("socket", e))?;
        let data = vec![0x5au8; CHUNK];
        let mut out = SenderOutput {
            series: SenderSeries {
                sent: vec![0; timing.bins],
                retransmitted: vec![0; timing.bins],
                rtt_ns: vec![0; timing.bins],
                rtt_samples: vec![0; timing.bins],
                cwnd_bytes: vec![0; timing.bins],
                loss_events: vec![0; timing.bins],
                timeouts: vec![0; timing.bins],
                rate: Vec::new(),
            },
            ..SenderOutput::default()
        };
        let mut sampled = timing.bin_of(timing.clock.now());
        let mut last = TcpInfo::default();
        // The namespace's counters before this connection sent anything (the handshake's own
        // timeouts, if its SYN was lost, count as the first bin's).
        let mut last_ext = TcpExt::read().unwrap_or_default();
        while !timing.done(&stop) {
            match stream.write(&data) {
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                // The sink closing as the run ends is not a failure.
                Err(_) if timing.done(&stop) => break,
                Err(e) => return Err(err("write", e)),
            }
            // At the end of each bin, what the socket did in it.
            let bin = timing.bin_of(timing.clock.now());
            if bin > sampled {
                if let Ok(info) = tcp_info(&stream) {
                    record(&mut out, sampled, &info, &last);
                    last = info;
                }
                if let Ok(ext) = TcpExt::read() {
                    record_recoveries(&mut out, sampled, &ext, &last_ext);
                    last_ext = ext;
                }
                sampled = bin;
            }
        }
        if let Ok(info) = tcp_info(&stream) {
            record(&mut out, sampled, &info, &last);
            out.packets_sent = u64::from(info.data_segs_out);
            out.packets_retransmitted = u64::from(info.total_retrans);
        }
        if let Ok(ext) = TcpExt::read() {
            record_recoveries(&mut out, sampled, &ext, &last_ext);
        }
        let _ = stream.shutdown(std::net::Shutdown::Both);
        Ok(out)
    })
}

/// Sleep until `start`, or until the run is over.
pub(crate) fn wait_until(start: Time, timing: &Timing, stop: &AtomicBool) {
    while timing.clock.now() < start && !timing.done(stop) {
        let wait = (start - timing.clock.now()).as_nanos().min(20_000_000);
        std::thread::sleep(std::time::Duration::from_nanos(wait));
    }
}

/// Connect `socket` to `to`, waiting in short polls; `Ok(false)` if the run ended first.
fn connect(
    socket: &socket2::Socket,
    to: SocketAddrV4,
    timing: &Timing,
    stop: &AtomicBool,
) -> std::io::Result<bool> {
    socket.set_nonblocking(true)?;
    match socket.connect(&SocketAddr::V4(to).into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => loop {
            if timing.done(stop) {
                return Ok(false);
            }
            let mut fd = libc::pollfd {
                fd: socket.as_raw_fd(),
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one valid pollfd.
            let ready = unsafe { libc::poll(&mut fd, 1, POLL.as_millis() as libc::c_int) };
            if ready > 0 {
                if let Some(e) = socket.take_error()? {
                    return Err(e);
                }
                break;
            }
        },
        Err(e) => return Err(e),
    }
    socket.set_nonblocking(false)?;
    Ok(true)
}

fn record(out: &mut SenderOutput, bin: usize, info: &TcpInfo, last: &TcpInfo) {
    let s = &mut out.series;
    if bin >= s.sent.len() {
        return;
    }
    s.sent[bin] = u64::from(info.data_segs_out.wrapping_sub(last.data_segs_out));
    s.retransmitted[bin] = u64::from(info.total_retrans.wrapping_sub(last.total_retrans));
    s.rtt_ns[bin] = u64::from(info.rtt_us) * 1000;
    s.rtt_samples[bin] = 1;
    s.cwnd_bytes[bin] = u64::from(info.snd_cwnd) * u64::from(info.snd_mss);
}

fn record_recoveries(out: &mut SenderOutput, bin: usize, ext: &TcpExt, last: &TcpExt) {
    let s = &mut out.series;
    if bin >= s.loss_events.len() {
        return;
    }
    let timeouts = ext.timeouts.saturating_sub(last.timeouts);
    let recoveries = ext.recoveries().saturating_sub(last.recoveries());
    s.timeouts[bin] += timeouts;
    s.loss_events[bin] += timeouts + recoveries;
}

/// The loss-recovery counters of the calling thread's network namespace (`TcpExt` in
/// `/proc/thread-self/net/netstat`, as `nstat` shows them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpExt {
    /// `TCPTimeouts`: retransmission timer expiries (not counting loss probes).
    pub timeouts: u64,
    /// `TCPSackRecovery`: entries into fast recovery with SACK.
    pub sack_recoveries: u64,
    /// `TCPRenoRecovery`: entries into fast recovery without SACK.
    pub reno_recoveries: u64,
}

impl TcpExt {
    /// Entries into fast recovery, with SACK or without.
    pub fn recoveries(&self) -> u64 {
        self.sack_recoveries + self.reno_recoveries
    }

    /// The calling thread's namespace's counters.
    pub fn read() -> Result<TcpExt, TestbedError> {
        let text = std::fs::read_to_string("/proc/thread-self/net/netstat")
            .map_err(|e| TestbedError::Decode(format!("/proc/thread-self/net/netstat: {e}")))?;
        TcpExt::parse(&text)
    }

    /// The counters from the text of `/proc/net/netstat`: a `TcpExt:` line of names, then a
    /// `TcpExt:` line of values in the same order.
    pub fn parse(text: &str) -> Result<TcpExt, TestbedError> {
        let mut lines = text.lines().filter(|l| l.starts_with("TcpExt:"));
        let (Some(names), Some(values)) = (lines.next(), lines.next()) else {
            return Err(TestbedError::Decode("no TcpExt lines in netstat".into()));
        };
        let names: Vec<&str> = names.split_whitespace().skip(1).collect();
        let values: Vec<&str> = values.split_whitespace().skip(1).collect();
        if names.len() != values.len() {
            return Err(TestbedError::Decode(format!(
                "netstat's TcpExt has {} names and {} values",
                names.len(),
                values.len()
            )));
        }
        let get = |name: &str| -> Result<u64, TestbedError> {
            match names.iter().position(|n| *n == name) {
                None => Ok(0),
                Some(i) => values[i].parse().map_err(|_| {
                    TestbedError::Decode(format!("netstat's {name} is '{}'", values[i]))
                }),
            }
        };
        Ok(TcpExt {
            timeouts: get("TCPTimeouts")?,
            sack_recoveries: get("TCPSackRecovery")?,
            reno_recoveries: get("TCPRenoRecovery")?,
        })
    }
}

fn set_congestion(socket: &socket2::Socket, name: &str) -> std::io::Result<()> {
    // SAFETY: TCP_CONGESTION reads `name.len()` bytes from a valid buffer.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// The fields of Linux's `struct tcp_info` (linux/tcp.h) the sender reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Sender MSS, bytes.
    pub snd_mss: u32,
    /// Smoothed RTT, us.
    pub rtt_us: u32,
    /// Congestion window, segments.
    pub snd_cwnd: u32,
    /// Segments retransmitted over the connection.
    pub total_retrans: u32,
    /// Data segments sent, retransmissions included (Linux 4.6 and later).
    pub data_segs_out: u32,
}

/// Bytes of `struct tcp_info` up to and including `tcpi_data_segs_out`.
const TCP_INFO_LEN: usize = 160;

/// Read the fields of a `struct tcp_info` as the kernel wrote it (native byte order).
pub fn decode_tcp_info(b: &[u8]) -> Result<TcpInfo, TestbedError> {
    if b.len() < TCP_INFO_LEN {
        return Err(TestbedError::Decode(format!(
            "tcp_info of {} bytes, fewer than {TCP_INFO_LEN}",
            b.len()
        )));
    }
    let u32_at = |o: usize| u32::from_ne_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    Ok(TcpInfo {
        snd_mss: u32_at(16),
        rtt_us: u32_at(68),
        snd_cwnd: u32_at(80),
        total_retrans: u32_at(100),
        data_segs_out: u32_at(156),
    })
}

fn tcp_info(stream: &TcpStream) -> Result<TcpInfo, TestbedError> {
    let mut buf = [0u8; 256];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `buf` and the length into `len`.
    let rc = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(TestbedError::Decode(
            std::io::Error::last_os_error().to_string(),
        ));
    }
    decode_tcp_info(buf.get(..len as usize).unwrap_or(&[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn congestion_names_map_to_the_kernel_s() {
        assert_eq!(kernel_congestion("NewReno"), "reno");
        assert_eq!(kernel_congestion("reno"), "reno");
        assert_eq!(kernel_congestion("cubic"), "cubic");
    }

    #[test]
    fn netstat_s_tcp_ext_counters_are_read_by_name() {
        let text = "TcpExt: SyncookiesSent TCPRenoRecovery TCPSackRecovery TCPTimeouts\n\
                    TcpExt: 0 2 5 7\n\
                    IpExt: InNoRoutes\nIpExt: 0\n";
        let ext = TcpExt::parse(text).unwrap();
        assert_eq!((ext.timeouts, ext.recoveries()), (7, 7));
        assert!(TcpExt::parse("IpExt: A\nIpExt: 1\n").is_err());
        assert!(TcpExt::parse("TcpExt: A B\nTcpExt: 1\n").is_err());
        assert!(TcpExt::parse("TcpExt: TCPTimeouts\nTcpExt: x\n").is_err());
    }

    #[test]
    fn this_machine_s_netstat_parses() {
        // /proc/thread-self/net/netstat exists on every Linux this testbed runs on.
        let ext = TcpExt::read();
        assert!(ext.is_ok(), "{ext:?}");
    }

    #[test]
    fn tcp_info_decodes_at_the_kernel_s_offsets_and_refuses_short_buffers() {
        assert!(decode_tcp_info(&[0u8; 100]).is_err());
        let mut b = [0u8; 160];
        b[16..20].copy_from_slice(&1448u32.to_ne_bytes());
        b[68..72].copy_from_slice(&40_000u32.to_ne_bytes());
        b[80..84].copy_from_slice(&10u32.to_ne_bytes());
        b[100..104].copy_from_slice(&3u32.to_ne_bytes());
        b[156..160].copy_from_slice(&500u32.to_ne_bytes());
        let i = decode_tcp_info(&b).unwrap();
        assert_eq!(
            (
                i.snd_mss,
                i.rtt_us,
                i.snd_cwnd,
                i.total_retrans,
                i.data_segs_out
            ),
            (1448, 40_000, 10, 3, 500)
        );
    }
}
