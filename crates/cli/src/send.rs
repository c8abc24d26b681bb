//! `qstp send`.

/// Arguments of `qstp send`.
#[derive(clap::Args)]
pub struct SendArgs {}

/// Run `qstp send`.
pub fn main(_args: SendArgs) -> anyhow::Result<()> {
    anyhow::bail!("`qstp send` is not built yet")
}
