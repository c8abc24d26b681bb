//! `qstp recv`.

/// Arguments of `qstp recv`.
#[derive(clap::Args)]
pub struct RecvArgs {}

/// Run `qstp recv`.
pub fn main(_args: RecvArgs) -> anyhow::Result<()> {
    anyhow::bail!("`qstp recv` is not built yet")
}
