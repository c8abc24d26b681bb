//! Tests of the cell-level port: each drives a [`CellPort`] directly with frames of its own.

use super::*;
use crate::link::Pool;
use crate::marker::GcraSpec;
use crate::marker::{ColorMode, MarkerKind};

/// Test frames: each is its flow and size.
type PacketStore = Pool<(u32, u32)>;

const TRUNK: Rate = Rate::from_kbps(149_760);

fn spec() -> AtmSpec {
    AtmSpec {
        buffer: 10_000,
        scd: 0.9,
        service: Service::Priority,
        epd: None,
        ppd: false,
        shaping: None,
        probe: None,
        line: None,
        hosts: None,
    }
}

/// A port with one VC per entry of `vcs` (its VP), VPs as given.
fn port(spec: &AtmSpec, vps: Vec<(Phb, Option<Gcra>)>, vcs: Vec<u32>) -> CellPort {
    CellPort::new(
        spec,
        PortSetup {
            vps,
            vcs: vcs.into_iter().map(Some).collect(),
            hosts: None,
            trunk: TRUNK,
            delay: Duration::from_millis(1),
            warmup: Time::ZERO,
        },
    )
}

/// A policer with a tolerance of a few nanoseconds (cells arrive on a nanosecond clock).
fn gcra(pcr: Rate, scr: Option<Rate>, mbs: Option<u64>) -> Gcra {
    let spec = GcraSpec {
        pcr,
        cdvt: Duration::from_nanos(10),
        scr,
        mbs,
        tagging: true,
        mode: ColorMode::Blind,
    };
    assert!(spec.validate().is_ok());
    Gcra::new(&spec)
}

fn packet(store: &mut PacketStore, flow: u32, size: u32) -> PacketId {
    store.insert((flow, size))
}

/// Offer a frame of `size` bytes on `flow` at `at`.
fn offer(p: &mut CellPort, store: &mut PacketStore, at: Time, flow: u32, size: u32) -> PacketId {
    let id = packet(store, flow, size);
    assert!(p.offer(at, id, flow, size, store));
    id
}

/// Run the port to `end`, waking it when it asks; returns the frames that arrived, with times.
fn drain(p: &mut CellPort, store: &mut PacketStore, end: Time) -> Vec<(Time, PacketId)> {
    let mut arrived = Vec::new();
    loop {
        let next = [p.next_wake(), p.next_arrival()]
            .into_iter()
            .flatten()
            .min()
            .filter(|&t| t <= end);
        let Some(now) = next else { break };
        p.advance(now, store);
        while let Some(id) = p.poll_arrival(now) {
            store.remove(id);
            arrived.push((now, id));
        }
    }
    arrived
}

fn cell_time_ns(cells: u64) -> u64 {
    // Exactly: cells x 424 bits at 149.76 Mbit/s, rounded up to the nanosecond.
    (u128::from(cells) * 424_000_000_000).div_ceil(149_760_000) as u64
}

#[test]
fn a_frame_of_172_cells_arrives_when_its_last_cell_does() {
    let mut store = PacketStore::new();
    let mut p = port(&spec(), vec![(Phb::Df, None)], vec![0]);
    let id = offer(&mut p, &mut store, Time::ZERO, 0, 8192 + 40);
    let arrived = drain(&mut p, &mut store, Time::from_nanos(10_000_000));
    // 003 §4.1 (c): 172 cells. The host sends them back to back at the line's rate (the trunk's),
    // each crosses the line (one cell time) and the trunk (one more): the last ends 173 cell
    // times after the first left, then the trunk's delay.
    assert_eq!(p.cells_sent, 172);
    let expected = cell_time_ns(173) + 1_000_000;
    assert_eq!(arrived.len(), 1);
    assert_eq!(arrived[0].1, id);
    // Each stage (host, line, trunk) keeps exact time and rounds up to the nanosecond.
    let at = arrived[0].0.as_nanos();
    assert!(at.abs_diff(expected) <= 3, "{at} ns against {expected}");
    assert_eq!(p.vp_stats()[0].frames_delivered, 1);
    assert_eq!(p.vp_stats()[0].cells, 172);
}

