//! Why a run could not be set up.
//!
//! A foundation of the crate: the spec's checks and every builder return these errors, so this
//! file names no other module of the crate.

use qstp_proto::{ConfigError, Duration};

/// What the check of one component spec refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ComponentError {
    /// A queue discipline ([`qstp_dataplane::queue::QueueSpec::validate`]).
    #[error(transparent)]
    Queue(#[from] qstp_dataplane::queue::QueueSpecError),
    /// An edge marker ([`qstp_dataplane::marker::MarkerSpec::validate`]).
    #[error(transparent)]
    Marker(#[from] qstp_dataplane::marker::MarkerSpecError),
    /// A loss model ([`qstp_dataplane::loss::LossSpec::validate`]).
    #[error(transparent)]
    Loss(#[from] qstp_dataplane::loss::LossSpecError),
    /// A TCP group's options ([`qstp_tcp::TcpOptions::validate`]).
    #[error(transparent)]
    Tcp(#[from] qstp_tcp::TcpConfigError),
}

impl ComponentError {
    /// The key inside the component's table the error is about (`in`, `cir`,
    /// `classes.<name>.rate`, ...), empty when it is about the table as a whole.
    pub fn field(&self) -> String {
        match self {
            ComponentError::Queue(e) => e.field(),
            ComponentError::Marker(e) => e.field().to_string(),
            ComponentError::Loss(e) => e.field().to_string(),
            ComponentError::Tcp(e) => e.field().to_string(),
        }
    }
}

/// A run's spec (`SimSpec`) the simulator cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The caller's progress callback stopped the run (an interrupted sweep).
    #[error("the run was stopped before its end")]
    Stopped,
    /// A field has a value that cannot work.
    #[error("invalid {key}: {reason}")]
    Invalid {
        /// The field, as `groups[<name>].rtt` or `bottleneck.rate`.
        key: String,
        /// Why.
        reason: String,
    },
    /// A group's base RTT cannot hold the bottleneck's propagation delay both ways.
    #[error(
        "group '{group}': rtt {rtt} is shorter than the path's propagation both ways (bottleneck delay {bottleneck_delay}, access delay {access_delay} on each side)"
    )]
    RttShorterThanPath {
        /// The group.
        group: String,
        /// Its base RTT.
        rtt: Duration,
        /// The bottleneck's one-way delay.
        bottleneck_delay: Duration,
        /// The group's access delay, each side.
        access_delay: Duration,
    },
    /// A TCP group's congestion control is unknown or has a bad parameter.
    #[error("group '{group}': {error}")]
    CongestionControl {
        /// The group.
        group: String,
        /// What the registry refused.
        error: qstp_tcp::CcError,
    },
    /// A qstp group's connection configuration is invalid.
    #[error("group '{group}': {source}")]
    QstpConfig {
        /// The group.
        group: String,
        /// What the protocol core refused.
        source: ConfigError,
    },
    /// A queue, marker, loss model or TCP configuration was refused by its own check.
    #[error("{component}: {error}")]
    Component {
        /// Which one (`bottleneck.queue`, `groups[<name>].marker`, `groups[<name>].tcp`, ...).
        component: String,
        /// What its check refused, typed, so that callers can match on it.
        #[source]
        error: ComponentError,
    },
    /// Packets met a node with no route to their destination (a topology defect).
    #[error("{packets} packet(s) found no route to their destination: the topology is incomplete")]
    Unroutable {
        /// Packets discarded.
        packets: u64,
    },
    /// More flows than the simulator can address.
    #[error("{flows} flows in total; at most {limit} are supported")]
    TooManyFlows {
        /// Flows asked for.
        flows: u64,
        /// The limit.
        limit: u64,
    },
    /// The recorded series would not fit the memory bound.
    #[error("{bins} bins of series per flow times {flows} flows exceeds {limit}; use a wider bin")]
    TooManyBins {
        /// Bins per flow.
        bins: u64,
        /// Flows.
        flows: u64,
        /// Most bins in total.
        limit: u64,
    },
}
