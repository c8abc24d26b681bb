//! A TCP sender as a member of a Free & Stunts delegation group (`qstp_proto::delegation`): its
//! share is its congestion window, a delegated signal is a reduction on request, and its own
//! reaction is the one [`crate::LossPolicy::Defer`] held back.

use crate::TcpSender;
use qstp_proto::delegation::Steerable;
use qstp_proto::Time;

impl Steerable for TcpSender {
    fn share(&self) -> u64 {
        TcpSender::cwnd(self)
    }
    fn reduce(&mut self, now: Time) {
        TcpSender::reduce(self, now);
    }
    fn react(&mut self, now: Time) {
        self.apply_deferred_reduction(now);
    }
}
