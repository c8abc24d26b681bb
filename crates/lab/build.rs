//! Records the git commit the lab was built from, for summary.json's `git_commit`.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

fn main() {
    let commit = git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=QSTP_GIT_COMMIT={commit}");
    // Build again when HEAD moves: HEAD itself, the branch files and the packed refs.
    if let Some(dir) = git(&["rev-parse", "--git-common-dir"]) {
        let common = PathBuf::from(dir);
        for file in ["refs/heads", "packed-refs"] {
            println!("cargo:rerun-if-changed={}", common.join(file).display());
        }
    }
    if let Some(head) = git(&["rev-parse", "--git-path", "HEAD"]) {
        println!("cargo:rerun-if-changed={head}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
