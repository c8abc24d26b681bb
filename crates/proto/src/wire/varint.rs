//! Variable-length unsigned integers: 7 bits per byte, least significant group first, the high
//! bit set on every byte but the last; only the shortest encoding of a value is accepted.

use super::WireError;

/// Longest encoding of a u64, bytes.
pub(crate) const MAX_VARINT_LEN: usize = 10;

/// Bytes the encoding of `value` takes.
pub(crate) fn len(value: u64) -> usize {
    let bits = 64 - value.leading_zeros() as usize;
    bits.div_ceil(7).max(1)
}

/// Write the encoding of `value` at the front of `buf`, which holds at least `len(value)` bytes;
/// returns the bytes written.
pub(crate) fn write(buf: &mut [u8], mut value: u64) -> usize {
    let mut i = 0;
    while value >= 0x80 {
        buf[i] = (value as u8 & 0x7f) | 0x80;
        value >>= 7;
        i += 1;
    }
    buf[i] = value as u8;
    i + 1
}

/// Read one varint from the front of `bytes`; returns it and the bytes after it.
pub(crate) fn read(bytes: &[u8]) -> Result<(u64, &[u8]), WireError> {
    let mut value: u64 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(MAX_VARINT_LEN) {
        let group = u64::from(byte & 0x7f);
        // The tenth byte holds bit 63 only.
        if i == MAX_VARINT_LEN - 1 && byte > 1 {
            return Err(WireError::InvalidField("varint overflows 64 bits"));
        }
        value |= group << (7 * i);
        if byte & 0x80 == 0 {
            if byte == 0 && i > 0 {
                return Err(WireError::InvalidField("varint not in its shortest form"));
            }
            return Ok((value, &bytes[i + 1..]));
        }
    }
    // Fewer than MAX_VARINT_LEN bytes, all with the continuation bit.
    Err(WireError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn golden_encodings() {
        let cases: [(u64, &[u8]); 6] = [
            (0, &[0x00]),
            (1, &[0x01]),
            (127, &[0x7f]),
            (128, &[0x80, 0x01]),
            (300, &[0xac, 0x02]),
            (
                u64::MAX,
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01],
            ),
        ];
        for (value, bytes) in cases {
            let mut buf = [0; MAX_VARINT_LEN];
            let n = write(&mut buf, value);
            assert_eq!(&buf[..n], bytes, "{value}");
            assert_eq!(len(value), bytes.len());
            assert_eq!(read(bytes), Ok((value, &[][..])));
        }
    }

    #[test]
    fn rejects_truncated_overlong_and_overflowing() {
        assert_eq!(read(&[]), Err(WireError::Truncated));
        assert_eq!(read(&[0x80]), Err(WireError::Truncated));
        assert!(matches!(
            read(&[0x80, 0x00]),
            Err(WireError::InvalidField(_))
        ));
        assert!(matches!(
            read(&[0xff; 9].iter().chain(&[0x02]).copied().collect::<Vec<_>>()),
            Err(WireError::InvalidField(_))
        ));
        assert!(matches!(read(&[0x80; 11]), Err(WireError::InvalidField(_))));
    }

    proptest! {
        #[test]
        fn round_trips(value: u64, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut buf = vec![0; MAX_VARINT_LEN];
            let n = write(&mut buf, value);
            prop_assert_eq!(n, len(value));
            buf.truncate(n);
            buf.extend_from_slice(&tail);
            prop_assert_eq!(read(&buf), Ok((value, &tail[..])));
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..12)) {
            let _ = read(&bytes);
        }
    }
}
