//! Tests of CBQ: rates, borrowing, classification, and its spec.
use super::super::test_packet::*;
use super::*;
use qstp_proto::Duration;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

const LINK: Rate = Rate::from_mbps(1);

fn class(name: &str, kbps: u64, borrow: bool, groups: &[&str]) -> CbqClass {
    CbqClass {
        name: name.into(),
        rate: Rate::from_kbps(kbps),
        borrow,
        groups: groups.iter().map(|g| g.to_string()).collect(),
        limit: 50,
    }
}

fn names(n: &[&str]) -> Vec<String> {
    n.iter().map(|s| s.to_string()).collect()
}

/// Run a 1 Mbit/s link for `secs` seconds with the groups in `backlogged` kept saturated;
/// returns the bytes each group sent.
fn run(q: &mut Cbq<Pkt>, backlogged: &[usize], groups: usize, secs: u64) -> Vec<u64> {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut sent = vec![0u64; groups];
    let mut now = Time::ZERO;
    let end = Time::ZERO + Duration::from_secs(secs);
    let mut id = 0;
    while now < end {
        for &g in backlogged {
            while q
                .enqueue(
                    now,
                    Pkt {
                        id,
                        size: 1000,
                        color: Color::Green,
                        group: g,
                    },
                    &mut rng,
                )
                .is_ok()
            {
                id += 1;
            }
        }
        match q.dequeue(now, LINK) {
            Dequeue::Packet(p) => {
                sent[p.group] += p.size as u64;
                now += LINK.transmit_time(p.size);
            }
            Dequeue::Wait(t) => {
                assert!(t > now, "wait must move time forward");
                now = t;
            }
            Dequeue::Empty => now += Duration::from_millis(1),
        }
    }
    sent
}

fn kbps(bytes: u64, secs: u64) -> f64 {
    bytes as f64 * 8.0 / secs as f64 / 1000.0
}

#[test]
fn saturated_classes_get_their_guaranteed_rates() {
    let mut q = Cbq::new(
        &[
            class("qstp", 300, false, &["a"]),
            class("be", 700, true, &["b"]),
        ],
        &names(&["a", "b"]),
    );
    let sent = run(&mut q, &[0, 1], 2, 60);
    assert!(
        (kbps(sent[0], 60) - 300.0).abs() < 5.0,
        "{}",
        kbps(sent[0], 60)
    );
    assert!(
        (kbps(sent[1], 60) - 700.0).abs() < 5.0,
        "{}",
        kbps(sent[1], 60)
    );
}

#[test]
fn a_borrowing_class_takes_the_idle_capacity() {
    let mut q = Cbq::new(
        &[
            class("qstp", 300, false, &["a"]),
            class("be", 700, true, &["b"]),
        ],
        &names(&["a", "b"]),
    );
    let sent = run(&mut q, &[1], 2, 30);
    assert_eq!(sent[0], 0);
    assert!(kbps(sent[1], 30) > 995.0, "{}", kbps(sent[1], 30));
}

#[test]
fn a_class_that_may_not_borrow_waits_at_its_rate() {
    let mut q = Cbq::new(
        &[
            class("qstp", 300, false, &["a"]),
            class("be", 700, true, &["b"]),
        ],
        &names(&["a", "b"]),
    );
    let sent = run(&mut q, &[0], 2, 30);
    // The initial burst allowance adds at most 3000 bytes.
    let rate = kbps(sent[0], 30);
    assert!((rate - 300.0).abs() < 2.0, "{rate}");
    // And the wait it announces is exactly when its balance recovers.
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut q = Cbq::new(&[class("only", 8, false, &["a"])], &names(&["a"]));
    for id in 0..5 {
        q.enqueue(
            Time::ZERO,
            Pkt {
                id,
                size: 1000,
                color: Color::Red,
                group: 0,
            },
            &mut rng,
        )
        .unwrap();
    }
    // Balance 3000 B: packets at 3000 -> 2000 -> 1000 -> 0 -> -1000 go, then a 1000 B debt at
    // 1000 B/s takes exactly 1 s.
    for _ in 0..4 {
        assert!(matches!(q.dequeue(Time::ZERO, LINK), Dequeue::Packet(_)));
    }
    assert_eq!(
        q.dequeue(Time::ZERO, LINK),
        Dequeue::Wait(Time::ZERO + Duration::from_secs(1))
    );
    assert!(matches!(
        q.dequeue(Time::ZERO + Duration::from_secs(1), LINK),
        Dequeue::Packet(_)
    ));
}

