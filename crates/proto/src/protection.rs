//! Packet protection: an ephemeral X25519 key exchange in the hello and the accept, then
//! AES-256-GCM on every data, feedback and close packet.
//!
//! - The client's hello carries its key share; the server's accept carries its own and a tag that
//!   proves it derived the same keys (key confirmation). The keys come from blake3's key
//!   derivation over the shared secret, an optional pre-shared key and a transcript of what both
//!   hellos and the accept negotiated, so a middlebox that changes the composition, or does not
//!   know the pre-shared key, makes the accept fail to authenticate at the client.
//! - A protected packet keeps the cleartext header (version, type, destination id), adds an
//!   8-byte protection sequence number, then the encrypted rest of the packet and a 16-byte tag.
//!   The header and the sequence number are the associated data; the nonce is the direction's IV
//!   XOR the sequence number (as TLS 1.3, RFC 8446 §5.3), so no nonce repeats under one key.
//! - Each direction's key changes every 2^22 packets (an epoch, which the sequence number tells,
//!   so nothing on the wire announces it): RFC 9001 §6.6 bounds what AES-GCM may seal under one
//!   key at 2^23 packets. Every epoch's key derives from the direction's secret.
//! - A datagram that does not authenticate, or whose sequence number was seen before (a replay
//!   window as IPsec's, RFC 4303 §3.4.3), is dropped before anything in it is read.
//!
//! The core draws no randomness: key shares are made from secrets the caller's endpoint drew from
//! its generator, which the driver seeds (the UDP endpoint from the operating system).
//!
//! [`Protection::Null`] leaves packets as they are: the simulator runs it (its runs stay fast and
//! byte-exact), and nothing on a real network should.

use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use x25519_dalek::{PublicKey, StaticSecret};

/// Length of a key share (an X25519 public key), bytes.
pub const KEY_SHARE_LEN: usize = 32;

/// Length of a hello's pre-shared key binder, bytes.
pub const BINDER_LEN: usize = 32;

/// Length of an authentication tag, bytes.
pub const TAG_LEN: usize = 16;

/// Length of the protection sequence number after the cleartext header, bytes.
pub const SEQUENCE_LEN: usize = 8;

/// Bytes protection adds to every data, feedback and close packet.
pub const OVERHEAD: usize = SEQUENCE_LEN + TAG_LEN;

/// Length of the cleartext header a protected packet keeps: version, type, destination id.
pub const CLEAR_HEADER_LEN: usize = 10;

/// Sequence numbers this far behind the largest seen are still accepted once (the replay window).
const REPLAY_WINDOW: u64 = 1024;

/// log2 of the packets sealed under one key: half of AES-GCM's confidentiality limit of 2^23
/// packets (RFC 9001 §6.6).
const EPOCH_BITS: u32 = 22;

/// The nonce of the accept's confirmation tag: never a packet's (sequence numbers start at 0 and
/// a connection closes long before 2^64 - 1 packets).
const CONFIRM_SEQUENCE: u64 = u64::MAX;

/// How a connection's packets are protected.
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protection {
    /// Authenticated encryption of every packet after the handshake (the default).
    #[default]
    Aead,
    /// None: packets travel as encoded, readable and forgeable by anyone on the path. For the
    /// simulator and for tests; never for a real network.
    Null,
}

/// A pre-shared key: both sides must hold the same one, or the handshake fails.
#[derive(Clone, PartialEq, Eq)]
pub struct PreSharedKey(pub [u8; 32]);

impl std::fmt::Debug for PreSharedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PreSharedKey(..)")
    }
}

impl PreSharedKey {
    /// A key from any secret text or bytes (a key file's content): blake3 derives 32 bytes from it.
    pub fn from_secret(secret: &[u8]) -> Self {
        PreSharedKey(blake3::derive_key("qstp 2026-11 pre-shared key", secret))
    }

    /// The binder of a hello whose bytes before the binder are `covered`: a MAC keyed from this
    /// key (in the spirit of TLS 1.3's PSK binder, RFC 8446 §4.2.11), so that a server can refuse
    /// a client holding another key before it keeps any state for it.
    pub fn binder(&self, covered: &[u8]) -> [u8; BINDER_LEN] {
        *self.binder_hash(covered).as_bytes()
    }

    /// Whether `binder` is this key's binder of `covered` (compared in constant time).
    pub fn verifies(&self, covered: &[u8], binder: &[u8; BINDER_LEN]) -> bool {
        self.binder_hash(covered) == blake3::Hash::from_bytes(*binder)
    }

    fn binder_hash(&self, covered: &[u8]) -> blake3::Hash {
        // A key of its own, so a binder says nothing of the packet keys derived from the same PSK.
        let key = blake3::derive_key("qstp 2026-11 hello binder", &self.0);
        blake3::keyed_hash(&key, covered)
    }
}

