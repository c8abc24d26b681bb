//! `protocol = "onoff"`: UDP that sends at its scheduled rate during exponential on periods and
//! is silent during exponential off periods.

use super::{
    check_schedule, read_schedule, CheckContext, FlowAgents, ReadContext, Source, SourceKind, Wire,
};
use crate::error::SimError;
use qstp_dataplane::params::{ParamResult, ParamTable};
use qstp_proto::{Duration, Rate};

/// Mean on and off periods when the file gives none.
const DEFAULT_ON_OFF: Duration = Duration::from_secs(1);

/// On/off UDP: exponential on and off periods, sending at the scheduled rate while on.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct OnOffSpec {
    /// `(from, rate)` steps as for [`super::CbrSpec`].
    pub schedule: Vec<(Duration, Rate)>,
    /// Mean on period.
    pub mean_on: Duration,
    /// Mean off period.
    pub mean_off: Duration,
}

impl SourceKind for OnOffSpec {
    const NAMES: &'static [&'static str] = &["onoff"];
    const DOC: &'static str = "on/off UDP with exponential periods (rate or schedule as cbr; mean_on, mean_off, 1s each by default)";

    fn read(t: &mut dyn ParamTable, _: &ReadContext) -> ParamResult<Self> {
        let schedule = read_schedule(t)?;
        Ok(OnOffSpec {
            schedule,
            mean_on: t.opt_duration("mean_on")?.unwrap_or(DEFAULT_ON_OFF),
            mean_off: t.opt_duration("mean_off")?.unwrap_or(DEFAULT_ON_OFF),
        })
    }
}

impl Source for OnOffSpec {
    fn label(&self) -> String {
        "onoff".into()
    }

    fn validate(&self, cx: &CheckContext) -> Result<(), SimError> {
        check_schedule(&self.schedule, cx)?;
        if self.mean_on.is_zero() {
            return Err(cx.invalid(&cx.key("mean_on"), "the mean on period must be positive"));
        }
        if self.mean_off.is_zero() {
            return Err(cx.invalid(&cx.key("mean_off"), "the mean off period must be positive"));
        }
        cx.check_udp_size()
    }

    fn wire(&self) -> Wire {
        // The discard service (RFC 863).
        Wire::udp(9)
    }

    fn agents(&self) -> FlowAgents<'_> {
        FlowAgents::Udp {
            schedule: &self.schedule,
            on_off: Some((self.mean_on, self.mean_off)),
        }
    }
}