#[test]
fn shaping_spaces_a_vcs_cells_at_its_peak_rate() {
    let mut s = spec();
    s.shaping = Some(Rate::from_kbps(35_000));
    let mut store = PacketStore::new();
    let mut p = port(&s, vec![(Phb::Df, None)], vec![0]);
    offer(&mut p, &mut store, Time::ZERO, 0, 8232);
    let arrived = drain(&mut p, &mut store, Time::from_nanos(100_000_000));
    // 003 §3.2: 35 Mbit/s per VC; the last of 172 cells leaves the host 171 cell times at
    // 35 Mbit/s after the first, then one cell time on the line and one on the trunk.
    let last = (171u128 * 424_000_000_000).div_ceil(35_000_000) as u64;
    let expected = last + 2 * cell_time_ns(1);
    let at = arrived[0].0 - Duration::from_millis(1);
    assert!(
        at.as_nanos().abs_diff(expected) <= 2,
        "{at:?} against {expected} ns"
    );
}

#[test]
fn a_cell_lost_loses_its_frame_while_its_other_cells_still_use_the_trunk() {
    // The UPC of the VP allows half the line's rate with no tolerance: every second cell of a
    // back-to-back train is discarded.
    let mut store = PacketStore::new();
    let upc = gcra(Rate::from_kbps(74_880), None, None);
    let mut p = port(&spec(), vec![(Phb::Df, Some(upc))], vec![0]);
    offer(&mut p, &mut store, Time::ZERO, 0, 8232);
    let arrived = drain(&mut p, &mut store, Time::from_nanos(10_000_000));
    assert!(arrived.is_empty(), "the frame lost cells");
    assert_eq!(p.vp_stats()[0].policed, 86);
    assert_eq!(p.cells_sent, 86, "the cells that passed crossed the trunk");
    assert_eq!(p.vp_stats()[0].frames_lost, 1);
    assert_eq!(store.live(), 0, "the lost frame left the store");
}

#[test]
fn a_lost_last_cell_merges_its_frame_into_the_next_one_and_both_are_lost() {
    // Frame A (2 cells: 33 bytes + 16 of LLC/SNAP and trailer) loses its last cell to the UPC;
    // frame B (1 cell), sent later, arrives whole but is reassembled with A's first cell.
    let mut store = PacketStore::new();
    let upc = gcra(Rate::from_kbps(74_880), None, None);
    let mut p = port(&spec(), vec![(Phb::Df, Some(upc))], vec![0]);
    offer(&mut p, &mut store, Time::ZERO, 0, 33);
    let later = Time::from_nanos(1_000_000);
    drain(&mut p, &mut store, later);
    offer(&mut p, &mut store, later, 0, 20);
    let arrived = drain(&mut p, &mut store, Time::from_nanos(10_000_000));
    assert!(arrived.is_empty(), "AAL5 cannot tell the frames apart");
    assert_eq!(p.cells_sent, 2);
    assert_eq!(p.vp_stats()[0].policed, 1);
    assert_eq!(p.vp_stats()[0].frames_lost, 2);
    assert_eq!(store.live(), 0);
    // The next frame starts clean.
    let id = offer(&mut p, &mut store, Time::from_nanos(10_000_000), 0, 20);
    let arrived = drain(&mut p, &mut store, Time::from_nanos(20_000_000));
    assert_eq!(arrived.iter().map(|a| a.1).collect::<Vec<_>>(), vec![id]);
}

/// Four VPs of `phbs`, each with one VC sending `frames` frames of 8232 bytes at once: four
/// lines at the trunk's rate into one trunk.
fn overload(s: &AtmSpec, vps: Vec<(Phb, Option<Gcra>)>, frames: u32) -> (CellPort, PacketStore) {
    let n = vps.len() as u32;
    let mut store = PacketStore::new();
    let mut p = port(s, vps, (0..n).collect());
    for _ in 0..frames {
        for flow in 0..n {
            offer(&mut p, &mut store, Time::ZERO, flow, 8232);
        }
    }
    (p, store)
}

