//! The file transfer format of `qstp send` / `qstp recv`, over any ordered byte stream.
//!
//! The sender writes a header (magic, version, name, size if known), then the bytes in chunks
//! (`u32` length, then that many bytes; a zero length ends them), then the BLAKE3 hash of all the
//! bytes. The receiver checks the size and the hash and answers with a verdict (one code byte, a
//! `u16` length and a message). Integers are big-endian.

use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// First bytes of every transfer.
pub const MAGIC: [u8; 8] = *b"QSTPFILE";
/// Version of this format.
pub const VERSION: u8 = 1;
/// Longest file name carried, in bytes.
pub const MAX_NAME: usize = 255;
/// Largest chunk of file bytes.
pub const MAX_CHUNK: usize = 64 * 1024;
/// Size of the reads from the source and the writes to the sink.
pub const IO_BLOCK: usize = 1 << 20;
/// Longest verdict message, in bytes.
pub const MAX_MESSAGE: usize = 1024;

/// What the sender announces before the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The file's name (a plain name; the receiver sanitises it again).
    pub name: String,
    /// The number of bytes to follow, when known in advance (not for stdin).
    pub size: Option<u64>,
}

/// The receiver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every byte arrived and matches the sender's hash; the file is in place.
    Verified,
    /// The bytes arrived but their hash differs from the sender's.
    HashMismatch,
    /// A different number of bytes arrived than the header announced.
    SizeMismatch,
    /// The receiver could not store the file.
    StorageFailed(String),
    /// The receiver refused the transfer (bad header).
    Rejected(String),
}

/// Why a transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    /// The stream does not start with the transfer magic.
    #[error("not a qstp file transfer (bad magic)")]
    BadMagic,
    /// A format version this side does not speak.
    #[error("unsupported transfer format version {0}")]
    UnsupportedVersion(u8),
    /// The file name is empty, too long or not UTF-8.
    #[error("invalid file name in the transfer header")]
    BadName,
    /// The receiver will not store a file under this name (hidden, a path, control characters).
    #[error("refused file name {name:?}: {reason}")]
    UnsafeName {
        /// The name the sender asked for.
        name: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// A chunk longer than the format allows.
    #[error("chunk of {0} bytes exceeds the limit")]
    ChunkTooLarge(u32),
    /// The bytes do not match the sender's hash.
    #[error("BLAKE3 hash mismatch: the data was corrupted")]
    HashMismatch,
    /// The number of bytes differs from the announced size.
    #[error("size mismatch: {announced} bytes announced, {received} received")]
    SizeMismatch {
        /// The size in the header.
        announced: u64,
        /// The bytes that came.
        received: u64,
    },
    /// The stream ended in the middle of the transfer.
    #[error("the stream ended before the transfer was complete")]
    Truncated,
    /// A verdict code this side does not know.
    #[error("unknown verdict code {0}")]
    BadVerdict(u8),
    /// Reading, writing or the connection failed.
    #[error(transparent)]
    Io(io::Error),
}

impl From<io::Error> for TransferError {
    fn from(e: io::Error) -> Self {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            TransferError::Truncated
        } else {
            TransferError::Io(e)
        }
    }
}

impl Header {
    /// The header's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let name = truncate_utf8(&self.name, MAX_NAME);
        let mut out = Vec::with_capacity(8 + 2 + 8 + 2 + name.len());
        out.extend_from_slice(&MAGIC);
        out.push(VERSION);
        out.push(u8::from(self.size.is_some()));
        out.extend_from_slice(&self.size.unwrap_or(0).to_be_bytes());
        out.extend_from_slice(&(name.len() as u16).to_be_bytes());
        out.extend_from_slice(name.as_bytes());
        out
    }

    /// Read and check a header.
    pub async fn read_from<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Header, TransferError> {
        let mut fixed = [0u8; 8 + 1 + 1 + 8 + 2];
        reader.read_exact(&mut fixed).await?;
        if fixed[..8] != MAGIC {
            return Err(TransferError::BadMagic);
        }
        if fixed[8] != VERSION {
            return Err(TransferError::UnsupportedVersion(fixed[8]));
        }
        let size_known = fixed[9] != 0;
        let size = u64::from_be_bytes(fixed[10..18].try_into().expect("8 bytes"));
        let name_len = u16::from_be_bytes([fixed[18], fixed[19]]) as usize;
        if name_len == 0 || name_len > MAX_NAME {
            return Err(TransferError::BadName);
        }
        let mut name = vec![0u8; name_len];
        reader.read_exact(&mut name).await?;
        let name = String::from_utf8(name).map_err(|_| TransferError::BadName)?;
        Ok(Header {
            name,
            size: size_known.then_some(size),
        })
    }
}

