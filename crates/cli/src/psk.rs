//! `--psk FILE` of `send` and `recv`: a pre-shared key both ends read from a file.

use anyhow::{bail, Context as _};
use qstp_proto::PreSharedKey;
use std::path::Path;

/// Fewest secret bytes accepted: a key file with less is a mistake, not a secret.
const MIN_SECRET: usize = 16;

/// Largest key file read.
const MAX_FILE: u64 = 64 * 1024;

/// The key in `path`: its bytes, surrounding whitespace left out (so a file written by `echo`
/// and one written without a newline give the same key), hashed into 32 bytes.
pub fn load(path: &Path) -> anyhow::Result<PreSharedKey> {
    let shown = path.display();
    let size = std::fs::metadata(path)
        .with_context(|| format!("cannot read --psk {shown}"))?
        .len();
    if size > MAX_FILE {
        bail!("--psk {shown}: {size} bytes; a key file holds at most {MAX_FILE}");
    }
    let bytes = std::fs::read(path).with_context(|| format!("cannot read --psk {shown}"))?;
    let secret = bytes.trim_ascii();
    if secret.len() < MIN_SECRET {
        bail!(
            "--psk {shown}: {} bytes of secret; use at least {MIN_SECRET} (for instance `head -c 32 /dev/urandom | base64 > {shown}`)",
            secret.len()
        );
    }
    Ok(PreSharedKey::from_secret(secret))
}
