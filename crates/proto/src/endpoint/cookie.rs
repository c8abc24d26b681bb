//! The stateless handshake cookie: the time it was issued and a keyed BLAKE3 MAC over the client's
//! address, its connection id and that time, so the server keeps no state for unproven clients.

use crate::time::{Duration, Time};
use crate::wire::{ConnectionId, Cookie, COOKIE_LEN};
use std::net::SocketAddr;

/// Bytes of the cookie holding the issue time.
const TIME_LEN: usize = 8;

/// Mints and checks cookies with one secret key.
#[derive(Clone)]
pub(crate) struct CookieJar {
    key: [u8; 32],
    lifetime: Duration,
}

impl core::fmt::Debug for CookieJar {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("CookieJar")
            .field("lifetime", &self.lifetime)
            .finish_non_exhaustive()
    }
}

impl CookieJar {
    /// A jar signing with `key`; cookies are good for `lifetime`.
    pub(crate) fn new(key: [u8; 32], lifetime: Duration) -> Self {
        CookieJar { key, lifetime }
    }

    /// A cookie for the client at `remote` with connection id `client`, issued `now`.
    pub(crate) fn mint(&self, now: Time, remote: SocketAddr, client: ConnectionId) -> Cookie {
        let issued = now.as_nanos().to_be_bytes();
        let mac = self.mac(&issued, remote, client);
        let mut bytes = [0u8; COOKIE_LEN];
        bytes[..TIME_LEN].copy_from_slice(&issued);
        bytes[TIME_LEN..].copy_from_slice(&mac[..COOKIE_LEN - TIME_LEN]);
        Cookie(bytes)
    }

    /// Whether `cookie` was minted by this jar for this client and is still fresh at `now`.
    pub(crate) fn verify(
        &self,
        now: Time,
        remote: SocketAddr,
        client: ConnectionId,
        cookie: &Cookie,
    ) -> bool {
        let mut issued = [0u8; TIME_LEN];
        issued.copy_from_slice(&cookie.0[..TIME_LEN]);
        let issued_at = Time::from_nanos(u64::from_be_bytes(issued));
        if issued_at > now || now - issued_at > self.lifetime {
            return false;
        }
        let mac = self.mac(&issued, remote, client);
        // Compare without an early exit, so timing does not reveal how much of a forgery matched.
        let difference = mac[..COOKIE_LEN - TIME_LEN]
            .iter()
            .zip(&cookie.0[TIME_LEN..])
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        difference == 0
    }

    fn mac(&self, issued: &[u8; TIME_LEN], remote: SocketAddr, client: ConnectionId) -> [u8; 32] {
        let mut hasher = blake3::Hasher::new_keyed(&self.key);
        match remote {
            SocketAddr::V4(v4) => {
                hasher.update(&[4]);
                hasher.update(&v4.ip().octets());
            }
            SocketAddr::V6(v6) => {
                hasher.update(&[6]);
                hasher.update(&v6.ip().octets());
            }
        }
        hasher.update(&remote.port().to_be_bytes());
        hasher.update(&client.0.to_be_bytes());
        hasher.update(issued);
        *hasher.finalize().as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_cookie_proves_address_id_and_freshness() {
        let jar = CookieJar::new([7; 32], Duration::from_secs(10));
        let now = Time::from_nanos(5_000_000_000);
        let client = addr("192.0.2.1:4000");
        let cookie = jar.mint(now, client, ConnectionId(42));
        assert!(jar.verify(
            now + Duration::from_secs(9),
            client,
            ConnectionId(42),
            &cookie
        ));
        // Stale, from another address or port, for another id, or minted with another key.
        assert!(!jar.verify(
            now + Duration::from_secs(11),
            client,
            ConnectionId(42),
            &cookie
        ));
        assert!(!jar.verify(now, addr("192.0.2.2:4000"), ConnectionId(42), &cookie));
        assert!(!jar.verify(now, addr("192.0.2.1:4001"), ConnectionId(42), &cookie));
        assert!(!jar.verify(now, client, ConnectionId(43), &cookie));
        assert!(!CookieJar::new([8; 32], Duration::from_secs(10)).verify(
            now,
            client,
            ConnectionId(42),
            &cookie
        ));
        // Issued in the future, or tampered with.
        assert!(!jar.verify(
            now - Duration::from_secs(1),
            client,
            ConnectionId(42),
            &cookie
        ));
        let mut forged = cookie;
        forged.0[COOKIE_LEN - 1] ^= 1;
        assert!(!jar.verify(now, client, ConnectionId(42), &forged));
    }
}