/// The longest prefix of `s` within `max` bytes that ends on a character boundary.
fn truncate_utf8(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The name a sender announces for its local path `name`: the last path component with control
/// characters removed, or `qstp-received` when nothing usable is left.
///
/// The receiver does not rely on this: it checks the announced name with [`check_file_name`].
pub fn safe_file_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or("");
    let cleaned: String = last.chars().filter(|c| !c.is_control()).collect();
    if cleaned.is_empty() || cleaned == "." || cleaned == ".." {
        "qstp-received".into()
    } else {
        cleaned
    }
}

/// Check that `name` is a plain, visible file name a receiver may create in its directory.
///
/// Refused: empty, over [`MAX_NAME`] bytes, starting with `.` (hidden files, `.` and `..`), a path
/// separator (`/` or `\`), or a control character (NUL included).
pub fn check_file_name(name: &str) -> Result<&str, TransferError> {
    let refuse = |reason| {
        Err(TransferError::UnsafeName {
            name: name.chars().take(64).collect(),
            reason,
        })
    };
    if name.is_empty() {
        return refuse("empty");
    }
    if name.len() > MAX_NAME {
        return refuse("longer than 255 bytes");
    }
    if name.starts_with('.') {
        return refuse("names starting with '.' (hidden files, '.', '..') are not accepted");
    }
    if name.contains(['/', '\\']) {
        return refuse("contains a path separator");
    }
    if name.chars().any(char::is_control) {
        return refuse("contains a control character");
    }
    Ok(name)
}

/// What moved in one direction of a transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moved {
    /// File bytes (framing excluded).
    pub bytes: u64,
    /// Their BLAKE3 hash.
    pub hash: [u8; 32],
}

/// Write `header`, then everything `source` yields, then the hash; `progress` hears the running
/// byte count. The stream is left open for the verdict.
pub async fn send<R, W>(
    stream: &mut W,
    header: &Header,
    source: &mut R,
    mut progress: impl FnMut(u64),
) -> Result<Moved, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    stream.write_all(&header.encode()).await?;
    let mut hasher = blake3::Hasher::new();
    // Large reads from the source (few system calls), cut into chunks for the stream.
    let mut block = vec![0u8; IO_BLOCK];
    let mut total = 0u64;
    loop {
        let n = source.read(&mut block).await?;
        if n == 0 {
            break;
        }
        for chunk in block[..n].chunks(MAX_CHUNK) {
            stream
                .write_all(&(chunk.len() as u32).to_be_bytes())
                .await?;
            stream.write_all(chunk).await?;
        }
        hasher.update(&block[..n]);
        total += n as u64;
        progress(total);
    }
    stream.write_all(&0u32.to_be_bytes()).await?;
    let hash = *hasher.finalize().as_bytes();
    stream.write_all(&hash).await?;
    stream.flush().await?;
    Ok(Moved { bytes: total, hash })
}

/// Read the chunks and the hash that follow a header into `sink`, checking the size announced in
/// `header` and the hash; `progress` hears the running byte count.
pub async fn receive<R, W>(
    stream: &mut R,
    header: &Header,
    sink: &mut W,
    mut progress: impl FnMut(u64),
) -> Result<Moved, TransferError>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut hasher = blake3::Hasher::new();
    // Chunks are read straight into a large block that goes to the sink whole.
    let mut block = vec![0u8; IO_BLOCK];
    let mut filled = 0usize;
    let mut total = 0u64;
    loop {
        let mut len = [0u8; 4];
        stream.read_exact(&mut len).await?;
        let len = u32::from_be_bytes(len);
        if len == 0 {
            break;
        }
        if len as usize > MAX_CHUNK {
            return Err(TransferError::ChunkTooLarge(len));
        }
        total += u64::from(len);
        if let Some(announced) = header.size {
            if total > announced {
                return Err(TransferError::SizeMismatch {
                    announced,
                    received: total,
                });
            }
        }
        if filled + len as usize > block.len() {
            hasher.update(&block[..filled]);
            sink.write_all(&block[..filled]).await?;
            filled = 0;
        }
        stream
            .read_exact(&mut block[filled..filled + len as usize])
            .await?;
        filled += len as usize;
        progress(total);
    }
    hasher.update(&block[..filled]);
    sink.write_all(&block[..filled]).await?;
    let mut sent_hash = [0u8; 32];
    stream.read_exact(&mut sent_hash).await?;
    sink.flush().await?;
    if let Some(announced) = header.size {
        if total != announced {
            return Err(TransferError::SizeMismatch {
                announced,
                received: total,
            });
        }
    }
    let hash = *hasher.finalize().as_bytes();
    if hash != sent_hash {
        return Err(TransferError::HashMismatch);
    }
    Ok(Moved { bytes: total, hash })
}

