//! ns-3 3.44's socket rules around the recovery and the control, for comparisons with ns-3
//! (`recovery = "prr-ns3"`, or a control's ns-3 variant that asks for them,
//! [`crate::CongestionControl::ns3_socket`]): what tcp-socket-base.cc and tcp-prr-recovery.cc do where
//! they depart from the RFCs the sender otherwise follows. Each rule is a method the sender asks
//! at the one place it applies, and cites the ns-3 line it reproduces.

use super::{Acked, TcpSender};
use crate::{Recovery, Segment};
use qstp_proto::Time;

impl TcpSender {
    /// Whether ns-3 3.44's socket rules apply around the control (see
    /// [`crate::CongestionControl::ns3_socket`]): they are tcp-socket-base.cc's, whatever the control,
    /// so they come with ns-3's recovery ([`Recovery::PrrNs3`]) as well as with a control's
    /// ns-3-compatible variant that asks for them.
    pub(super) fn ns3_socket_rules(&self) -> bool {
        self.config.recovery == Recovery::PrrNs3 || self.cc.ns3_socket()
    }

    /// Under ns-3's recovery with SACK, an ACK that SACKs new data is a duplicate "regardless of
    /// its status as a cumulative acknowledgment" (tcp-socket-base.cc:2003 `isDupack =
    /// scoreboardUpdated`, :2020 DupAck, which counts it outside recovery and the loss state,
    /// :1745-1758), and it does not reset the count (:2065-2068; the end of a recovery does,
    /// :2214). Counts it and returns true where that rule applies; false otherwise (the count
    /// then restarts, RFC 5681).
    pub(super) fn ns3_count_sacking_ack(&mut self, acked: &Acked) -> bool {
        if !(self.config.recovery == Recovery::PrrNs3 && self.peer_sacks && acked.newly_sacked > 0)
        {
            return false;
        }
        if !self.in_recovery && !self.in_loss {
            self.dupacks += 1;
        }
        true
    }

    /// Whether ns-3's recovery ignores a duplicate ACK: in a timeout's loss state `DupAck`
    /// returns at once (tcp-socket-base.cc:1745).
    pub(super) fn ns3_dupack_in_loss_state(&self) -> bool {
        self.config.recovery == Recovery::PrrNs3 && self.in_loss
    }

    /// A partial ACK under ns-3's recovery with SACK (tcp-socket-base.cc:2084-2102, ProcessAck in
    /// CA_RECOVERY): the head is not marked lost; unless it is a retransmission already
    /// (`IsRetransmittedDataAcked(ackNumber + segmentSize)`), `DoRetransmit` sends one segment
    /// whatever the window: `NextSeg` rule 1 (the first segment deemed lost and not yet resent),
    /// else rule 2, new data (tcp-socket-base.cc:4086-4116). Returns whether this rule applied
    /// (else RFC 6582's does).
    pub(super) fn ns3_partial_ack(&mut self) -> bool {
        if !(self.config.recovery == Recovery::PrrNs3 && self.peer_sacks) {
            return false;
        }
        if !self.board.first().is_some_and(|s| s.retransmitted) {
            self.send_now = true;
        }
        true
    }

    /// On the ACK that ends a timeout's loss state (recovery point `recover`), the bytes ns-3's
    /// socket rules hand the control: only the whole segments above the recovery point, usually
    /// none (tcp-socket-base.cc:2226, `segsAcked = (ackNumber - m_recover) / m_segmentSize`).
    /// `None`: not under those rules (the control gets what the ACK acknowledged).
    pub(super) fn ns3_acked_leaving_loss(&self, recover: u64) -> Option<u64> {
        self.ns3_socket_rules()
            .then(|| (self.snd_una - recover) / self.mss() * self.mss())
    }

    /// The bytes in flight a fast retransmit's reduction starts from: FlightSize (RFC 5681 §3.1
    /// eq. (4)), or under ns-3's socket rules the pipe once the first unacknowledged segment is
    /// deemed lost (tcp-socket-base.cc EnterRecovery: MarkHeadAsLost, then BytesInFlight() for
    /// GetSsThresh).
    pub(super) fn reduction_in_flight(&self) -> u64 {
        if self.ns3_socket_rules() {
            self.recovery_pipe
        } else {
            self.recovery_flight
        }
    }

    /// The bytes in flight a timeout's reduction starts from: FlightSize (RFC 5681 §3.1), or
    /// under ns-3's socket rules the pipe before the timeout (tcp-socket-base.cc:3916
    /// `inFlightBeforeRto = BytesInFlight()`).
    pub(super) fn timeout_in_flight(&self) -> u64 {
        if self.ns3_socket_rules() {
            self.pipe()
        } else {
            self.snd_nxt - self.snd_una
        }
    }

    /// On entering recovery, the head to resend under ns-3's recovery even if it was resent
    /// before: "(4.3) Retransmit the first data segment presumed dropped" is always the head
    /// (tcp-socket-base.cc:1729, EnterRecovery), even one sent above the last recovery point and
    /// resent in that recovery; RFC 6675's NextSeg would skip it for the next lost segment not
    /// yet resent.
    pub(super) fn ns3_head_to_resend(&self) -> Option<u64> {
        if self.config.recovery != Recovery::PrrNs3 {
            return None;
        }
        self.board.first().filter(|s| s.resent).map(|s| s.seq)
    }