#[test]
fn scd_refuses_clp1_cells_above_its_threshold_and_keeps_the_rest_for_clp0() {
    let mut s = spec();
    s.buffer = 100;
    s.scd = 0.5;
    // A sustainable rate far below what each VP sends: after its burst, its CLP=0 cells are
    // tagged CLP=1.
    let tagging = || {
        let g = gcra(TRUNK, Some(Rate::from_kbps(1_000)), Some(10));
        (Phb::Af, Some(g))
    };
    let (mut p, mut store) = overload(&s, (0..4).map(|_| tagging()).collect(), 4);
    let mut most = 0;
    let mut at = Time::ZERO;
    while at < Time::from_nanos(30_000_000) {
        at += Duration::from_micros(3);
        p.advance(at, &mut store);
        most = most.max(p.held(Phb::Af));
    }
    let b = p.buffer_stats(Phb::Af);
    assert!(b.clp1.edrops > 500, "{b:?}");
    assert_eq!(b.clp1.ldrops, 0);
    assert_eq!(b.clp0.edrops + b.clp0.ldrops, 0, "{b:?}");
    // 003 §2.2: CLP=1 cells stop at 50 cells; CLP=0 cells, a few per VP, never reach the limit.
    assert!((50..=60).contains(&most), "held at most {most}");
    assert!(p.vp_stats()[0].tagged > 500, "{:?}", p.vp_stats()[0]);
}

#[test]
fn the_services_share_the_trunk_as_they_say() {
    let delivered = |service: Service| {
        let mut s = spec();
        s.service = service;
        let vps = vec![
            (Phb::Af, None),
            (Phb::Af, None),
            (Phb::Df, None),
            (Phb::Df, None),
        ];
        let (mut p, mut store) = overload(&s, vps, 40);
        // 160 frames of 172 cells: the trunk needs 78 ms; look at the first 30.
        drain(&mut p, &mut store, Time::from_nanos(30_000_000));
        let v = p.vp_stats();
        (
            v[0].frames_delivered + v[1].frames_delivered,
            v[2].frames_delivered + v[3].frames_delivered,
        )
    };
    let (af, df) = delivered(Service::Priority);
    assert_eq!(df, 0, "AF is always backlogged: DF waits ({af} AF frames)");
    assert!(af >= 55);
    let (af, df) = delivered(Service::Fifo);
    assert!(af.abs_diff(df) <= 2, "arrival order: {af} and {df}");
    let (af, df) = delivered(Service::Weighted { af: 3, df: 1 });
    let ratio = af as f64 / df as f64;
    assert!((2.7..=3.3).contains(&ratio), "{af} and {df}");
}

#[test]
fn epd_keeps_only_whole_frames_on_the_trunk() {
    let run = |epd: Option<f64>| {
        let mut s = spec();
        s.buffer = 1000;
        s.epd = epd;
        let (mut p, mut store) = overload(&s, (0..4).map(|_| (Phb::Df, None)).collect(), 20);
        drain(&mut p, &mut store, Time::from_nanos(200_000_000));
        let delivered: u64 = p.vp_stats().iter().map(|v| v.frames_delivered).sum();
        let lost: u64 = p.vp_stats().iter().map(|v| v.frames_lost).sum();
        assert_eq!(delivered + lost, 80);
        assert_eq!(store.live(), 0);
        (p.cells_sent, delivered)
    };
    // Without EPD the full buffer cuts frames: the trunk carries cells of frames that are lost.
    let (cells, delivered) = run(None);
    assert!(cells > 172 * delivered, "{cells} cells, {delivered} frames");
    // With EPD at half the buffer, at most four frames in progress (688 cells) fit above it:
    // the buffer never overflows and every cell carried belongs to a frame that arrives.
    let (cells, delivered) = run(Some(0.5));
    assert_eq!(cells, 172 * delivered);
    assert!(delivered < 80);
}

