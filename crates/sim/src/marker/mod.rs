//! Edge markers: two-colour token bucket, srTCM (RFC 2697), trTCM (RFC 2698), TSW two- and
//! three-colour (RFC 2859). Each colours the packets of one group's aggregate; a marker that draws
//! random numbers is given its own random stream.

use crate::spec::Color;
use qstp_proto::Time;
use rand::RngCore;

/// An edge marker.
pub trait Marker {
    /// Colour a packet of `size` bytes arriving at `now`.
    fn mark(&mut self, now: Time, size: usize, rng: &mut dyn RngCore) -> Color;
}
