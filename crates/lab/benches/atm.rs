//! ATM cell simulation speed: cells per wall-clock second on `scenarios/atm-fig2.toml`.
//!
//! Each point of the scenario (RTT 20, 80 and 160 ms) runs once with its full 180 s unless
//! `--seconds N` shortens it. Reported per point: cells that reached the WAN switch (every cell
//! the hosts sent, lost ones included), cells the trunk carried, wall time, and cells per
//! wall-second of each kind.
//!
//! Run with `cargo bench -p qstp-lab --bench atm` (add `-- --seconds 30` for a shorter run).

// A benchmark measures wall-clock time: the determinism bans of clippy.toml do not apply.
#![allow(clippy::disallowed_types)]

use qstp_lab::scenario::{parse, Overrides};
use std::path::Path;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seconds: Option<u64> = args
        .iter()
        .position(|a| a == "--seconds")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/atm-fig2.toml");
    let text = std::fs::read_to_string(&path).expect("scenarios/atm-fig2.toml");
    let overrides = Overrides {
        duration: seconds.map(qstp_proto::Duration::from_secs),
        ..Default::default()
    };
    let plan = parse(&text, &path.display().to_string(), &overrides).expect("a valid scenario");
    for point in &plan.points {
        let spec = point.scenario.spec(0);
        let rtt = spec.groups[0].rtt;
        let started = Instant::now();
        let out = match qstp_sim::run(&spec) {
            Ok(out) => out,
            Err(e) => {
                println!("atm-fig2 rtt {rtt}: cannot run: {e}");
                continue;
            }
        };
        let wall = started.elapsed().as_secs_f64();
        let atm = out.atm.expect("an ATM trunk");
        let arrived: u64 = atm.vps.iter().map(|v| v.cells).sum();
        println!(
            "atm-fig2 rtt {rtt}: {} s simulated, {arrived} cells at the switch, {} on the trunk, {wall:.2} s wall: {:.2} M cells/s at the switch, {:.2} M trunk cells/s, {:.0}x real time",
            spec.duration.as_secs_f64(),
            atm.cells_sent,
            arrived as f64 / wall / 1e6,
            atm.cells_sent as f64 / wall / 1e6,
            spec.duration.as_secs_f64() / wall,
        );
    }
}
