//! Spec builders shared by the integration tests.
#![allow(dead_code)]

use qstp_proto::{Duration, Rate};
use qstp_sim::spec::*;

/// A dumbbell with no groups yet.
pub fn dumbbell(rate: Rate, delay: Duration, limit: usize, seconds: u64) -> SimSpec {
    SimSpec {
        duration: Duration::from_secs(seconds),
        seed: 1,
        packet_size: 1000,
        topology: Topology::Dumbbell {
            bottleneck: LinkSpec {
                rate,
                delay,
                queue: QueueSpec::drop_tail(limit),
                loss: None,
                atm: None,
            },
        },
        groups: Vec::new(),
        bin: Duration::from_secs(1),
        warmup: Duration::ZERO,
        delegation: None,
    }
}

/// A group of `flows` flows running `protocol` over base RTT `rtt`, unmarked, starting at 0.
pub fn group(name: &str, protocol: Protocol, flows: u32, rtt: Duration) -> GroupSpec {
    GroupSpec {
        name: name.into(),
        protocol,
        flows,
        rtt,
        target: None,
        marker: None,
        start: Duration::ZERO,
        access: None,
        start_spread: None,
        packet_size: None,
        onoff: None,
    }
}

/// A constant-bit-rate protocol at `rate`.
pub fn cbr(rate: Rate) -> Protocol {
    Protocol::Cbr(CbrSpec {
        schedule: vec![(Duration::ZERO, rate)],
    })
}

/// TCP NewReno without delayed ACKs and a large window.
pub fn newreno() -> Protocol {
    Protocol::Tcp(TcpSpec {
        congestion: qstp_tcp::CcSpec::named("newreno"),
        options: qstp_tcp::TcpOptions {
            receive_window: 64 << 20,
            ..Default::default()
        },
    })
}

/// QSTP paper §5.1: RIO (min_out, max_out, p_out, min_in, max_in, p_in) = (10, 20, 0.1, 20, 40, 0.02).
pub fn paper_rio() -> QueueSpec {
    QueueSpec::Rio(RioSpec {
        limit: 50,
        in_profile: RedParams {
            min_th: 20.0,
            max_th: 40.0,
            max_p: 0.02,
        },
        out_profile: RedParams {
            min_th: 10.0,
            max_th: 20.0,
            max_p: 0.1,
        },
        middle: None,
        weight: 0.002,
        mode: RioMode::Coupled,
    })
}
