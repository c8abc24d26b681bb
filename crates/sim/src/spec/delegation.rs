//! A Free & Stunts delegation group of a run: which groups are the Free and its Stunts, the
//! controller, the control period and the trace (the parts themselves are the `delegation`
//! module's).

use super::source::Protocol;
use super::GroupSpec;
use crate::delegation::{ControllerSpec, Trace};
use crate::error::SimError;
use qstp_proto::Duration;

/// A delegation group of a run: one Free connection, its Stunts, the controller and the trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DelegationSpec {
    /// The group whose single flow (TCP, or a qstp byte stream) is the Free connection.
    pub free: String,
    /// The group whose flows (of the Free's protocol) are its Stunts.
    pub stunts: String,
    /// The controller.
    pub controller: ControllerSpec,
    /// Time between control instants (throughput samples and controller updates).
    pub period: Duration,
    /// The throughput the Free's application asks for (already preprocessed, if wanted).
    pub trace: Trace,
    /// Reverse delegation: a Stunt's loss is taken by a larger Free above its target.
    pub reverse: bool,
    /// Who moves the congestion signals: the Free's host (its senders hold their reactions), or
    /// the network (the bottleneck moves ECN marks, the paper's footnote 2).
    #[serde(default, skip_serializing_if = "SignalPath::is_host")]
    pub by: SignalPath,
}

/// Who delegates a Free's congestion signals to its Stunts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SignalPath {
    /// The host: the group's senders defer their reactions to losses and the host settles each
    /// one (Free & Stunts paper §II).
    #[default]
    Host,
    /// The network: the bottleneck's AQM marks ECN (RFC 3168) and moves a fraction g of the
    /// Free's marks onto the Stunts' packets; the senders react to every mark they see (Free &
    /// Stunts paper, footnote 2). TCP groups with `ecn = true` only.
    Network,
}

impl SignalPath {
    /// Whether it is the host (the default, left out of serialised specs).
    pub fn is_host(&self) -> bool {
        *self == SignalPath::Host
    }
}

impl DelegationSpec {
    /// Check it against the run's groups; returns the indices of the Free's and the Stunts'
    /// groups.
    pub fn validate(&self, groups: &[GroupSpec]) -> Result<(usize, usize), SimError> {
        let invalid = |key: &str, reason: String| SimError::Invalid {
            key: format!("delegation.{key}"),
            reason,
        };
        let find = |key: &str, name: &str| -> Result<usize, SimError> {
            let i = groups
                .iter()
                .position(|g| g.name == name)
                .ok_or_else(|| invalid(key, format!("no group is named '{name}'")))?;
            match &groups[i].protocol {
                Protocol::Tcp(_) => {}
                // connection module `delegation` of qstp-proto: the sender's own loss history
                // holds, gives and takes loss events, which needs a byte stream.
                Protocol::Qstp(q) if q.config.supports_stream() => {}
                Protocol::Qstp(q) => {
                    return Err(invalid(
                        key,
                        format!(
                            "group '{name}' ({}) carries no byte stream: a delegation group of \
                             qstp connections needs one (qstp, tfrc-sack)",
                            q.name
                        ),
                    ))
                }
                _ => {
                    return Err(invalid(
                        key,
                        format!("group '{name}' is neither tcp nor a qstp byte stream"),
                    ))
                }
            }
            Ok(i)
        };
        let free = find("free", &self.free)?;
        let stunts = find("stunts", &self.stunts)?;
        if std::mem::discriminant(&groups[free].protocol)
            != std::mem::discriminant(&groups[stunts].protocol)
        {
            return Err(invalid(
                "stunts",
                format!(
                    "the Free ('{}') and its Stunts ('{}') must be of one protocol, tcp or qstp, \
                     so that their shares (windows or rates) compare",
                    self.free, self.stunts
                ),
            ));
        }
        if self.by == SignalPath::Network {
            for (key, i) in [("free", free), ("stunts", stunts)] {
                match &groups[i].protocol {
                    Protocol::Tcp(t) if t.options.ecn => {}
                    _ => {
                        return Err(invalid(
                            key,
                            format!(
                                "by = \"network\" moves ECN marks (footnote 2 of the Free & \
                                 Stunts paper): group '{}' must be tcp with ecn = true",
                                groups[i].name
                            ),
                        ))
                    }
                }
            }
        }
        if free == stunts {
            return Err(invalid(
                "stunts",
                "the Stunts must be a group of their own".into(),
            ));
        }
        if groups[free].flows != 1 {
            return Err(invalid(
                "free",
                format!(
                    "the Free is one connection; group '{}' has {} flows",
                    self.free, groups[free].flows
                ),
            ));
        }
        if self.period.is_zero() {
            return Err(invalid("period", "must be positive".into()));
        }
        if let ControllerSpec::Pi { gain } = self.controller {
            if !(gain.is_finite() && gain >= 0.0) {
                return Err(invalid(
                    "controller.gain",
                    format!("{gain} is not a non-negative number"),
                ));
            }
        }
        Ok((free, stunts))
    }
}
