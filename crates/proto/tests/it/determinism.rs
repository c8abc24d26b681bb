//! A run is a pure function of its seed: the same lossy transfer, run again in another thread or
//! in a fresh process (other hash keys, other addresses, other timing), sends the very same
//! datagrams at the very same times and ends with the very same statistics.

use crate::support::{pattern, Direction, Pair, PathModel, PathStats};
use qstp_proto::{
    Config, Duration, EndpointStats, ErrorControl, Event, Order, Rate, ReadError, Stats, Time,
    WriteError,
};

/// Everything observable about one run.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    /// BLAKE3 of every datagram handed to a path, with its time and direction, in order.
    transmitted: Vec<(Time, Direction, [u8; 32])>,
    /// BLAKE3 of the bytes (or messages) the server's application received.
    delivered: [u8; 32],
    delivered_len: usize,
    stats: [Stats; 2],
    endpoint_stats: [EndpointStats; 2],
    paths: [PathStats; 2],
    events: Vec<(Time, Event)>,
    end: Time,
}

impl Outcome {
    /// One digest of the whole outcome, to compare across processes.
    fn digest(&self) -> String {
        blake3::hash(format!("{self:?}").as_bytes())
            .to_hex()
            .to_string()
    }
}

/// A path that loses, duplicates and reorders, behind a bottleneck that drops when full.
fn rough_path() -> PathModel {
    PathModel {
        loss: 0.08,
        duplicate: 0.03,
        reorder: 0.1,
        reorder_delay: Duration::from_millis(7),
        rate: Some(Rate::from_mbps(4)),
        queue_limit: 20,
        ..PathModel::with_delay(Duration::from_millis(15))
    }
}

fn outcome(pair: &Pair, delivered: &[u8]) -> Outcome {
    let transmitted = pair
        .capture
        .as_ref()
        .expect("capture on")
        .iter()
        .map(|(t, d, b)| (*t, *d, *blake3::hash(b).as_bytes()))
        .collect();
    let events = pair
        .client
        .events
        .iter()
        .chain(&pair.server.events)
        .map(|(t, _, e)| (*t, e.clone()))
        .collect();
    Outcome {
        transmitted,
        delivered: *blake3::hash(delivered).as_bytes(),
        delivered_len: delivered.len(),
        stats: [pair.client.conn().stats(), pair.server.conn().stats()],
        endpoint_stats: [pair.client.endpoint.stats(), pair.server.endpoint.stats()],
        paths: [pair.to_server_stats, pair.to_client_stats],
        events,
        end: pair.time,
    }
}

/// A stream through the rough path, with a phase where every window update is lost.
fn stream_run(seed: u64) -> Outcome {
    let limits = Config {
        recv_buffer: 32 * 1024,
        ..Config::default()
    };
    let mut pair = Pair::new(limits, rough_path(), seed);
    pair.capture = Some(Vec::new());
    pair.connect_and_establish(Config::default());
    let data = pattern(150_000, 9);
    let mut written = 0;
    let mut received = Vec::new();
    let mut step = |p: &mut Pair, read: bool| {
        let conn = p.client.conn_mut();
        while written < data.len() {
            match conn.write(&data[written..]) {
                Ok(n) => written += n,
                Err(WriteError::Blocked) => break,
                Err(e) => panic!("write failed: {e}"),
            }
        }
        if written == data.len() {
            let _ = conn.finish();
        }
        if !read {
            return false;
        }
        let mut buf = [0u8; 3000];
        loop {
            match p.server.conn_mut().read(&mut buf) {
                Ok(0) => return true,
                Ok(n) => received.extend_from_slice(&buf[..n]),
                Err(ReadError::Blocked) => return false,
                Err(e) => panic!("read failed: {e:?}"),
            }
        }
    };
    pair.drive_until(Duration::from_secs(1), |p| step(p, false));
    pair.to_client.loss = 1.0;
    pair.drive_until(Duration::from_millis(300), |p| step(p, true));
    pair.to_client.loss = 0.08;
    let done = pair.drive_until(Duration::from_secs(120), |p| step(p, true));
    assert!(
        done && received == data,
        "the transfer completed: {} of {} bytes",
        received.len(),
        data.len()
    );
    outcome(&pair, &received)
}

