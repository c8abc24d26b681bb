//! TFRC, RFC 5348: the throughput equation, the sender's rate rules, and the receiver's loss history.

pub mod equation;
pub mod loss_history;
pub mod receiver;
pub mod sender;