#[test]
fn two_borrowing_classes_share_the_spare_capacity() {
    let mut q = Cbq::new(
        &[class("a", 200, true, &["a"]), class("b", 200, true, &["b"])],
        &names(&["a", "b"]),
    );
    let sent = run(&mut q, &[0, 1], 2, 30);
    assert!((kbps(sent[0], 30) - 500.0).abs() < 10.0, "{sent:?}");
    assert!((kbps(sent[1], 30) - 500.0).abs() < 10.0, "{sent:?}");
}

#[test]
fn unlisted_groups_go_to_the_last_class_and_counters_are_per_class() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut q = Cbq::new(
        &[
            class("gold", 300, false, &["a"]),
            class("be", 700, true, &[]),
        ],
        &names(&["a", "b", "c"]),
    );
    assert_eq!(
        (q.class_of(0), q.class_of(1), q.class_of(2), q.class_of(99)),
        (0, 1, 1, 1)
    );
    for (id, (group, color)) in [(0, Color::Green), (1, Color::Red), (2, Color::Red)]
        .into_iter()
        .enumerate()
    {
        q.enqueue(
            Time::ZERO,
            Pkt {
                id: id as u32,
                size: 1000,
                color,
                group,
            },
            &mut rng,
        )
        .unwrap();
    }
    let counters = q.class_counters();
    assert_eq!(counters.len(), 6);
    let find = |name: &str, color| {
        counters
            .iter()
            .find(|(n, c, _)| n == name && *c == color)
            .unwrap()
            .2
            .packets
    };
    assert_eq!(find("gold", Color::Green), 1);
    assert_eq!(find("be", Color::Red), 2);
    assert_eq!(find("gold", Color::Red), 0);
    assert_eq!(q.counters(Color::Red).packets, 2);
    assert_eq!(q.len(), 3);
}

#[test]
fn extreme_rates_and_times_do_not_overflow() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut fast = class("fast", 0, false, &["a"]);
    fast.rate = Rate::MAX;
    let mut q = Cbq::new(&[fast], &names(&["a"]));
    q.enqueue(
        Time::ZERO,
        Pkt {
            id: 0,
            size: 1000,
            color: Color::Green,
            group: 0,
        },
        &mut rng,
    )
    .unwrap();
    assert!(matches!(q.dequeue(Time::ZERO, LINK), Dequeue::Packet(_)));
    q.enqueue(
        Time::MAX,
        Pkt {
            id: 1,
            size: 1000,
            color: Color::Green,
            group: 0,
        },
        &mut rng,
    )
    .unwrap();
    assert!(matches!(q.dequeue(Time::MAX, LINK), Dequeue::Packet(_)));
}

#[test]
fn each_class_overflows_on_its_own_limit() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    let mut small = class("small", 300, true, &["a"]);
    small.limit = 2;
    let mut q = Cbq::new(&[small, class("be", 700, true, &[])], &names(&["a", "b"]));
    for id in 0..4 {
        let _ = q.enqueue(
            Time::ZERO,
            Pkt {
                id,
                size: 1000,
                color: Color::Green,
                group: 0,
            },
            &mut rng,
        );
    }
    assert!(q
        .enqueue(
            Time::ZERO,
            Pkt {
                id: 9,
                size: 1000,
                color: Color::Green,
                group: 1
            },
            &mut rng
        )
        .is_ok());
    let small = q.class_counters()[0].2;
    assert_eq!((small.packets, small.ldrops), (4, 2));
}

/// A packet a real forwarder would see: a DSCP, no group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Marked {
    dscp: u8,
}

impl Queued for Marked {
    fn size(&self) -> usize {
        1000
    }
    fn color(&self) -> Color {
        Color::Green
    }
    fn group(&self) -> usize {
        0
    }
    fn meta(&self) -> PacketMeta {
        PacketMeta {
            dscp: self.dscp,
            ..PacketMeta::default()
        }
    }
}

#[test]
fn a_dscp_classifier_sorts_packets_that_carry_no_group() {
    let mut rng = ChaCha8Rng::seed_from_u64(0);
    // EF (46) to class 0, AF11 (10) to class 1, the rest to class 7: beyond the classes, so
    // the last one.
    let classifier = Classifier::by_dscp(&[(46, 0), (10, 1)], 7);
    let mut q = Cbq::with_classifier(
        &[
            class("ef", 300, false, &[]),
            class("af", 300, true, &[]),
            class("be", 400, true, &[]),
        ],
        classifier,
    );
    for dscp in [46, 10, 10, 0, 63] {
        q.enqueue(Time::ZERO, Marked { dscp }, &mut rng).unwrap();
    }
    let lengths: Vec<usize> = q.class_lengths().iter().map(|c| c.1).collect();
    assert_eq!(lengths, vec![1, 2, 2]);
    assert_eq!(q.class_index(&Marked { dscp: 46 }.meta()), 0);
    // The group does not matter: every Marked packet says group 0.
    assert_eq!(q.class_of(0), 2, "no DSCP: best effort");
}