/// Ordered messages with partial reliability through the rough path.
fn message_run(seed: u64) -> Outcome {
    let mut pair = Pair::new(Config::default(), rough_path(), seed);
    pair.capture = Some(Vec::new());
    let error = ErrorControl::SackPartial {
        deadline: Some(Duration::from_millis(150)),
        max_retransmissions: Some(2),
    };
    pair.connect_and_establish(Config {
        error,
        order: Order::Ordered,
        ..Config::qstp(Rate::from_kbps(300))
    });
    let mut sent = 0u64;
    let mut delivered = Vec::new();
    pair.drive_until(Duration::from_secs(6), |p| {
        let now = p.time;
        while sent < 600 && Time::from_nanos(1_000_000_000) + Duration::from_millis(8 * sent) <= now
        {
            let len = 100 + (sent as usize * 37) % 2_500;
            if p.client
                .conn_mut()
                .send_message(now, &pattern(len, sent as u8))
                .is_err()
            {
                break;
            }
            sent += 1;
        }
        while let Some(m) = p.server.conn_mut().recv_message() {
            delivered.extend_from_slice(&m);
        }
        false
    });
    assert!(sent > 300, "the writer kept going: {sent}");
    outcome(&pair, &delivered)
}

/// Same seed, another thread: the thread-local hash keys, stack and heap addresses all differ.
#[test]
fn a_lossy_stream_transfer_is_identical_when_run_again() {
    let first = stream_run(77);
    let second = std::thread::spawn(|| stream_run(77))
        .join()
        .expect("second run");
    assert!(
        first.transmitted.len() > 100,
        "a real transfer: {} datagrams",
        first.transmitted.len()
    );
    assert!(
        first.stats[0].packets_retransmitted > 0 && first.paths[0].duplicated > 0,
        "losses and duplicates happened"
    );
    assert_same(&first, &second);
    // And the seed matters: another seed takes another course.
    assert_ne!(stream_run(78).transmitted, first.transmitted);
}

#[test]
fn a_lossy_message_exchange_is_identical_when_run_again() {
    let first = message_run(5);
    let second = std::thread::spawn(|| message_run(5))
        .join()
        .expect("second run");
    assert!(first.transmitted.len() > 300);
    assert_same(&first, &second);
}

/// The environment variable under which this test binary, started by the test below, only prints
/// the digests of its runs.
const CHILD: &str = "QSTP_DETERMINISM_CHILD";

/// Same seed, another process: also another address-space layout and another random hash seed.
#[test]
fn runs_are_identical_across_processes() {
    let digests = format!(
        "stream={} messages={}",
        stream_run(77).digest(),
        message_run(5).digest()
    );
    if std::env::var_os(CHILD).is_some() {
        println!("digests: {digests}");
        return;
    }
    let exe = std::env::current_exe().expect("test binary path");
    let child = std::process::Command::new(exe)
        .args([
            // The test's full name in the `it` binary.
            "determinism::runs_are_identical_across_processes",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD, "1")
        .output()
        .expect("start the child run");
    assert!(
        child.status.success(),
        "child run failed: {}",
        String::from_utf8_lossy(&child.stderr)
    );
    let stdout = String::from_utf8_lossy(&child.stdout);
    let theirs = stdout
        .lines()
        .find_map(|l| l.split_once("digests: ").map(|(_, d)| d))
        .expect("child printed its digests");
    assert_eq!(theirs, digests);
}

/// Compare two outcomes, naming the first datagram that differs.
fn assert_same(a: &Outcome, b: &Outcome) {
    if let Some(i) = a
        .transmitted
        .iter()
        .zip(&b.transmitted)
        .position(|(x, y)| x != y)
    {
        panic!(
            "runs diverge at datagram {i}: {:?} vs {:?}",
            a.transmitted[i], b.transmitted[i]
        );
    }
    assert_eq!(a.transmitted.len(), b.transmitted.len());
    assert_eq!(a, b);
}