#[test]
fn ppd_discards_the_rest_of_a_damaged_frame_but_its_last_cell() {
    // One VC whose line runs at twice the trunk's rate into a 2-cell buffer: an 8-cell frame
    // overflows it every other cell from its fifth on.
    let run = |ppd: bool| {
        let mut s = spec();
        s.buffer = 2;
        s.ppd = ppd;
        s.line = Some(Rate::from_kbps(2 * 149_760));
        s.shaping = s.line;
        let mut store = PacketStore::new();
        let mut p = port(&s, vec![(Phb::Df, None)], vec![0]);
        offer(&mut p, &mut store, Time::ZERO, 0, 8 * 48 - 16);
        let arrived = drain(&mut p, &mut store, Time::from_nanos(5_000_000));
        assert!(arrived.is_empty());
        // The frame after it arrives whole only if the damaged frame's last cell closed it.
        let next = offer(&mut p, &mut store, Time::from_nanos(5_000_000), 0, 20);
        let arrived = drain(&mut p, &mut store, Time::from_nanos(10_000_000));
        assert_eq!(store.live(), 0);
        let c = p.buffer_stats(Phb::Df).clp0;
        (
            p.cells_sent,
            c.ldrops,
            c.edrops,
            arrived.first().map(|a| a.1) == Some(next),
        )
    };
    // Without PPD the full buffer takes the frame's last cell too: the receiver joins the next
    // frame to it and loses both.
    assert_eq!(run(false), (6 + 1, 2, 0, false));
    // With PPD the cell after the first loss is discarded early, which leaves room for the last
    // one: the damaged frame ends where it should and the next arrives.
    assert_eq!(run(true), (6 + 1, 1, 1, true));
}

#[test]
fn probes_measure_the_queueing_of_their_vp() {
    let mut s = spec();
    s.probe = Some(ProbeSpec {
        size: 2048,
        interval: Duration::from_millis(10),
    });
    // An empty port: the probes queue for nothing.
    let mut store = PacketStore::new();
    let mut p = port(&s, vec![(Phb::Af, None), (Phb::Df, None)], vec![]);
    drain(&mut p, &mut store, Time::from_nanos(95_000_000));
    for v in p.vp_stats() {
        assert_eq!((v.probes, v.probes_lost), (10, 0));
        assert!(v.probe_delay_max_ns < cell_time_ns(1), "{v:?}");
    }
    // Behind a DF backlog, with priority service: the DF probe waits, the AF one does not.
    let vps = vec![(Phb::Af, None), (Phb::Df, None), (Phb::Df, None)];
    let mut store = PacketStore::new();
    let mut p = port(&s, vps, vec![1, 2]);
    for _ in 0..20 {
        for flow in 0..2 {
            offer(&mut p, &mut store, Time::ZERO, flow, 8232);
        }
    }
    drain(&mut p, &mut store, Time::from_nanos(45_000_000));
    let v = p.vp_stats();
    assert!(v[0].probe_delay_max_ns < cell_time_ns(2), "{:?}", v[0]);
    assert!(v[1].probe_delay_max_ns > 5_000_000, "{:?}", v[1]);
}

#[test]
fn bad_settings_name_their_key() {
    let key = |s: &AtmSpec| match s.validate("bottleneck.atm", TRUNK) {
        Err(e) => e.key,
        other => panic!("{other:?}"),
    };
    for scd in [0.0, 1.01, f64::NAN] {
        let mut s = spec();
        s.scd = scd;
        assert_eq!(key(&s), "bottleneck.atm.scd");
    }
    let mut s = spec();
    s.buffer = 0;
    assert_eq!(key(&s), "bottleneck.atm.buffer");
    let mut s = spec();
    s.epd = Some(0.0);
    assert_eq!(key(&s), "bottleneck.atm.epd");
    let mut s = spec();
    s.shaping = Some(Rate::from_mbps(200));
    assert_eq!(key(&s), "bottleneck.atm.shaping");
    let mut s = spec();
    s.service = Service::Weighted { af: 0, df: 1 };
    assert_eq!(key(&s), "bottleneck.atm.service");
    assert!(spec().validate("bottleneck.atm", TRUNK).is_ok());
}
