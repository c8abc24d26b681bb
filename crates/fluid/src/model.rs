//! The fluid model's parameters, read from a [`SimSpec`]: the bottleneck's capacity and RED curve,
//! and per TCP flow its delays, its role in a delegation group and when it starts. Everything the
//! model cannot represent is refused here, naming the key.

use super::FluidParams;
use qstp_dataplane::headers::tcp_payload;
use qstp_dataplane::queue::QueueSpec;
use qstp_sim::error::SimError;
use qstp_sim::spec::source::Protocol;
use qstp_sim::spec::source::TcpSpec;
use qstp_sim::spec::DelegationSpec;
use qstp_sim::spec::{SimSpec, Topology};

/// A flow's part in the Free & Stunts group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The Free connection.
    Free,
    /// One of its Stunts.
    Stunt,
    /// Cross traffic (or any flow when the run has no delegation).
    Cross,
}

/// One TCP flow of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Flow {
    /// Index of its group in the spec.
    pub group: usize,
    /// Index in its group.
    pub flow: u32,
    /// Its part in the delegation group.
    pub role: Role,
    /// D_i: the base round-trip time, seconds.
    pub d: f64,
    /// D_{s_i b} = alpha_i D_i (eq. 6): the propagation from the sender to the bottleneck queue,
    /// seconds.
    pub d_sb: f64,
    /// When it starts, seconds.
    pub start: f64,
    /// Its window when it starts, packets.
    pub w0: f64,
}

/// RED's curve in the model's units (eqs. 8-9).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Red {
    /// B_min, packets.
    pub b_min: f64,
    /// B_max, packets.
    pub b_max: f64,
    /// P_max.
    pub p_max: f64,
    /// beta, the averaging weight per packet arrival.
    pub beta: f64,
    /// The queue's capacity, packets: the backlog b(t) stays within [0, limit].
    pub limit: f64,
}

impl Red {
    /// p_c for an average queue `v`. Free & Stunts eq. (8), with sigma = P_max / (B_max - B_min)
    /// and varsigma = B_min; at and above B_max RED drops every packet (Floyd & Jacobson 1993),
    /// the case eq. (8) leaves out.
    pub fn p(&self, v: f64) -> f64 {
        if v <= self.b_min {
            0.0
        } else if v < self.b_max {
            (self.p_max / (self.b_max - self.b_min) * (v - self.b_min)).clamp(0.0, 1.0)
        } else {
            1.0
        }
    }
}

/// The Free & Stunts group in the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Delegation {
    /// The spec's delegation.
    pub spec: DelegationSpec,
    /// Index of the Free's flow in [`Model::flows`].
    pub free: usize,
    /// Indices of the Stunts' flows.
    pub stunts: Vec<usize>,
}

/// Everything the equations need.
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// C, packets per second.
    pub c: f64,
    /// Bytes of a packet on the wire.
    pub packet_bytes: f64,
    /// Bytes of a packet's TCP payload.
    pub payload_bytes: f64,
    /// The bottleneck's RED.
    pub red: Red,
    /// Every flow, groups in order, flows in order.
    pub flows: Vec<Flow>,
    /// The delegation group, if any.
    pub delegation: Option<Delegation>,
}

fn invalid(key: impl Into<String>, reason: impl Into<String>) -> SimError {
    SimError::Invalid {
        key: key.into(),
        reason: reason.into(),
    }
}

