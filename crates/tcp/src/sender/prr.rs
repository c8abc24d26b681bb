//! RFC 6937 Proportional Rate Reduction: in fast recovery, the sender sends in proportion to the
//! data delivered, so the window reaches ssthresh smoothly ([`Recovery::Prr`]).

use super::TcpSender;
use crate::Recovery;

impl TcpSender {
    /// Count a segment sent in recovery against PRR's allowance (RFC 6937 §3 prr_out).
    pub(super) fn count_prr_out(&mut self, len: u64) {
        if self.in_recovery {
            self.prr_out += len;
            self.prr_sndcnt = self.prr_sndcnt.saturating_sub(len);
        }
    }

    /// RFC 6937 §3: on an ACK during recovery, the bytes that may be sent now.
    pub(super) fn update_prr(&mut self, delivered: u64) {
        if !self.in_recovery || self.config.recovery != Recovery::Prr {
            return;
        }
        self.prr_delivered += delivered;
        let pipe = u128::from(self.pipe());
        let ssthresh = u128::from(self.cc.ssthresh());
        let sndcnt: u128 = if pipe > ssthresh {
            // Proportional part: CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out.
            let fs = u128::from(self.recovery_flight.max(1));
            (u128::from(self.prr_delivered) * ssthresh)
                .div_ceil(fs)
                .saturating_sub(u128::from(self.prr_out))
        } else {
            // PRR-SSRB: MIN(ssthresh - pipe, MAX(prr_delivered - prr_out, DeliveredData) + MSS).
            let limit = u128::from(self.prr_delivered.saturating_sub(self.prr_out))
                .max(u128::from(delivered))
                + u128::from(self.mss());
            (ssthresh - pipe).min(limit)
        };
        self.prr_sndcnt = u64::try_from(sndcnt).unwrap_or(u64::MAX);
    }
}
