//! What can go wrong on a QSTP connection over a real network.

use qstp_proto::{CloseReason, ConnectError, ReadError, WriteError};
use std::io;

/// Why a connection or endpoint operation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// With data in flight, the peer answered nothing for several probe timeouts (RFC 9002
    /// §6.2): it crashed, was killed, or the path to it broke.
    #[error("the peer stopped answering: nothing heard for {0:.1} s while data was in flight (crashed, killed, or the path broke)")]
    PeerUnresponsive(f64),
    /// The local network refuses datagrams this large (EMSGSIZE: above the interface's MTU) and
    /// the connection may not use smaller ones.
    #[error("datagrams of {0} bytes exceed the local interface's MTU (EMSGSIZE); use a smaller --mtu, or leave it out to discover the path MTU")]
    DatagramTooLarge(usize),
    /// The peer did not answer the handshake in time.
    #[error("connection attempt timed out: no answer from the peer")]
    ConnectTimeout,
    /// The peer did not answer a handshake that carried a pre-shared key: it is not there, or it
    /// holds another key (a server with a key says nothing to a hello without its binder).
    #[error(
        "connection attempt timed out: no answer from the peer (a receiver holding another pre-shared key stays silent: do both ends use the same --psk?)"
    )]
    ConnectTimeoutWithKey,
    /// Nothing was heard from the peer for the idle timeout: it vanished or the path broke.
    #[error("connection timed out: nothing heard from the peer for the idle timeout")]
    IdleTimeout,
    /// The peer answered the handshake, but no answer authenticated: the two ends hold different
    /// pre-shared keys (or one has none), or something on the path altered the handshake.
    #[error(
        "handshake failed: {0} answer(s) from the peer did not authenticate (do both ends use the same --psk?)"
    )]
    HandshakeNotAuthenticated(u64),
    /// The peer refused the connection.
    #[error("connection refused by the peer")]
    Refused,
    /// The peer refused the connection: it holds another pre-shared key, or only one end has one.
    #[error(
        "connection refused: the peer holds another pre-shared key, or only one end has one (do both ends use the same --psk?)"
    )]
    KeyMismatch,
    /// The handshake's destination answered with ICMP "port unreachable": no socket is bound
    /// to that port.
    #[error("connection refused: nothing listens on {0}")]
    NothingListens(std::net::SocketAddr),
    /// The peer aborted the connection.
    #[error("connection closed by the peer (code {code}): {reason}")]
    PeerClosed {
        /// The peer's application error code.
        code: u32,
        /// The peer's reason.
        reason: String,
    },
    /// This side aborted the connection.
    #[error("connection closed locally")]
    LocallyClosed,
    /// The peer broke the protocol.
    #[error("protocol violation by the peer: {0}")]
    ProtocolViolation(String),
    /// The connection ended normally; nothing more can be sent.
    #[error("connection already finished")]
    Finished,
    /// The composition does not offer this service (for instance a byte stream over `tfrc`).
    #[error("not supported by this composition: {0}")]
    Unsupported(&'static str),
    /// A message larger than the send buffer.
    #[error("message of {0} bytes exceeds the send buffer")]
    TooLarge(usize),
    /// The connection could not be started (bad configuration, too many connections).
    #[error("cannot connect: {0}")]
    Connect(#[from] ConnectError),
    /// The endpoint's driver stopped (its socket failed or the endpoint was shut down).
    #[error("endpoint stopped: {0}")]
    EndpointStopped(String),
    /// The socket failed.
    #[error("socket error: {0}")]
    Io(#[from] io::Error),
    /// A delegation group could not be formed (the reason says why).
    #[error("delegation group refused: {0}")]
    Group(String),
}

impl Error {
    /// The error for a connection that closed for `reason`; `None` for a graceful close.
    pub(crate) fn from_close(reason: &CloseReason) -> Option<Error> {
        Some(match reason {
            CloseReason::Graceful => return None,
            CloseReason::LocallyClosed => Error::LocallyClosed,
            CloseReason::PeerClosed { code, reason } => Error::PeerClosed {
                code: *code,
                reason: reason.clone(),
            },
            CloseReason::IdleTimeout => Error::IdleTimeout,
            CloseReason::PeerUnresponsive { silent_for } => {
                Error::PeerUnresponsive(silent_for.as_secs_f64())
            }
            CloseReason::DatagramTooLarge { size } => Error::DatagramTooLarge(*size),
            CloseReason::HandshakeTimeout => Error::ConnectTimeout,
            CloseReason::Refused => Error::Refused,
            CloseReason::KeyMismatch => Error::KeyMismatch,
            CloseReason::ProtocolViolation(why) => Error::ProtocolViolation(why.clone()),
        })
    }

    /// The `io::ErrorKind` that best describes this error to byte-stream users.
    pub fn io_kind(&self) -> io::ErrorKind {
        match self {
            Error::ConnectTimeout
            | Error::ConnectTimeoutWithKey
            | Error::IdleTimeout
            | Error::PeerUnresponsive(_) => io::ErrorKind::TimedOut,
            Error::DatagramTooLarge(_) => io::ErrorKind::InvalidInput,
            Error::Refused | Error::NothingListens(_) => io::ErrorKind::ConnectionRefused,
            Error::HandshakeNotAuthenticated(_) | Error::KeyMismatch => {
                io::ErrorKind::PermissionDenied
            }
            Error::PeerClosed { .. } | Error::ProtocolViolation(_) => {
                io::ErrorKind::ConnectionReset
            }
            Error::LocallyClosed | Error::EndpointStopped(_) => io::ErrorKind::ConnectionAborted,
            Error::Finished => io::ErrorKind::BrokenPipe,
            Error::Unsupported(_) => io::ErrorKind::Unsupported,
            Error::TooLarge(_) | Error::Connect(_) | Error::Group(_) => io::ErrorKind::InvalidInput,
            Error::Io(e) => e.kind(),
        }
    }

    /// Recover the `Error` carried inside an `io::Error` returned by the stream API, if any.
    pub fn from_io(err: &io::Error) -> Option<&Error> {
        err.get_ref()
            .and_then(|inner| inner.downcast_ref::<Error>())
    }
}

impl From<Error> for io::Error {
    fn from(err: Error) -> io::Error {
        match err {
            Error::Io(e) => e,
            other => io::Error::new(other.io_kind(), other),
        }
    }
}

impl From<WriteError> for Error {
    fn from(err: WriteError) -> Error {
        match err {
            // Callers wait on `Blocked` instead of converting it; seen here it means closed.
            WriteError::Blocked => Error::LocallyClosed,
            WriteError::Finished => Error::Finished,
            WriteError::Closed(reason) => Error::from_close(&reason).unwrap_or(Error::Finished),
            WriteError::Unsupported(what) => Error::Unsupported(what),
            WriteError::TooLarge(size) => Error::TooLarge(size),
        }
    }
}

impl From<ReadError> for Error {
    fn from(err: ReadError) -> Error {
        match err {
            ReadError::Blocked => Error::LocallyClosed,
            ReadError::Closed(reason) => Error::from_close(&reason).unwrap_or(Error::Finished),
            ReadError::Unsupported(what) => Error::Unsupported(what),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons_map_to_clear_errors() {
        assert!(Error::from_close(&CloseReason::Graceful).is_none());
        assert!(matches!(
            Error::from_close(&CloseReason::IdleTimeout),
            Some(Error::IdleTimeout)
        ));
        assert!(matches!(
            Error::from_close(&CloseReason::HandshakeTimeout),
            Some(Error::ConnectTimeout)
        ));
        assert!(matches!(
            Error::from_close(&CloseReason::Refused),
            Some(Error::Refused)
        ));
        let peer = CloseReason::PeerClosed {
            code: 7,
            reason: "bye".into(),
        };
        assert_eq!(
            Error::from_close(&peer).unwrap().to_string(),
            "connection closed by the peer (code 7): bye"
        );
    }

    #[test]
    fn errors_survive_the_trip_through_io_error() {
        let io_err: io::Error = Error::IdleTimeout.into();
        assert_eq!(io_err.kind(), io::ErrorKind::TimedOut);
        assert!(matches!(Error::from_io(&io_err), Some(Error::IdleTimeout)));
    }
}