impl Model {
    /// The model of `spec`; refuses what it cannot represent and a step that is not below the
    /// smallest delay.
    pub fn new(spec: &SimSpec, params: &FluidParams) -> Result<Model, SimError> {
        qstp_sim::validate::validate(spec)?;
        let Topology::Dumbbell { bottleneck } = &spec.topology else {
            return Err(invalid(
                "link",
                "the fluid model solves the dumbbell only: give a [bottleneck], not [[link]] tables",
            ));
        };
        let QueueSpec::Red(red) = &bottleneck.queue else {
            return Err(invalid(
                "bottleneck.queue",
                format!(
                    "the fluid model needs a RED queue (Free & Stunts eqs. 8-9), not '{}'",
                    bottleneck.queue.kind()
                ),
            ));
        };
        if bottleneck.loss.is_some() {
            return Err(invalid(
                "bottleneck.loss",
                "the fluid model has no random loss: remove it for `qstp fluid`",
            ));
        }
        let packet_bytes = spec.packet_size as f64;
        let mut flows = Vec::new();
        for (index, group) in spec.groups.iter().enumerate() {
            let key = |field: &str| format!("groups[{}].{field}", group.name);
            let Protocol::Tcp(TcpSpec { options, .. }) = &group.protocol else {
                return Err(invalid(
                    key("protocol"),
                    "the fluid model has TCP flows only (eq. 14 is TCP's AIMD)",
                ));
            };
            if group.onoff.is_some() {
                return Err(invalid(
                    key("onoff"),
                    "the fluid model has no on/off switching yet: its flows send all along",
                ));
            }
            if spec.packet_size_of(group) != spec.packet_size {
                return Err(invalid(
                    key("packet_size"),
                    "the fluid model counts every flow in packets of the scenario's packet_size",
                ));
            }
            let d = group.rtt.as_secs_f64();
            if d <= 0.0 {
                return Err(invalid(
                    key("rtt"),
                    "the fluid model needs a positive round-trip time (eq. 14 divides by it)",
                ));
            }
            let sink = group.access.map_or(0.0, |a| a.delay.as_secs_f64());
            // The dumbbell's senders' access links carry what the bottleneck and the receivers'
            // links leave of the one-way delay (topology::dumbbell_graph); the queue sits at the
            // bottleneck's input, so alpha_i D_i is that access delay.
            let d_sb = (d / 2.0 - bottleneck.delay.as_secs_f64() - sink).max(0.0);
            for flow in 0..group.flows {
                flows.push(Flow {
                    group: index,
                    flow,
                    role: Role::Cross,
                    d,
                    d_sb,
                    start: group.start.as_secs_f64(),
                    w0: f64::from(options.initial_window.max(1)),
                });
            }
        }
        let delegation = match &spec.delegation {
            None => None,
            Some(d) => {
                let (free_group, stunt_group) = d.validate(&spec.groups)?;
                if d.by != qstp_sim::spec::SignalPath::Host {
                    return Err(invalid(
                        "delegation.by",
                        "the fluid model delegates at the host only: its flows see a loss rate, \
                         not marks on packets (run by = \"network\" with qstp run)",
                    ));
                }
                for f in &mut flows {
                    if f.group == free_group {
                        f.role = Role::Free;
                    } else if f.group == stunt_group {
                        f.role = Role::Stunt;
                    }
                }
                let of = |role| -> Vec<usize> {
                    (0..flows.len())
                        .filter(|&i| flows[i].role == role)
                        .collect()
                };
                let free = of(Role::Free).first().copied();
                let stunts = of(Role::Stunt);
                free.map(|free| Delegation {
                    spec: d.clone(),
                    free,
                    stunts,
                })
            }
        };
        let model = Model {
            c: bottleneck.rate.bps() as f64 / (packet_bytes * 8.0),
            packet_bytes,
            payload_bytes: tcp_payload(spec.packet_size as u64) as f64,
            red: Red {
                b_min: red.params.min_th,
                b_max: red.params.max_th,
                p_max: red.params.max_p,
                beta: red.weight,
                limit: red.limit as f64,
            },
            flows,
            delegation,
        };
        let step = params.step.as_secs_f64();
        match model.smallest_delay() {
            _ if step <= 0.0 => Err(invalid("fluid.step", "must be positive")),
            Some(smallest) if step > smallest => Err(invalid(
                "fluid.step",
                format!(
                    "{} is larger than the smallest delay of the model, {:.3} ms (a flow's \
                     propagation to or from the bottleneck): the delayed terms would reach past \
                     the last computed step",
                    params.step,
                    smallest * 1e3
                ),
            )),
            _ => Ok(model),
        }
    }

    /// The smallest positive delay the equations read history across: per flow D_{s_i b} (eq. 7)
    /// and D_i - D_{s_i b}, the least D_{b s_i}(t) (eq. 15). A zero delay reads the current
    /// state and bounds nothing. `None` without flows.
    pub fn smallest_delay(&self) -> Option<f64> {
        self.flows
            .iter()
            .flat_map(|f| [f.d_sb, f.d - f.d_sb])
            .filter(|&d| d > 0.0)
            .reduce(f64::min)
    }
}
