//! The dumbbell as namespaces: one per sender host, one per receiver host, one for the router.
//!
//! Flow F of group G sends from 10.1.G.F to 10.2.G.F (the addresses the simulator's packet
//! captures use). Each host reaches the router over a veth pair (`eth0` in the host, `sN`/`dN`
//! in the router, whose router ends all hold 10.0.0.1, the hosts' gateway). In the router's
//! namespace the kernel forwards 10.2.0.0/16 into the TUN device `tunf` and 10.1.0.0/16 into
//! `tunr`, where our router reads them; what the router writes back into a TUN device is routed
//! by table 100 (`ip rule iif tunX`) straight to the destination host's veth.

use crate::ns::{self, Namespaces};
use crate::tun::Tun;
use crate::TestbedError;
use std::net::Ipv4Addr;

/// The routing table of packets the router wrote back (by incoming TUN device).
pub(crate) const TABLE: &str = "100";
/// The router side's address on every veth: the hosts' gateway.
pub(crate) const GATEWAY: &str = "10.0.0.1";
/// Packets a TUN device's kernel queue holds before the kernel drops (counted as packets the
/// router could not keep up with).
pub const TUN_QUEUE: u32 = 10_000;

/// One host's TCP settings, from its group's options.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct HostTcp {
    /// `net.ipv4.tcp_sack` (RFC 2018), as the group's `sack`.
    pub sack: bool,
    /// `net.ipv4.tcp_timestamps`: off, as the simulator's TCP has no timestamp option (RFC 7323).
    pub timestamps: bool,
    /// `net.ipv4.tcp_ecn` (RFC 3168 §6.1.1: 1 asks for ECN on the connections it opens and accepts
    /// it on those it is asked for), as the group's `ecn`: on, the kernel sends its data ECT(0)
    /// and answers a CE mark as the lab's TCP does; off (0), neither side negotiates it.
    pub ecn: bool,
    /// The sender route's `initcwnd`, segments (the group's `initial_window`).
    pub initcwnd: u32,
    /// The sender route's `rto_min`, ms (the group's `min_rto`).
    pub rto_min_ms: u64,
    /// The receiver route's `quickack`: acknowledge every segment (the group's `delayed_ack`
    /// off, RFC 5681 §4.2 allows delaying).
    pub quickack: bool,
    /// The hosts' MTU: the group's packet size on the wire, so that a full segment is one
    /// simulated packet.
    pub mtu: usize,
    /// The scenario's own sysctls (`key=value`), set after those above.
    pub sysctl: Vec<String>,
}

/// One flow's two hosts.
#[derive(Debug, Clone)]
pub struct HostPair {
    /// The sender's namespace.
    pub sender_ns: String,
    /// The receiver's namespace.
    pub receiver_ns: String,
    /// The sender's address.
    pub sender: Ipv4Addr,
    /// The receiver's address.
    pub receiver: Ipv4Addr,
}

/// The addresses of flow `flow` of group `group` (both below 256).
pub fn addresses(group: usize, flow: usize) -> (Ipv4Addr, Ipv4Addr) {
    let (g, f) = (group as u8, flow as u8);
    (Ipv4Addr::new(10, 1, g, f), Ipv4Addr::new(10, 2, g, f))
}

/// The router's namespace, set up to forward into the TUN devices.
pub fn router(guard: &mut Namespaces) -> Result<String, TestbedError> {
    let r = guard.create("r")?;
    ns::sysctl(
        &r,
        &[
            "net.ipv4.ip_forward=1".into(),
            // Packets written into tunf carry sources routed via tunr: no reverse-path filter
            // (RFC 3704 §2.2 strict mode would drop them).
            "net.ipv4.conf.all.rp_filter=0".into(),
            "net.ipv4.conf.default.rp_filter=0".into(),
            "net.ipv6.conf.all.disable_ipv6=1".into(),
            "net.ipv6.conf.default.disable_ipv6=1".into(),
        ],
    )?;
    Ok(r)
}