/// One side's ephemeral key pair.
#[derive(Clone)]
pub struct KeyShare {
    secret: StaticSecret,
    public: [u8; KEY_SHARE_LEN],
}

impl std::fmt::Debug for KeyShare {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyShare")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl KeyShare {
    /// The key pair of a secret the caller drew at random.
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let secret = StaticSecret::from(secret);
        let public = PublicKey::from(&secret).to_bytes();
        KeyShare { secret, public }
    }

    /// The public half, sent to the peer.
    pub fn public(&self) -> [u8; KEY_SHARE_LEN] {
        self.public
    }
}

/// Why packet keys could not be made or a packet not opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ProtectionError {
    /// The peer's key share is a low-order point: the shared secret would be known to anyone.
    #[error("the peer's key share is not acceptable")]
    WeakKeyShare,
    /// The datagram is too short to hold a sequence number and a tag.
    #[error("too short for a protected packet")]
    Short,
    /// The tag did not verify: forged, corrupted, or keyed with another secret.
    #[error("authentication failed")]
    Forged,
    /// The sequence number was seen before, or is older than the replay window.
    #[error("replayed")]
    Replayed,
}

/// Which end of the connection a side is, for the direction of each key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Sent the hello.
    Client,
    /// Sent the accept.
    Server,
}

/// What both sides bind into their keys: everything the handshake negotiated.
#[derive(Debug, Clone, Copy)]
pub struct Transcript<'a> {
    /// The hello's fields but the timestamp and cookie (which change between repeated hellos).
    pub hello: &'a [u8],
    /// The client's key share.
    pub client_share: [u8; KEY_SHARE_LEN],
    /// The server's key share.
    pub server_share: [u8; KEY_SHARE_LEN],
}

/// The epoch of a sequence number: which key seals it.
fn epoch_of(sequence: u64) -> u64 {
    sequence >> EPOCH_BITS
}

/// One direction's secret, IV and keys.
#[cfg_attr(feature = "fuzzing", derive(Clone))]
struct Direction {
    /// What every epoch's key derives from.
    secret: [u8; 32],
    iv: [u8; 12],
    /// Epoch 0's key, kept for the accept's confirmation tag.
    first: LessSafeKey,
    /// Keys of later epochs in use: the sealer's one, or the opener's current, previous (late
    /// packets) and next.
    later: [Option<(u64, LessSafeKey)>; 3],
}

impl Direction {
    fn new(secret: [u8; 32], iv: [u8; 12]) -> Direction {
        Direction {
            first: Direction::derive_key(&secret, 0),
            secret,
            iv,
            later: [None, None, None],
        }
    }

    fn derive_key(secret: &[u8; 32], epoch: u64) -> LessSafeKey {
        let mut kdf = blake3::Hasher::new_derive_key("qstp 2026-11 packet key of an epoch v2");
        kdf.update(secret);
        kdf.update(&epoch.to_be_bytes());
        let key = UnboundKey::new(&AES_256_GCM, kdf.finalize().as_bytes()).expect("a 32-byte key");
        LessSafeKey::new(key)
    }

    /// The key of `epoch`, derived on first use in place of the oldest one held.
    fn key(&mut self, epoch: u64) -> &LessSafeKey {
        if epoch == 0 {
            return &self.first;
        }
        let slot = match self
            .later
            .iter()
            .position(|k| k.as_ref().is_some_and(|(e, _)| *e == epoch))
        {
            Some(found) => found,
            None => {
                let oldest = (0..self.later.len())
                    .min_by_key(|&i| self.later[i].as_ref().map_or(0, |(e, _)| *e + 1))
                    .expect("three slots");
                self.later[oldest] = Some((epoch, Direction::derive_key(&self.secret, epoch)));
                oldest
            }
        };
        &self.later[slot].as_ref().expect("just found or filled").1
    }

    fn nonce(&self, sequence: u64) -> Nonce {
        // RFC 8446 §5.3: the sequence number, left-padded to the IV's length, XOR the IV.
        let mut nonce = self.iv;
        for (n, s) in nonce[4..].iter_mut().zip(sequence.to_be_bytes()) {
            *n ^= s;
        }
        Nonce::assume_unique_for_key(nonce)
    }

    /// Encrypt `body` in place under `sequence`'s epoch key and `aad`; its tag.
    fn seal(&mut self, sequence: u64, aad: &[u8], body: &mut [u8]) -> [u8; TAG_LEN] {
        let nonce = self.nonce(sequence);
        seal_with(self.key(epoch_of(sequence)), nonce, aad, body)
    }

