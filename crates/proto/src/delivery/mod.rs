//! Delivery: bounded send buffers and receive reassembly for the ordered byte stream and for messages.
