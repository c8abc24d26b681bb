//! ECN for TCP (RFC 3168 §6.1): the sender's data is ECT(0), the receiver echoes a CE mark as
//! ECE until it sees CWR, and the sender halves its window once per window of data as for a loss,
//! without resending anything, then says so with CWR.
//!
//! Both ends of a flow are configured alike ([`crate::TcpConfig::ecn`]), so the SYN / SYN-ACK
//! negotiation of RFC 3168 §6.1.1 is taken as done.

use super::Segment;

/// The ECN bits of a segment: its IP header's ECT and CE (RFC 3168 §5) and its TCP header's
/// ECE and CWR (RFC 3168 §6.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EcnFlags {
    /// Sent ECN-capable, ECT(0).
    pub ect: bool,
    /// Arrived marked Congestion Experienced (set by the network on the way).
    pub ce: bool,
    /// ECN-Echo: the receiver saw CE.
    pub ece: bool,
    /// Congestion Window Reduced: the sender reacted to ECE.
    pub cwr: bool,
}

/// The receiver's half: whether its ACKs carry ECE.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EcnReceiver {
    echo: bool,
}

impl EcnReceiver {
    /// A data segment arrived.
    pub(crate) fn on_data(&mut self, segment: &Segment) {
        // RFC 3168 §6.1.3: CWR ends the echo; a CE mark (on the same packet too) starts it.
        if segment.ecn.cwr {
            self.echo = false;
        }
        if segment.ecn.ce {
            self.echo = true;
        }
    }

    /// The flags of the next ACK (RFC 3168 §6.1.4: ACKs are not ECT).
    pub(crate) fn ack_flags(&self) -> EcnFlags {
        EcnFlags {
            ece: self.echo,
            ..EcnFlags::default()
        }
    }
}

/// The sender's half: ECT on new data, the reaction to ECE and the CWR that follows it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct EcnSender {
    enabled: bool,
    /// The next new data segment carries CWR.
    cwr_due: bool,
    /// snd_nxt at the last reduction: ECE on ACKs up to it belongs to the same window.
    recover: Option<u64>,
    reductions: u64,
}

impl EcnSender {
    /// ECN on or off.
    pub(crate) fn new(enabled: bool) -> Self {
        EcnSender {
            enabled,
            ..EcnSender::default()
        }
    }

    /// The flags of a data segment; `retransmission`: sent again.
    pub(crate) fn data_flags(&mut self, retransmission: bool) -> EcnFlags {
        if !self.enabled {
            return EcnFlags::default();
        }
        // RFC 3168 §6.1.5: retransmissions are not ECT.
        // RFC 3168 §6.1.2: CWR on the first new data segment after the reduction.
        let cwr = !retransmission && std::mem::take(&mut self.cwr_due);
        EcnFlags {
            ect: !retransmission,
            cwr,
            ..EcnFlags::default()
        }
    }

    /// An ACK arrived (after the sender processed it); whether it calls for a window reduction:
    /// ECE, outside a loss recovery (whose reduction already covers this window), and at most
    /// once per window of data (RFC 3168 §6.1.2).
    pub(crate) fn on_ack(&mut self, ack: &Segment, recovering: bool, snd_nxt: u64) -> bool {
        if !self.enabled || !ack.ecn.ece || recovering {
            return false;
        }
        // An ACK up to `recover` covers only data sent before the last reduction (the one that
        // acknowledges `recover` itself still carries the ECE that caused it).
        if self.recover.is_some_and(|r| ack.ack <= r) {
            return false;
        }
        self.recover = Some(snd_nxt);
        self.cwr_due = true;
        self.reductions += 1;
        true
    }

    /// A loss recovery began at `snd_nxt`: ECE within its window is covered by its reduction.
    pub(crate) fn on_loss_reduction(&mut self, snd_nxt: u64) {
        if self.enabled {
            self.recover = Some(snd_nxt);
            self.cwr_due = true;
        }
    }

    /// Window reductions made for ECE.
    pub(crate) fn reductions(&self) -> u64 {
        self.reductions
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(ack: u64, flags: EcnFlags) -> Segment {
        Segment {
            seq: 0,
            len: 0,
            ack,
            sack: crate::SackBlocks::new(),
            window: 0,
            retransmission: false,
            syn: false,
            ecn: flags,
        }
    }

    #[test]
    fn the_receiver_echoes_ce_until_it_sees_cwr() {
        let mut r = EcnReceiver::default();
        r.on_data(&seg(0, EcnFlags::default()));
        assert!(!r.ack_flags().ece);
        let ce = EcnFlags {
            ect: true,
            ce: true,
            ..EcnFlags::default()
        };
        r.on_data(&seg(0, ce));
        let plain = EcnFlags {
            ect: true,
            ..EcnFlags::default()
        };
        r.on_data(&seg(0, plain));
        assert!(r.ack_flags().ece, "still echoing");
        let cwr = EcnFlags { cwr: true, ..plain };
        r.on_data(&seg(0, cwr));
        assert!(!r.ack_flags().ece, "CWR ends the echo");
        assert!(!r.ack_flags().ect, "ACKs are not ECT");
    }

    #[test]
    fn the_sender_reacts_once_per_window_and_sends_cwr_on_new_data() {
        let mut s = EcnSender::new(true);
        let ece = EcnFlags {
            ece: true,
            ..EcnFlags::default()
        };
        assert!(s.data_flags(false).ect);
        assert!(!s.data_flags(true).ect, "retransmissions are not ECT");
        assert!(s.on_ack(&seg(1000, ece), false, 10_000));
        // More ECE within the same window: no second reduction.
        assert!(!s.on_ack(&seg(5000, ece), false, 12_000));
        // In loss recovery: none either.
        assert!(!s.on_ack(&seg(11_000, ece), true, 12_000));
        let first = s.data_flags(false);
        assert!(first.cwr && first.ect);
        assert!(!s.data_flags(false).cwr, "CWR once");
        // The ACK of all the data sent before the reduction still echoes it: no new one.
        assert!(!s.on_ack(&seg(10_000, ece), false, 20_000));
        // ECE on an ACK of data sent after it: the next window, a new reduction.
        assert!(s.on_ack(&seg(11_000, ece), false, 20_000));
        assert_eq!(s.reductions(), 2);
        let mut off = EcnSender::new(false);
        assert_eq!(off.data_flags(false), EcnFlags::default());
        assert!(!off.on_ack(&seg(1000, ece), false, 10_000));
    }
}
