//! Why delivery refused data.

/// Why a send buffer or reassembler refused data.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeliveryError {
    /// Data lies beyond the advertised receive window.
    #[error("data beyond the advertised window")]
    BeyondWindow,
    /// The buffer has no room for it.
    #[error("buffer full")]
    Full,
    /// The data contradicts what was received before (length, fin, message size).
    #[error("inconsistent data: {0}")]
    Inconsistent(&'static str),
}
