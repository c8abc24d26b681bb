//! The receiver's loss history: loss detection, loss events and loss intervals (RFC 5348 §5).
