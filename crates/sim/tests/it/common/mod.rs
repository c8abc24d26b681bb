//! Spec builders shared by the integration tests (a dumbbell and a group are `SimSpec::dumbbell`
//! and `GroupSpec::new`).
#![allow(dead_code)]

use qstp_dataplane::queue::{QueueSpec, RedParams, RioMode, RioSpec};
use qstp_proto::{Duration, Rate};
use qstp_sim::spec::source::{CbrSpec, Protocol, TcpSpec};

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
        ecn: false,
    })
}