impl Verdict {
    /// The verdict for a failed receive.
    pub fn for_error(err: &TransferError) -> Verdict {
        match err {
            TransferError::HashMismatch => Verdict::HashMismatch,
            TransferError::SizeMismatch { .. } => Verdict::SizeMismatch,
            other => Verdict::Rejected(other.to_string()),
        }
    }

    /// The verdict's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let (code, message) = match self {
            Verdict::Verified => (0u8, ""),
            Verdict::HashMismatch => (1, ""),
            Verdict::SizeMismatch => (2, ""),
            Verdict::StorageFailed(m) => (3, m.as_str()),
            Verdict::Rejected(m) => (4, m.as_str()),
        };
        let message = truncate_utf8(message, MAX_MESSAGE);
        let mut out = vec![code];
        out.extend_from_slice(&(message.len() as u16).to_be_bytes());
        out.extend_from_slice(message.as_bytes());
        out
    }

    /// Read a verdict.
    pub async fn read_from<R: AsyncRead + Unpin>(reader: &mut R) -> Result<Verdict, TransferError> {
        let mut fixed = [0u8; 3];
        reader.read_exact(&mut fixed).await?;
        let len = u16::from_be_bytes([fixed[1], fixed[2]]) as usize;
        if len > MAX_MESSAGE {
            return Err(TransferError::BadVerdict(fixed[0]));
        }
        let mut message = vec![0u8; len];
        reader.read_exact(&mut message).await?;
        let message = String::from_utf8_lossy(&message).into_owned();
        Ok(match fixed[0] {
            0 => Verdict::Verified,
            1 => Verdict::HashMismatch,
            2 => Verdict::SizeMismatch,
            3 => Verdict::StorageFailed(message),
            4 => Verdict::Rejected(message),
            code => return Err(TransferError::BadVerdict(code)),
        })
    }
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Verified => f.write_str("verified"),
            Verdict::HashMismatch => f.write_str("the receiver found a BLAKE3 hash mismatch"),
            Verdict::SizeMismatch => {
                f.write_str("the receiver got a different size than announced")
            }
            Verdict::StorageFailed(m) => write!(f, "the receiver could not store the file: {m}"),
            Verdict::Rejected(m) => write!(f, "the receiver rejected the transfer: {m}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    async fn round_trip(data: &[u8], size: Option<u64>) -> (Result<Moved, TransferError>, Vec<u8>) {
        let (mut a, mut b) = tokio::io::duplex(8192);
        let header = Header {
            name: "report.pdf".into(),
            size,
        };
        let payload = data.to_vec();
        let sender = tokio::spawn(async move {
            let mut source = &payload[..];
            send(&mut a, &header, &mut source, |_| {}).await.unwrap()
        });
        let header = Header::read_from(&mut b).await.unwrap();
        assert_eq!(header.name, "report.pdf");
        let mut sink = Vec::new();
        let result = receive(&mut b, &header, &mut sink, |_| {}).await;
        let sent = sender.await.unwrap();
        if let Ok(moved) = &result {
            assert_eq!(moved, &sent);
        }
        (result, sink)
    }

    #[tokio::test]
    async fn bytes_and_hash_survive_the_framing() {
        for len in [0usize, 1, MAX_CHUNK - 1, MAX_CHUNK, 3 * MAX_CHUNK + 17] {
            let data = pattern(len);
            let (result, sink) = round_trip(&data, Some(len as u64)).await;
            let moved = result.unwrap();
            assert_eq!(sink, data);
            assert_eq!(moved.bytes, len as u64);
            assert_eq!(moved.hash, *blake3::hash(&data).as_bytes());
            let (result, _) = round_trip(&data, None).await;
            result.unwrap();
        }
    }

    #[tokio::test]
    async fn a_wrong_size_is_caught() {
        let data = pattern(1000);
        let (result, _) = round_trip(&data, Some(999)).await;
        assert!(matches!(
            result,
            Err(TransferError::SizeMismatch { announced: 999, .. })
        ));
        let (result, _) = round_trip(&data, Some(1001)).await;
        assert!(matches!(
            result,
            Err(TransferError::SizeMismatch {
                announced: 1001,
                received: 1000
            })
        ));
    }

    #[tokio::test]
    async fn a_flipped_bit_is_caught_by_the_hash() {
        let data = pattern(5000);
        let mut wire = Vec::new();
        let header = Header {
            name: "x".into(),
            size: Some(5000),
        };
        send(&mut wire, &header, &mut &data[..], |_| {})
            .await
            .unwrap();
        let body = header.encode().len() + 4 + 100;
        wire[body] ^= 0x10;
        let mut reader = &wire[..];
        let header = Header::read_from(&mut reader).await.unwrap();
        let result = receive(&mut reader, &header, &mut Vec::new(), |_| {}).await;
        assert!(matches!(result, Err(TransferError::HashMismatch)));
    }

    #[tokio::test]
    async fn truncation_and_garbage_are_refused() {
        let data = pattern(3000);
        let mut wire = Vec::new();
        let header = Header {
            name: "x".into(),
            size: None,
        };
        send(&mut wire, &header, &mut &data[..], |_| {})
            .await
            .unwrap();
        let mut reader = &wire[..wire.len() - 10];
        let header = Header::read_from(&mut reader).await.unwrap();
        let result = receive(&mut reader, &header, &mut Vec::new(), |_| {}).await;
        assert!(matches!(result, Err(TransferError::Truncated)));
        assert!(matches!(
            Header::read_from(&mut &b"GARBAGE-GARBAGE-GARBAGE"[..]).await,
            Err(TransferError::BadMagic)
        ));
        let mut bad_chunk = Header {
            name: "x".into(),
            size: None,
        }
        .encode();
        bad_chunk.extend_from_slice(&u32::MAX.to_be_bytes());
        let mut reader = &bad_chunk[..];
        let header = Header::read_from(&mut reader).await.unwrap();
        let result = receive(&mut reader, &header, &mut Vec::new(), |_| {}).await;
        assert!(matches!(result, Err(TransferError::ChunkTooLarge(_))));
    }

    #[tokio::test]
    async fn verdicts_round_trip() {
        for verdict in [
            Verdict::Verified,
            Verdict::HashMismatch,
            Verdict::SizeMismatch,
            Verdict::StorageFailed("disk full".into()),
            Verdict::Rejected("bad magic".into()),
        ] {
            let wire = verdict.encode();
            assert_eq!(Verdict::read_from(&mut &wire[..]).await.unwrap(), verdict);
        }
        assert!(matches!(
            Verdict::read_from(&mut &[9u8, 0, 0][..]).await,
            Err(TransferError::BadVerdict(9))
        ));
    }

    #[test]
    fn names_are_reduced_to_a_safe_last_component() {
        assert_eq!(safe_file_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_file_name("C:\\x\\y.txt"), "y.txt");
        assert_eq!(safe_file_name(".."), "qstp-received");
        assert_eq!(safe_file_name("dir/"), "qstp-received");
        assert_eq!(safe_file_name("a\nb"), "ab");
        assert_eq!(
            safe_file_name(".bashrc"),
            ".bashrc",
            "the sender keeps the name; the receiver decides"
        );
        let long = "é".repeat(200);
        let header = Header {
            name: long,
            size: None,
        };
        assert!(header.encode().len() <= 20 + MAX_NAME);
    }

    #[test]
    fn the_receiver_refuses_hidden_paths_control_characters_and_overlong_names() {
        for name in [
            "report.pdf",
            "a",
            "x.tar.gz",
            "résumé-2026.txt",
            &"n".repeat(MAX_NAME),
        ] {
            assert_eq!(check_file_name(name).unwrap(), name);
        }
        for name in [
            "",
            ".",
            "..",
            ".bashrc",
            ".ssh",
            "..hidden",
            "../x",
            "a/b",
            "a\\b",
            "/etc/passwd",
            "a\nb",
            "a\0b",
            "\u{7f}x",
            &"n".repeat(MAX_NAME + 1),
        ] {
            assert!(
                matches!(check_file_name(name), Err(TransferError::UnsafeName { .. })),
                "{name:?} accepted"
            );
        }
    }
}