    /// Decrypt `body_and_tag` in place under `sequence`'s epoch key; the plaintext's length, or
    /// `None` if it does not authenticate.
    fn open(&mut self, sequence: u64, aad: &[u8], body_and_tag: &mut [u8]) -> Option<usize> {
        let nonce = self.nonce(sequence);
        open_with(self.key(epoch_of(sequence)), nonce, aad, body_and_tag)
    }
}

/// Encrypt `body` in place under `key`, `nonce` and `aad`; its tag.
fn seal_with(key: &LessSafeKey, nonce: Nonce, aad: &[u8], body: &mut [u8]) -> [u8; TAG_LEN] {
    let tag = key
        .seal_in_place_separate_tag(nonce, Aad::from(aad), body)
        .expect("a packet is far below AES-GCM's message limit");
    let mut out = [0; TAG_LEN];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Decrypt `body_and_tag` in place; the plaintext's length, or `None` if it does not
/// authenticate.
fn open_with(
    key: &LessSafeKey,
    nonce: Nonce,
    aad: &[u8],
    body_and_tag: &mut [u8],
) -> Option<usize> {
    key.open_in_place(nonce, Aad::from(aad), body_and_tag)
        .ok()
        .map(|plain| plain.len())
}

/// A connection's packet keys, both directions, and the state that keeps nonces and replays in
/// check.
#[cfg_attr(feature = "fuzzing", derive(Clone))]
pub struct PacketKeys {
    seal: Direction,
    open: Direction,
    next_sequence: u64,
    /// Largest sequence number opened, and a bit per number up to `REPLAY_WINDOW` below it.
    largest_opened: Option<u64>,
    window: [u64; (REPLAY_WINDOW / 64) as usize],
}

impl std::fmt::Debug for PacketKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PacketKeys")
            .field("next_sequence", &self.next_sequence)
            .field("largest_opened", &self.largest_opened)
            .finish_non_exhaustive()
    }
}

impl PacketKeys {
    /// The keys of `side`, from its own key share, the peer's public share, the optional
    /// pre-shared key and the handshake transcript.
    pub fn derive(
        side: Side,
        own: &KeyShare,
        peer: [u8; KEY_SHARE_LEN],
        psk: Option<&PreSharedKey>,
        transcript: &Transcript<'_>,
    ) -> Result<PacketKeys, ProtectionError> {
        let shared = own.secret.diffie_hellman(&PublicKey::from(peer));
        // RFC 7748 §6.1: an all-zero output means a low-order point; refuse it.
        if !shared.was_contributory() {
            return Err(ProtectionError::WeakKeyShare);
        }
        let mut kdf = blake3::Hasher::new_derive_key("qstp 2026-11 packet protection keys v2");
        kdf.update(&psk.map_or([0; 32], |k| k.0));
        kdf.update(shared.as_bytes());
        kdf.update(&(transcript.hello.len() as u64).to_be_bytes());
        kdf.update(transcript.hello);
        kdf.update(&transcript.client_share);
        kdf.update(&transcript.server_share);
        let mut okm = [0u8; 2 * (32 + 12)];
        kdf.finalize_xof().fill(&mut okm);
        let direction = |at: usize| {
            let mut secret = [0; 32];
            secret.copy_from_slice(&okm[at..at + 32]);
            let mut iv = [0; 12];
            iv.copy_from_slice(&okm[at + 32..at + 44]);
            Direction::new(secret, iv)
        };
        let (client_to_server, server_to_client) = (direction(0), direction(44));
        let (seal, open) = match side {
            Side::Client => (client_to_server, server_to_client),
            Side::Server => (server_to_client, client_to_server),
        };
        Ok(PacketKeys {
            seal,
            open,
            next_sequence: 0,
            largest_opened: None,
            window: [0; (REPLAY_WINDOW / 64) as usize],
        })
    }

    /// The tag the server puts on its accept (`accept` is the accept without the tag): proof it
    /// holds the keys the client will derive.
    pub fn confirmation(&self, accept: &[u8]) -> [u8; TAG_LEN] {
        let nonce = self.seal.nonce(CONFIRM_SEQUENCE);
        seal_with(&self.seal.first, nonce, accept, &mut [])
    }

    /// Whether `tag` is the server's confirmation of `accept` under these keys.
    pub fn check_confirmation(&self, accept: &[u8], tag: &[u8; TAG_LEN]) -> bool {
        let mut tag = *tag;
        let nonce = self.open.nonce(CONFIRM_SEQUENCE);
        open_with(&self.open.first, nonce, accept, &mut tag).is_some()
    }

    /// Seal the next packet under `sequence` (tests of what happens far into a connection).
    #[cfg(test)]
    fn skip_to(&mut self, sequence: u64) {
        self.next_sequence = sequence;
    }

