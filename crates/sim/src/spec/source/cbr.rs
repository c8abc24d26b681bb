//! `protocol = "cbr"`: constant-bit-rate UDP following a rate schedule.

use super::{
    check_schedule, read_schedule, CheckContext, FlowAgents, ReadContext, Source, SourceKind, Wire,
};
use crate::error::SimError;
use qstp_dataplane::params::{ParamResult, ParamTable};
use qstp_proto::{Duration, Rate};

/// Constant-bit-rate UDP following a rate schedule.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CbrSpec {
    /// `(from, rate)` steps, sorted by `from`; the first starts at zero.
    pub schedule: Vec<(Duration, Rate)>,
}

impl SourceKind for CbrSpec {
    const NAMES: &'static [&'static str] = &["cbr"];
    const DOC: &'static str =
        "constant-bit-rate UDP (rate = \"300k\", or schedule = [[\"0s\", \"300k\"], ..])";

    fn read(t: &mut dyn ParamTable, _: &ReadContext) -> ParamResult<Self> {
        Ok(CbrSpec {
            schedule: read_schedule(t)?,
        })
    }
}

impl Source for CbrSpec {
    fn label(&self) -> String {
        "cbr".into()
    }

    fn validate(&self, cx: &CheckContext) -> Result<(), SimError> {
        check_schedule(&self.schedule, cx)?;
        cx.check_udp_size()
    }

    fn wire(&self) -> Wire {
        // The discard service (RFC 863).
        Wire::udp(9)
    }

    fn agents(&self) -> FlowAgents<'_> {
        FlowAgents::Udp {
            schedule: &self.schedule,
            on_off: None,
        }
    }
}
