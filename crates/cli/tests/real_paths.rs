//! `qstp send`/`recv` between network namespaces, over veth pairs of real MTUs (1500, 1280, 9000),
//! over IPv4 and IPv6, through a router whose next link has a smaller MTU (it answers with ICMP
//! Packet Too Big) and through one that drops those ICMP messages (a black hole, RFC 8899 §4.3).
//! Each transfer must arrive verified within a bounded time, with datagrams no larger than the
//! path carries.
//!
//! Needs root and the `ip` command; without them each test prints why it did not run and
//! returns. The namespaces are named `qtb<pid>x<n>-...` and removed when the test ends, even when
//! it fails.

#![cfg(target_os = "linux")]
#![allow(clippy::disallowed_types)]

mod common;

use common::{pattern, scratch, wait_bounded, QSTP};
use qstp_testbed::ns::{ip, unique_prefix, Namespaces};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// One transfer at a time: the machine's cores are shared, and a bounded time must stay honest.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Bytes sent per transfer.
const FILE_SIZE: usize = 8 << 20;

/// The longest a transfer may take, generous for a loaded machine (a clean one takes well under a
/// second; a black hole costs the search a few probe timeouts).
const TRANSFER_LIMIT: Duration = Duration::from_secs(60);

/// Why the test cannot run here, if it cannot: not root, or no `ip` command.
fn skip_reason() -> Option<String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root: network namespaces need CAP_NET_ADMIN".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(out) if out.status.success() => None,
        _ => Some("no `ip` command (iproute2)".into()),
    }
}

/// Skip with a printed reason when the test cannot run here.
macro_rules! require_namespaces {
    () => {
        if let Some(reason) = skip_reason() {
            eprintln!("skipped: {reason}");
            return;
        }
    };
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Family {
    V4,
    V6,
}

impl Family {
    /// The address of host `host` on subnet `net`.
    fn address(self, net: u8, host: u8) -> String {
        match self {
            Family::V4 => format!("10.77.{net}.{host}"),
            Family::V6 => format!("fd77:0:0:{net}::{host}"),
        }
    }

    fn prefix_len(self) -> &'static str {
        match self {
            Family::V4 => "24",
            Family::V6 => "64",
        }
    }

    /// IP and UDP header bytes.
    fn headers(self) -> usize {
        match self {
            Family::V4 => 28,
            Family::V6 => 48,
        }
    }

    fn flag(self) -> &'static str {
        match self {
            Family::V4 => "-4",
            Family::V6 => "-6",
        }
    }
}

/// A veth pair `a_dev` in `a` and `b_dev` in `b`, with their MTUs, up, addressed on subnet `net`
/// (host 1 in `a`, host 2 in `b`).
#[allow(clippy::too_many_arguments)]
fn link(
    family: Family,
    a: &str,
    a_dev: &str,
    a_mtu: u32,
    b: &str,
    b_dev: &str,
    b_mtu: u32,
    net: u8,
) {
    ip(&[
        "link", "add", a_dev, "netns", a, "type", "veth", "peer", "name", b_dev, "netns", b,
    ])
    .unwrap();
    for (ns, dev, mtu, host) in [(a, a_dev, a_mtu, 1), (b, b_dev, b_mtu, 2)] {
        let mtu = mtu.to_string();
        ip(&["-n", ns, "link", "set", dev, "mtu", &mtu, "up"]).unwrap();
        let addr = format!("{}/{}", family.address(net, host), family.prefix_len());
        let mut args = vec!["-n", ns, family.flag(), "addr", "add", &addr, "dev", dev];
        if family == Family::V6 {
            // No duplicate address detection: the address is usable at once.
            args.push("nodad");
        }
        ip(&args).unwrap();
    }
}

