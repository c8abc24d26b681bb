//! The TFRC throughput equation (RFC 5348 §3.1).

/// RFC 5348 §3.1 throughput equation, bytes/s, with t_RTO = 4R.
pub fn throughput(segment_size: f64, rtt_secs: f64, p: f64) -> f64 {
    let _ = (segment_size, rtt_secs, p);
    todo!()
}