    /// The head [`TcpSender::ns3_head_to_resend`] named, sent now: `SendDataPacket(
    /// m_highRxAckMark, ...)`. It was in the pipe already (ns-3's BytesInFlight counts a
    /// retransmission once), so it leaves the window ns-3's PRR set as it was and only counts in
    /// `prr_out`.
    pub(super) fn ns3_resend_head(&mut self, now: Time) -> Option<Segment> {
        let head = self.resend_head.take()?;
        let seg = self.board.first().filter(|s| s.seq == head)?;
        self.resend_now = false;
        self.prr_out += u64::from(seg.len);
        Some(self.retransmit(seg.seq, seg.len, now))
    }

    /// ns-3 3.44 tcp-prr-recovery.cc `DoRecovery` with its 32-bit arithmetic: the window it
    /// sets, `in_flight` (`tcb->m_bytesInFlight`) plus its send count, bytes.
    fn do_recovery_ns3(
        &mut self,
        delivered: u64,
        dupack: bool,
        in_flight: u64,
        safe_ack: bool,
    ) -> u64 {
        let mss = self.mss() as u32;
        let mut delivered = delivered as u32;
        // "if (isDupAck && m_prrDelivered < m_recoveryFlightSize) deliveredBytes += mss"
        // (counted on top of the SACKed bytes: ns-3 issue #1350).
        if dupack && (self.prr_delivered as u32) < self.prr_recover_fs {
            delivered = delivered.wrapping_add(mss);
        }
        if delivered == 0 {
            return self.prr_ns3_cwnd;
        }
        self.prr_delivered = u64::from((self.prr_delivered as u32).wrapping_add(delivered));
        let prr_delivered = self.prr_delivered as u32;
        let prr_out = self.prr_out as u32;
        let ssthresh = self.cc.ssthresh().min(u64::from(u32::MAX)) as u32;
        let in_flight = in_flight.min(u64::from(u32::MAX)) as u32;
        let send_count: i32 = if in_flight > ssthresh {
            // `std::ceil(m_prrDelivered * tcb->m_ssThresh * 1.0 / m_recoveryFlightSize) -
            // m_prrOut`: the product of two uint32_t wraps before the conversion to double
            // (ns-3 issue #1282).
            let product = f64::from(prr_delivered.wrapping_mul(ssthresh));
            let fs = f64::from(self.prr_recover_fs.max(1));
            ((product / fs).ceil() - f64::from(prr_out)) as i32
        } else {
            // PRR-CRB: `std::max(m_prrDelivered - m_prrOut, deliveredBytes)` of two uint32_t
            // (wraps when more was sent than delivered), stored in an int.
            let mut limit = prr_delivered.wrapping_sub(prr_out).max(delivered) as i32;
            if safe_ack {
                limit = limit.wrapping_add(mss as i32);
            }
            limit.min(ssthresh.wrapping_sub(in_flight) as i32)
        };
        // "Force a fast retransmit upon entering fast recovery".
        let send_count = send_count.max(if prr_out > 0 { 0 } else { mss as i32 });
        // `tcb->m_cWnd = tcb->m_bytesInFlight + sendCount` (uint32_t).
        self.prr_ns3_cwnd = u64::from(in_flight.wrapping_add(send_count as u32));
        self.prr_ns3_cwnd
    }

    /// The calls of ns-3 3.44's PRR on one ACK in recovery (tcp-socket-base.cc): on entering,
    /// `EnterRecovery` (RecoverFS = `m_bytesInFlight`, after the head is marked lost) then
    /// `DoRecovery` as for a duplicate ACK; in recovery, `DupAck` calls it as for a duplicate ACK
    /// when the ACK brought new SACK information, and `ProcessAck` again on a partial ACK of a
    /// segment or more. The bytes that may be sent: the window it set less the pipe now.
    pub(super) fn update_prr_ns3(
        &mut self,
        acked: &Acked,
        was_in_recovery: bool,
        advanced: bool,
        pipe_before: u64,
    ) {
        let (delivered, new_sack, safe_ack) = (
            acked.bytes,
            acked.newly_sacked > 0,
            acked.retransmission_acked,
        );
        let mut in_flight = pipe_before;
        if !was_in_recovery {
            in_flight = self.pipe();
            self.prr_recover_fs = in_flight.min(u64::from(u32::MAX)) as u32;
            self.prr_ns3_cwnd = 0;
            self.do_recovery_ns3(delivered, true, in_flight, safe_ack);
        } else if new_sack {
            self.do_recovery_ns3(delivered, true, in_flight, safe_ack);
        }
        if advanced && delivered >= self.mss() {
            self.do_recovery_ns3(delivered, false, in_flight, safe_ack);
        }
        self.prr_sndcnt = self.prr_ns3_cwnd.saturating_sub(self.pipe());
    }
}