/// The ICMP "too big" messages namespace `ns` received: IPv4 destination unreachables (fragmentation
/// needed among them) or IPv6 Packet Too Big.
fn too_big_received(ns: &str, family: Family) -> u64 {
    let (file, key) = match family {
        Family::V4 => ("/proc/net/snmp", "InDestUnreachs"),
        Family::V6 => ("/proc/net/snmp6", "Icmp6InPktTooBigs"),
    };
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", file])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    match family {
        Family::V6 => text
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0),
        Family::V4 => {
            // Two lines per protocol: the names, then the values.
            let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("Icmp:")).collect();
            let names: Vec<&str> = lines[0].split_whitespace().collect();
            let values: Vec<&str> = lines[1].split_whitespace().collect();
            let at = names.iter().position(|n| *n == key).unwrap();
            values[at].parse().unwrap()
        }
    }
}

/// What one transfer gave.
struct Outcome {
    /// The size of the datagrams at the end, from `send --json`.
    datagram_size: u64,
    /// ICMP Packet Too Big messages the sender believed.
    ptb_accepted: u64,
    goodput_bps: f64,
    elapsed: Duration,
}

/// `qstp recv --once` in `b` on `to`, `qstp send` of an 8 MB file from `a`: both must succeed
/// within [`TRANSFER_LIMIT`], the file arrive intact and `send --json` say it was verified.
fn transfer(a: &str, b: &str, to: &str, tag: &str, extra: &[&str]) -> Outcome {
    let dir = scratch(&format!("real-paths-{tag}"));
    let data = pattern(FILE_SIZE);
    let source = dir.join("data.bin");
    std::fs::write(&source, &data).unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let listen = if to.contains(':') {
        format!("[{to}]:4433")
    } else {
        format!("{to}:4433")
    };
    let mut out_dir = out.to_string_lossy().into_owned();
    out_dir.push('/');
    let mut receiver = Command::new("ip")
        .args([
            "netns", "exec", b, QSTP, "recv", "--once", "--listen", &listen,
        ])
        .args(["--out", &out_dir])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for "listening on ..." before sending.
    let mut stderr = BufReader::new(receiver.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "recv said: {line}");
    std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    let started = Instant::now();
    let mut sender = Command::new("ip")
        .args(["netns", "exec", a, QSTP, "send"])
        .arg(&source)
        .args(["--to", to, "--json", "--quiet"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut sender, TRANSFER_LIMIT);
    let elapsed = started.elapsed();
    let output = sender.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        status.success(),
        "send failed: {}{}",
        stdout,
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(wait_bounded(&mut receiver, Duration::from_secs(15)).success());
    assert!(
        std::fs::read(out.join("data.bin")).unwrap() == data,
        "the file arrived altered"
    );
    let json: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(json["verified"], true, "{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
    Outcome {
        datagram_size: json["datagram_size"].as_u64().unwrap(),
        ptb_accepted: json["pmtu_ptb_accepted"].as_u64().unwrap(),
        goodput_bps: json["goodput_bps"].as_f64().unwrap(),
        elapsed,
    }
}

/// Two namespaces joined by a veth pair of `mtu` bytes: the transfer finds (nearly) the whole
/// MTU, the sender's own interface refusing every larger probe (EMSGSIZE).
fn direct(family: Family, mtu: u32) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut spaces = Namespaces::new(unique_prefix());
    let a = spaces.create("a").unwrap();
    let b = spaces.create("b").unwrap();
    link(family, &a, "qa", mtu, &b, "qb", mtu, 1);
    let to = family.address(1, 2);
    let tag = format!("direct-{mtu}-{}", family.flag());
    let got = transfer(&a, &b, &to, &tag, &[]);
    let path = (mtu as usize - family.headers()).min(8952) as u64;
    eprintln!(
        "veth MTU {mtu} {}: datagrams of {} bytes (path allows {path}), {:.0} Mbit/s, {:?}",
        family.flag(),
        got.datagram_size,
        got.goodput_bps / 1e6,
        got.elapsed
    );
    assert!(got.datagram_size <= path, "{} > {path}", got.datagram_size);
    // The search stops within 16 bytes of the largest size that passes; and never shrinks
    // below the 1200-byte start.
    assert!(
        got.datagram_size + 16 >= path || got.datagram_size == 1200 && path < 1216,
        "{} bytes found where {path} pass",
        got.datagram_size
    );
    assert!(got.elapsed < TRANSFER_LIMIT);
}

/// `a` — `r` — `b`: the ends' links have MTU 1500, the router's link towards `b` only 1280 (as
/// a tunnel would). With `black_hole`, the router sends no ICMP error at all (a policy rule
/// discards every ICMP message it originates), so only lost probes tell the sender.
fn through_router(family: Family, black_hole: bool) {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut spaces = Namespaces::new(unique_prefix());
    let a = spaces.create("a").unwrap();
    let r = spaces.create("r").unwrap();
    let b = spaces.create("b").unwrap();
    link(family, &a, "qa", 1500, &r, "qra", 1500, 1);
    link(family, &r, "qrb", 1280, &b, "qb", 1500, 2);
    let (via_a, via_b) = (family.address(1, 2), family.address(2, 1));
    let (net_a, net_b) = match family {
        Family::V4 => ("10.77.1.0/24", "10.77.2.0/24"),
        Family::V6 => ("fd77:0:0:1::/64", "fd77:0:0:2::/64"),
    };
    ip(&[
        "-n",
        &a,
        family.flag(),
        "route",
        "add",
        net_b,
        "via",
        &via_a,
    ])
    .unwrap();
    ip(&[
        "-n",
        &b,
        family.flag(),
        "route",
        "add",
        net_a,
        "via",
        &via_b,
    ])
    .unwrap();
    let forwarding = match family {
        Family::V4 => "net.ipv4.ip_forward=1",
        Family::V6 => "net.ipv6.conf.all.forwarding=1",
    };
    qstp_testbed::ns::sysctl(&r, &[forwarding.to_string()]).unwrap();
    if black_hole {
        // Every ICMP message the router originates (no other crosses it here) is discarded;
        // over IPv6 only those from its address on a's link, so that neighbour discovery works.
        let flag = family.flag();
        let source = family.address(1, 2);
        let mut args = vec!["-n", &r, flag, "rule", "add"];
        match family {
            Family::V4 => args.extend(["ipproto", "icmp"]),
            Family::V6 => args.extend(["from", &source, "ipproto", "ipv6-icmp"]),
        }
        args.extend(["lookup", "100"]);
        ip(&args).unwrap();
        ip(&[
            "-n",
            &r,
            flag,
            "route",
            "add",
            "blackhole",
            "default",
            "table",
            "100",
        ])
        .unwrap();
    }
    let before = too_big_received(&a, family);
    let to = family.address(2, 2);
    let tag = format!("router-{}-{black_hole}", family.flag());
    let got = transfer(&a, &b, &to, &tag, &[]);
    let too_big = too_big_received(&a, family) - before;
    let path = (1280 - family.headers()) as u64;
    eprintln!(
        "router to MTU 1280 {} (black hole: {black_hole}): datagrams of {} bytes (path allows {path}), {} ICMP too-big received, {} believed, {:.0} Mbit/s, {:?}",
        family.flag(),
        got.datagram_size,
        too_big,
        got.ptb_accepted,
        got.goodput_bps / 1e6,
        got.elapsed
    );
    assert!(
        (1200..=path).contains(&got.datagram_size),
        "{} bytes where {path} pass",
        got.datagram_size
    );
    if black_hole {
        assert_eq!(too_big, 0, "the black hole let ICMP through");
        assert_eq!(got.ptb_accepted, 0);
    } else {
        assert!(too_big > 0, "the router sent no Packet Too Big");
        // RFC 8899 §4.6: the router's messages quote the probes, so the sender believes them.
        assert!(got.ptb_accepted > 0, "no Packet Too Big was believed");
    }
}

#[test]
fn veth_mtu_1500_ipv4() {
    require_namespaces!();
    direct(Family::V4, 1500);
}

#[test]
fn veth_mtu_1500_ipv6() {
    require_namespaces!();
    direct(Family::V6, 1500);
}

#[test]
fn veth_mtu_1280_ipv4() {
    require_namespaces!();
    direct(Family::V4, 1280);
}

#[test]
fn veth_mtu_1280_ipv6() {
    require_namespaces!();
    direct(Family::V6, 1280);
}

#[test]
fn veth_mtu_9000_ipv4() {
    require_namespaces!();
    direct(Family::V4, 9000);
}

#[test]
fn veth_mtu_9000_ipv6() {
    require_namespaces!();
    direct(Family::V6, 9000);
}

#[test]
fn router_with_a_smaller_mtu_midpath_ipv4() {
    require_namespaces!();
    through_router(Family::V4, false);
}

#[test]
fn router_with_a_smaller_mtu_midpath_ipv6() {
    require_namespaces!();
    through_router(Family::V6, false);
}

#[test]
fn icmp_black_hole_midpath_ipv4() {
    require_namespaces!();
    through_router(Family::V4, true);
}

#[test]
fn icmp_black_hole_midpath_ipv6() {
    require_namespaces!();
    through_router(Family::V6, true);
}

#[test]
fn a_pinned_mtu_larger_than_the_interface_fails_with_the_reason() {
    require_namespaces!();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut spaces = Namespaces::new(unique_prefix());
    let a = spaces.create("a").unwrap();
    let b = spaces.create("b").unwrap();
    link(Family::V4, &a, "qa", 1500, &b, "qb", 1500, 1);
    let dir = scratch("real-paths-pinned");
    let source = dir.join("data.bin");
    std::fs::write(&source, pattern(1 << 20)).unwrap();
    let mut receiver = Command::new("ip")
        .args(["netns", "exec", &b, QSTP, "recv", "--once", "--quiet"])
        .args(["--listen", "10.77.1.2:4433", "--out"])
        .arg(format!("{}/", dir.join("out").display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let out = Command::new("ip")
        .args(["netns", "exec", &a, QSTP, "send"])
        .arg(&source)
        .args(["--to", "10.77.1.2", "--quiet", "--mtu", "1528"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        stderr.contains("EMSGSIZE") && stderr.contains("--mtu"),
        "{stderr}"
    );
    // Told at once, not after an idle timeout.
    assert!(started.elapsed() < Duration::from_secs(10));
    let _ = receiver.kill();
    let _ = receiver.wait();
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_receiver_is_reported_by_send_within_seconds() {
    require_namespaces!();
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let mut spaces = Namespaces::new(unique_prefix());
    let a = spaces.create("a").unwrap();
    let b = spaces.create("b").unwrap();
    link(Family::V4, &a, "qa", 1500, &b, "qb", 1500, 1);
    let dir = scratch("real-paths-killed");
    let source = dir.join("data.bin");
    std::fs::write(&source, pattern(50 << 20)).unwrap();
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut receiver = Command::new("ip")
        .args(["netns", "exec", &b, QSTP, "recv", "--once"])
        .args(["--listen", "10.77.1.2:4433", "--out"])
        .arg(format!("{}/", out.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(receiver.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("listening"), "recv said: {line}");
    // 50 MB at 20 Mbit/s: 20 s, so the receiver dies mid-transfer.
    let sender = Command::new("ip")
        .args(["netns", "exec", &a, QSTP, "send"])
        .arg(&source)
        .args([
            "--to",
            "10.77.1.2",
            "--quiet",
            "--max-rate",
            "20M",
            "--json",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    receiver.kill().unwrap();
    let killed = Instant::now();
    receiver.wait().unwrap();
    let mut sender = sender;
    let status = wait_bounded(&mut sender, Duration::from_secs(30));
    let noticed = killed.elapsed();
    let output = sender.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    eprintln!("killed receiver reported after {noticed:?}: {stderr}");
    assert!(!status.success());
    assert!(stderr.contains("stopped answering"), "{stderr}");
    assert!(
        noticed < Duration::from_secs(5),
        "reported after {noticed:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
