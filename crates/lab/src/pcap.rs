//! Packet captures of a simulated link (`qstp run --pcap LINK`): for the first run of each point,
//! `pcap/<point>.pcap` in the results folder, the frames the simulator's tap built
//! ([`qstp_sim::capture`]: each packet as it starts onto the link, a raw IPv4 packet) in a
//! classic pcap file (linktype RAW, 101; nanosecond timestamps counted from the start of the
//! run, so from 1970-01-01 00:00:00 in Wireshark), at most a bounded number of packets per file.

use crate::figures::stem_of;
use crate::output::{self, OutputError};
use crate::runner::{execute_tasks, PointResult, Progress, RunError, Task};
use crate::scenario::Plan;
use crate::summary::point_params;
use qstp_dataplane::pcap::RawIpPcap;
use qstp_proto::Time;
use qstp_sim::capture::{link_names, Capture, CaptureSink};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most packets captured per file unless told otherwise (about 150 MB of 1500-byte packets).
pub const DEFAULT_LIMIT: u64 = 100_000;

/// Check that every point of `plan` has a link named `link`; the error lists the names known.
pub fn check_link(plan: &Plan, link: &str) -> Result<(), String> {
    for (p, point) in plan.points.iter().enumerate() {
        let names = link_names(&point.scenario.spec(0));
        if !names.iter().any(|n| n == link) {
            let at = if plan.points.len() > 1 {
                format!(" at point {p}")
            } else {
                String::new()
            };
            return Err(format!(
                "--pcap: no link named '{link}'{at}; the links that can be captured are: {}",
                names.join(", ")
            ));
        }
    }
    Ok(())
}

/// The capture file of point `p` in the folder `dir`.
pub fn path(plan: &Plan, dir: &Path, p: usize) -> PathBuf {
    dir.join(format!(
        "{}.pcap",
        stem_of(&point_params(&plan.points[p]), p)
    ))
}

/// A pcap file receiving a run's frames; write errors are kept for [`PcapSink::finish`].
pub struct PcapSink {
    path: PathBuf,
    pcap: RawIpPcap,
    error: Option<String>,
}

impl PcapSink {
    /// Create the file at `path` and write its header.
    pub fn create(path: &Path) -> Result<PcapSink, String> {
        let cannot = |e: std::io::Error| format!("cannot write {}: {e}", path.display());
        let pcap = RawIpPcap::new(File::create(path).map_err(cannot)?).map_err(cannot)?;
        Ok(PcapSink {
            path: path.to_path_buf(),
            pcap,
            error: None,
        })
    }

    /// Flush the file; returns the number of frames written, or the first write error.
    pub fn finish(mut self) -> Result<u64, String> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        self.pcap
            .finish()
            .map_err(|e| format!("cannot write {}: {e}", self.path.display()))
    }
}

impl CaptureSink for PcapSink {
    fn frame(&mut self, time: Time, frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let at = std::time::Duration::from_nanos(time.as_nanos());
        if let Err(e) = self.pcap.write(at, frame) {
            self.error = Some(format!("cannot write {}: {e}", self.path.display()));
        }
    }
}

/// Why a captured plan failed.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// A run failed.
    #[error(transparent)]
    Run(#[from] RunError),
    /// The results folder could not be prepared.
    #[error(transparent)]
    Output(#[from] OutputError),
    /// A capture file could not be written.
    #[error("{0}")]
    Write(String),
}

/// Run `plan` as [`crate::runner::execute`] does, capturing `link` (at most `limit` packets) in
/// the first run of each point into `dir/pcap/<point>.pcap`. The folder is claimed first (see
/// [`output::claim`]); its earlier captures are replaced, and on a failure the new ones removed.
pub fn execute_captured(
    plan: &Plan,
    jobs: usize,
    dir: &Path,
    link: &str,
    limit: u64,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Vec<PointResult>, CaptureError> {
    check_link(plan, link).map_err(CaptureError::Write)?;
    let folder = output::prepare_pcap(dir)?;
    let errors: Mutex<Vec<String>> = Mutex::new(Vec::new());
    let simulate = |task: Task,
                    spec: &qstp_sim::SimSpec,
                    on_time: &mut dyn FnMut(Time) -> std::ops::ControlFlow<()>| {
        if task.run != 0 {
            return qstp_sim::run_with_progress(spec, on_time).map_err(|e| e.to_string());
        }
        let mut sink = PcapSink::create(&path(plan, &folder, task.point))?;
        let out = qstp_sim::run_with_capture(
            spec,
            on_time,
            Some(Capture {
                link: link.to_string(),
                limit,
                sink: &mut sink,
            }),
        )
        .map_err(|e| e.to_string())?;
        if let Err(e) = sink.finish() {
            errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
        }
        Ok(out)
    };
    let outcome = execute_tasks(plan, jobs, simulate, progress)
        .map_err(CaptureError::from)
        .and_then(|results| {
            match errors
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .first()
            {
                Some(e) => Err(CaptureError::Write(e.clone())),
                None => Ok(results),
            }
        });
    if outcome.is_err() {
        let _ = std::fs::remove_dir_all(&folder);
    }
    outcome
}

#[cfg(test)]
mod tests;
