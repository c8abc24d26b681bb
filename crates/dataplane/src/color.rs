//! A packet's drop precedence: the colour edge markers set and queues drop by.

/// Drop precedence of a packet, set by an edge marker.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum Color {
    /// In-profile (AFx1).
    Green,
    /// Between the committed and the peak profile (AFx2), three-colour markers only.
    Yellow,
    /// Out-of-profile (AFx3, or best effort when unmarked).
    Red,
}
