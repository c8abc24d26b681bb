//! Typed indices into the simulator's arenas.

/// A packet slot in the packet store (the data plane's id: its ports hold packets by it).
pub use qstp_dataplane::link::PacketId;

/// Most flows a run holds: the qstp agents give each flow two addresses of a synthetic range of
/// 2^17.
pub const MAX_FLOWS: u64 = 1 << 16;

macro_rules! typed_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);

        impl $name {
            /// The arena index.
            #[inline]
            pub fn index(self) -> usize {
                self.0 as usize
            }
        }
    };
}

typed_id!(
    /// A node (host or router) in the network arena.
    NodeId
);
typed_id!(
    /// A unidirectional link in the network arena.
    LinkId
);
typed_id!(
    /// An agent (traffic source or sink) in the agent arena.
    AgentId
);
typed_id!(
    /// A flow (one source agent and its sink) in the recorder.
    FlowId
);