/// Create flow `index`'s two hosts (group `group`, flow `flow` of it) and join them to the
/// router `r`, with the TCP settings `tcp`.
pub fn hosts(
    guard: &mut Namespaces,
    r: &str,
    index: usize,
    (group, flow): (usize, usize),
    tcp: &HostTcp,
) -> Result<HostPair, TestbedError> {
    let (sender, receiver) = addresses(group, flow);
    let mut names = Vec::new();
    for (side, addr) in [("s", sender), ("d", receiver)] {
        let host = guard.create(&format!("{side}{index}"))?;
        let flag = |b: bool| if b { "1" } else { "0" };
        let mut settings = vec![
            format!("net.ipv4.tcp_sack={}", flag(tcp.sack)),
            format!("net.ipv4.tcp_timestamps={}", flag(tcp.timestamps)),
            format!("net.ipv4.tcp_ecn={}", flag(tcp.ecn)),
            "net.ipv4.tcp_no_metrics_save=1".into(),
            "net.ipv6.conf.all.disable_ipv6=1".into(),
            "net.ipv6.conf.default.disable_ipv6=1".into(),
        ];
        settings.extend(tcp.sysctl.iter().cloned());
        ns::sysctl(&host, &settings)?;
        let dev = format!("{side}{index}");
        let addr = addr.to_string();
        ns::ip(&[
            "-n", r, "link", "add", &dev, "type", "veth", "peer", "name", "eth0", "netns", &host,
        ])?;
        ns::ip(&[
            "-n",
            r,
            "addr",
            "add",
            &format!("{GATEWAY}/32"),
            "dev",
            &dev,
        ])?;
        let mtu = tcp.mtu.to_string();
        ns::ip(&["-n", r, "link", "set", &dev, "mtu", &mtu, "up"])?;
        ns::ip(&["-n", r, "route", "add", &addr, "dev", &dev, "table", TABLE])?;
        ns::ip(&[
            "-n",
            &host,
            "addr",
            "add",
            &format!("{addr}/32"),
            "dev",
            "eth0",
        ])?;
        ns::ip(&["-n", &host, "link", "set", "eth0", "mtu", &mtu, "up"])?;
        ns::ip(&["-n", &host, "route", "add", GATEWAY, "dev", "eth0"])?;
        let mut route = vec![
            "-n", &host, "route", "add", "default", "via", GATEWAY, "dev", "eth0",
        ];
        let initcwnd = tcp.initcwnd.to_string();
        let rto_min = format!("{}ms", tcp.rto_min_ms);
        if side == "s" {
            route.extend(["initcwnd", &initcwnd, "rto_min", &rto_min]);
        } else if tcp.quickack {
            route.extend(["quickack", "1"]);
        }
        ns::ip(&route)?;
        names.push(host);
    }
    let receiver_ns = names.pop().unwrap_or_default();
    let sender_ns = names.pop().unwrap_or_default();
    Ok(HostPair {
        sender_ns,
        receiver_ns,
        sender,
        receiver,
    })
}

/// Create the two TUN devices in `r` (forward `tunf`, backward `tunr`) and route through them,
/// with TCP offloads on: reads may return a sender's super-packet of up to
/// [`crate::packet::MAX_SEGMENTS`] segments, writes may hand one to the kernel.
pub fn tuns(r: &str) -> Result<(Tun, Tun), TestbedError> {
    let name = r.to_string();
    let (f, b) = std::thread::spawn(move || {
        ns::enter(&name)?;
        Ok::<_, TestbedError>((Tun::create("tunf")?, Tun::create("tunr")?))
    })
    .join()
    .map_err(|_| TestbedError::Tun {
        name: "tunf".into(),
        message: "the thread creating it panicked".into(),
    })??;
    // The senders' TCP super-packets reach the router whole (it cuts them into segments before
    // the bottleneck); at most MAX_SEGMENTS segments each (`gso_max_segs`, below).
    for t in [&f, &b] {
        t.offload().map_err(|e| TestbedError::Tun {
            name: t.name().to_string(),
            message: format!("TUNSETOFFLOAD: {e}"),
        })?;
    }
    let queue = TUN_QUEUE.to_string();
    let segs = crate::packet::MAX_SEGMENTS.to_string();
    for (dev, prefix) in [("tunf", "10.2.0.0/16"), ("tunr", "10.1.0.0/16")] {
        ns::ip(&[
            "-n",
            r,
            "link",
            "set",
            dev,
            "up",
            "txqueuelen",
            &queue,
            "gso_max_segs",
            &segs,
        ])?;
        ns::ip(&["-n", r, "route", "add", prefix, "dev", dev])?;
        ns::ip(&["-n", r, "rule", "add", "iif", dev, "lookup", TABLE])?;
    }
    Ok((f, b))
}

/// Packets the kernel dropped at TUN device `dev` of namespace `r` because the router did not
/// read them in time (its transmit queue was full).
pub fn tun_drops(r: &str, dev: &str) -> Result<u64, TestbedError> {
    let output = std::process::Command::new("ip")
        .args(["-n", r, "-s", "-j", "link", "show", "dev", dev])
        .output()
        .map_err(|e| TestbedError::Command {
            command: "ip -s -j link show".into(),
            message: e.to_string(),
        })?;
    let value: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| TestbedError::Decode(format!("ip -j link: {e}")))?;
    value
        .get(0)
        .and_then(|d| d.pointer("/stats64/tx/dropped"))
        .and_then(serde_json::Value::as_u64)
        .ok_or_else(|| TestbedError::Decode("ip -j link: no stats64.tx.dropped".into()))
}
