//! `qstp run`.

/// Arguments of `qstp run`.
#[derive(clap::Args)]
pub struct RunArgs {}

/// Run `qstp run`.
pub fn main(_args: RunArgs) -> anyhow::Result<()> {
    anyhow::bail!("`qstp run` is not built yet")
}
