//! Two endpoints joined directly: every datagram reaches the other side at once, none is lost.

use qstp_proto::{Endpoint, Time};
use std::net::SocketAddr;

/// Hand every datagram each endpoint lets out at `now` to the other; returns whether any moved.
pub fn hand_over(
    client: &mut Endpoint,
    server: &mut Endpoint,
    now: Time,
    client_addr: SocketAddr,
    server_addr: SocketAddr,
    buf: &mut Vec<u8>,
) -> bool {
    let mut moved = false;
    while let Some(t) = client.poll_transmit(now, buf) {
        server.handle_datagram(now, client_addr, &buf[..t.size]);
        moved = true;
    }
    while let Some(t) = server.poll_transmit(now, buf) {
        client.handle_datagram(now, server_addr, &buf[..t.size]);
        moved = true;
    }
    moved
}