    /// Protect the encoded packet in `buf` in place: its first `CLEAR_HEADER_LEN` bytes stay in
    /// the clear, a sequence number follows them, the rest is encrypted, a tag is appended.
    pub fn seal(&mut self, buf: &mut Vec<u8>) {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        let body = buf.len() - CLEAR_HEADER_LEN;
        buf.extend_from_slice(&[0; SEQUENCE_LEN]);
        buf.copy_within(
            CLEAR_HEADER_LEN..CLEAR_HEADER_LEN + body,
            CLEAR_HEADER_LEN + SEQUENCE_LEN,
        );
        buf[CLEAR_HEADER_LEN..CLEAR_HEADER_LEN + SEQUENCE_LEN]
            .copy_from_slice(&sequence.to_be_bytes());
        let (aad, body) = buf.split_at_mut(CLEAR_HEADER_LEN + SEQUENCE_LEN);
        let tag = self.seal.seal(sequence, aad, body);
        buf.extend_from_slice(&tag);
    }

    /// Open the protected `datagram` into `out` (cleared first) as the packet that was sealed:
    /// the cleartext header followed by the decrypted rest. Nothing is kept of a datagram that
    /// fails. [`PacketKeys::open_in_place`] without the copy.
    pub fn open(&mut self, datagram: &[u8], out: &mut Vec<u8>) -> Result<(), ProtectionError> {
        out.clear();
        out.extend_from_slice(datagram);
        match self.open_in_place(out) {
            Ok(packet) => {
                out.truncate(packet.end);
                out.drain(..packet.start);
                Ok(())
            }
            Err(e) => {
                out.clear();
                Err(e)
            }
        }
    }

    /// Open the protected `datagram` in place: on success, the range of `datagram` that now holds
    /// the packet that was sealed (the cleartext header followed by the decrypted rest); on
    /// failure the datagram's bytes are left unspecified. A replay is refused after
    /// authentication, so a forged sequence number cannot move the window.
    pub fn open_in_place(
        &mut self,
        datagram: &mut [u8],
    ) -> Result<std::ops::Range<usize>, ProtectionError> {
        if datagram.len() < CLEAR_HEADER_LEN + OVERHEAD {
            return Err(ProtectionError::Short);
        }
        let (aad, body_and_tag) = datagram.split_at_mut(CLEAR_HEADER_LEN + SEQUENCE_LEN);
        let mut sequence = [0; SEQUENCE_LEN];
        sequence.copy_from_slice(&aad[CLEAR_HEADER_LEN..]);
        let sequence = u64::from_be_bytes(sequence);
        if self.seen(sequence) {
            return Err(ProtectionError::Replayed);
        }
        // Keys are derived only for the epochs next to the largest opened: a forged sequence
        // number far ahead costs no derivation (a real peer never gets 2^22 packets ahead).
        let current = epoch_of(self.largest_opened.unwrap_or(0));
        if epoch_of(sequence) > current + 1 {
            return Err(ProtectionError::Forged);
        }
        let plain = self
            .open
            .open(sequence, aad, body_and_tag)
            .ok_or(ProtectionError::Forged)?;
        self.mark(sequence);
        // The header moves up over the sequence number, next to the plaintext.
        datagram.copy_within(..CLEAR_HEADER_LEN, SEQUENCE_LEN);
        Ok(SEQUENCE_LEN..CLEAR_HEADER_LEN + SEQUENCE_LEN + plain)
    }

    /// Whether `sequence` was opened before or is too old to tell.
    fn seen(&self, sequence: u64) -> bool {
        let Some(largest) = self.largest_opened else {
            return false;
        };
        if sequence > largest {
            return false;
        }
        let behind = largest - sequence;
        if behind >= REPLAY_WINDOW {
            return true;
        }
        let bit = sequence % REPLAY_WINDOW;
        self.window[(bit / 64) as usize] & (1 << (bit % 64)) != 0
    }

    /// Remember `sequence` as opened (RFC 4303 §3.4.3's sliding window).
    fn mark(&mut self, sequence: u64) {
        let largest = self.largest_opened.unwrap_or(0);
        if self.largest_opened.is_none() || sequence > largest {
            // Clear the bits of the numbers the window slides over.
            let from = self.largest_opened.map_or(0, |l| l + 1);
            if sequence - from >= REPLAY_WINDOW {
                self.window = [0; (REPLAY_WINDOW / 64) as usize];
            } else {
                for n in from..sequence {
                    let bit = n % REPLAY_WINDOW;
                    self.window[(bit / 64) as usize] &= !(1 << (bit % 64));
                }
            }
            self.largest_opened = Some(sequence);
        }
        let bit = sequence % REPLAY_WINDOW;
        self.window[(bit / 64) as usize] |= 1 << (bit % 64);
    }
}

#[cfg(test)]
mod tests;
