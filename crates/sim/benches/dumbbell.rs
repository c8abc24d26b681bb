//! Simulator speed: bottleneck packets simulated per wall-clock second.
//!
//! The reference scenario is the high-speed TCP paper's dumbbell: 8 TCP NewReno flows over a
//! 200 Mbit/s bottleneck with a 100-packet drop-tail queue, 98 ms base RTT, 60 s simulated.
//! Two more scenarios put 8 QSTP flows (the real protocol core) there instead, and 8
//! constant-bit-rate UDP flows (the network's own cost, without transport logic).
//!
//! Then the 24-flow point of the high-speed TCP paper's sweep (`scenarios/hstcp-qos.toml`): 1 Gbit/s,
//! 1 ms access links, a 200 Mbit/s, 98 ms bottleneck with 100 packets of drop-tail, once per
//! congestion control.
//!
//! Run with `cargo bench -p qstp-sim --bench dumbbell` (add `-- --seconds 10` for a shorter run,
//! `-- --only cubic` for the runs whose name holds `cubic`, `-- --repeat 5` for five runs of each
//! scenario instead of three: the fastest is reported).
//!
//! Wall-clock figures on a shared machine swing by a third between runs. For a steady figure,
//! count instructions instead: build with `cargo bench -p qstp-sim --bench dumbbell --no-run`, then
//! run the binary it names under `valgrind --tool=callgrind` with `--only NAME --seconds 20`.

// A benchmark measures wall-clock time: the determinism bans of clippy.toml do not apply.
#![allow(clippy::disallowed_types)]

use qstp_dataplane::queue::QueueSpec;
use qstp_proto::{Duration, Rate};
use qstp_sim::{run, GroupSpec, LinkSpec, Protocol, SimSpec, Topology};
use qstp_sim::{CbrSpec, QstpSpec, TcpSpec};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

/// The system allocator, counting allocations (to report allocations per bottleneck packet).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn spec(protocol: Protocol, seconds: u64) -> SimSpec {
    SimSpec {
        duration: Duration::from_secs(seconds),
        seed: 1,
        packet_size: 1500,
        topology: Topology::Dumbbell {
            bottleneck: LinkSpec {
                rate: Rate::from_mbps(200),
                delay: Duration::from_millis(45),
                queue: QueueSpec::drop_tail(100),
                loss: None,
                atm: None,
            },
        },
        groups: vec![GroupSpec::new(
            "flows",
            protocol,
            8,
            Duration::from_millis(98),
        )],
        bin: Duration::from_secs(1),
        warmup: Duration::ZERO,
        delegation: None,
    }
}

/// Run `spec` `repeat` times and print the fastest run's rates, with the slowest beside it: on a
/// shared machine the fastest run is the one least disturbed by others.
fn measure(name: &str, spec: &SimSpec, only: Option<&str>, repeat: u32) {
    if only.is_some_and(|only| !name.contains(only)) {
        return;
    }
    let mut walls = Vec::new();
    let mut last = None;
    for _ in 0..repeat.max(1) {
        let started = Instant::now();
        let allocations_before = ALLOCATIONS.load(Ordering::Relaxed);
        match run(spec) {
            Ok(out) => {
                walls.push(started.elapsed().as_secs_f64());
                last = Some((
                    out,
                    ALLOCATIONS.load(Ordering::Relaxed) - allocations_before,
                ));
            }
            Err(e) => {
                println!("{name}: cannot run: {e}");
                return;
            }
        }
    }
    let Some((out, allocations)) = last else {
        return;
    };
    let best = walls.iter().copied().fold(f64::INFINITY, f64::min);
    let worst = walls.iter().copied().fold(0.0, f64::max);
    let utilisation = out.bottleneck_packets as f64 * spec.packet_size as f64 * 8.0
        / (spec.bottleneck().unwrap().rate.bps() as f64 * spec.duration.as_secs_f64());
    println!(
        "{name}: {} bottleneck packets, {} events, best of {} runs {best:.2} s wall: {:.0} bottleneck packets/s ({:.0} in the slowest run), {:.0} events/s, utilisation {:.1}%, {:.3} allocations per bottleneck packet",
        out.bottleneck_packets,
        out.events,
        walls.len(),
        out.bottleneck_packets as f64 / best,
        out.bottleneck_packets as f64 / worst,
        out.events as f64 / best,
        utilisation * 100.0,
        allocations as f64 / out.bottleneck_packets.max(1) as f64
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // The value after `--name`, if given.
    let arg = |name: &str| {
        let at = args.iter().position(|a| a == name)?;
        args.get(at + 1).map(String::as_str)
    };
    let seconds = arg("--seconds").and_then(|s| s.parse().ok()).unwrap_or(60);
    let repeat = arg("--repeat").and_then(|s| s.parse().ok()).unwrap_or(3);
    let only = arg("--only");
    let tcp = Protocol::Tcp(TcpSpec {
        congestion: qstp_tcp::CcSpec::named("newreno"),
        options: qstp_tcp::TcpOptions {
            receive_window: 64 << 20,
            ..Default::default()
        },
    });
    measure("8 x TCP NewReno", &spec(tcp, seconds), only, repeat);
    let qstp = Protocol::Qstp(QstpSpec {
        name: "qstp".into(),
        config: qstp_proto::Config::qstp(Rate::from_mbps(10)),
        message_rate: None,
    });
    measure(
        "8 x QSTP (gTFRC, target 10 Mbit/s)",
        &spec(qstp, seconds),
        only,
        repeat,
    );
    let cbr = Protocol::Cbr(CbrSpec {
        schedule: vec![(Duration::ZERO, Rate::from_mbps(30))],
    });
    measure("8 x CBR 30 Mbit/s", &spec(cbr, seconds), only, repeat);
    for entry in qstp_tcp::REGISTRY {
        let mut spec = spec(
            Protocol::Tcp(TcpSpec {
                congestion: qstp_tcp::CcSpec::named(entry.name),
                options: qstp_tcp::TcpOptions::default(),
            }),
            seconds,
        );
        // High-speed TCP paper §III A: 2 x (1 + 98 + 1) ms of propagation.
        spec.bottleneck_mut().unwrap().delay = Duration::from_millis(98);
        spec.groups[0].flows = 24;
        spec.groups[0].rtt = Duration::from_millis(200);
        spec.groups[0].access = Some(qstp_sim::AccessSpec {
            rate: Rate::from_mbps(1000),
            delay: Duration::from_millis(1),
        });
        measure(
            &format!("24 x TCP {} (hstcp-qos)", entry.name),
            &spec,
            only,
            repeat,
        );
    }
}
