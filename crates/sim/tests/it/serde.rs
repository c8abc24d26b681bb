//! Every spec type travels as JSON and comes back equal (what the Python and Ray side rely on).

use crate::common::{cbr, newreno, paper_rio};
use qstp_dataplane::color::Color;
use qstp_dataplane::loss::{BernoulliSpec, GilbertElliottSpec, LossSpec};
use qstp_dataplane::marker::{
    ColorMode, MarkerSpec, SrtcmSpec, TokenBucketSpec, TrtcmSpec, Tsw2Spec, Tsw3Spec,
};
use qstp_dataplane::queue::{CbqClass, CbqSpec, QueueSpec, RedParams, RedSpec, RioMode, RioSpec};
use qstp_proto::{Config, Duration, Rate};
use qstp_sim::spec::source::{OnOffSpec, Protocol, QstpSpec};
use qstp_sim::spec::*;

fn round_trip<T>(value: &T) -> T
where
    T: serde::Serialize + serde::de::DeserializeOwned,
{
    serde_json::from_str(&serde_json::to_string(value).unwrap()).unwrap()
}

#[test]
fn every_kind_of_queue_marker_loss_and_source_round_trips() {
    let k = Rate::from_kbps;
    let ms = Duration::from_millis;
    let curve = RedParams {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
    };
    let queues = [
        QueueSpec::drop_tail(50),
        QueueSpec::Red(RedSpec {
            limit: 50,
            params: curve,
            weight: 0.002,
            wait: false,
            ecn: false,
        }),
        paper_rio(),
        QueueSpec::Rio(RioSpec {
            limit: 50,
            in_profile: curve,
            out_profile: curve,
            middle: Some(curve),
            weight: 0.1 + 0.2,
            mode: RioMode::Decoupled,
            ecn: false,
        }),
        QueueSpec::Cbq(CbqSpec {
            classes: vec![CbqClass {
                name: "be".into(),
                rate: Rate::ZERO,
                borrow: true,
                groups: vec!["a".into()],
                limit: 50,
            }],
        }),
    ];
    let markers = [
        MarkerSpec::TokenBucket(TokenBucketSpec {
            rate: k(500),
            bucket: 10_000,
        }),
        MarkerSpec::Srtcm(SrtcmSpec {
            cir: k(100),
            cbs: 3000,
            ebs: 0,
            mode: ColorMode::Blind,
        }),
        MarkerSpec::Trtcm(TrtcmSpec {
            cir: k(100),
            cbs: 3000,
            pir: k(200),
            pbs: 3000,
            mode: ColorMode::Aware,
        }),
        MarkerSpec::Tsw2(Tsw2Spec {
            cir: k(100),
            window: ms(1000),
        }),
        MarkerSpec::Tsw3(Tsw3Spec {
            cir: k(100),
            pir: k(200),
            window: ms(1000),
        }),
    ];
    let losses = [
        LossSpec::Bernoulli(BernoulliSpec { p: 0.01 }),
        LossSpec::GilbertElliott(GilbertElliottSpec {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        }),
    ];
    let protocols = [
        newreno(),
        cbr(k(300)),
        Protocol::OnOff(OnOffSpec {
            schedule: vec![(Duration::ZERO, k(300)), (ms(60_000), k(1000))],
            mean_on: ms(1000),
            mean_off: ms(500),
        }),
        Protocol::Qstp(QstpSpec {
            name: "qstp".into(),
            config: Config::qstp(k(250)),
            message_rate: None,
        }),
    ];
    for q in &queues {
        assert_eq!(&round_trip(q), q);
    }
    for m in &markers {
        assert_eq!(&round_trip(m), m);
    }
    for l in &losses {
        assert_eq!(&round_trip(l), l);
    }
    for color in [Color::Green, Color::Yellow, Color::Red] {
        assert_eq!(round_trip(&color), color);
    }
    let mut spec: SimSpec = SimSpec::dumbbell(Rate::from_mbps(10), ms(5), 50, 20);
    spec.bottleneck_mut().unwrap().loss = Some(losses[1]);
    for (i, protocol) in protocols.into_iter().enumerate() {
        let mut g = GroupSpec::new(&format!("g{i}"), protocol, 2, ms(40));
        g.marker = Some(markers[i % markers.len()]);
        g.access = Some(AccessSpec {
            rate: Rate::from_mbps(100),
            delay: ms(1),
        });
        g.start_spread = Some(ms(7));
        spec.groups.push(g);
    }
    assert_eq!(round_trip(&spec), spec);
    // The tags are the scenario format's kind names.
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["topology"]["kind"], "dumbbell");
    assert_eq!(
        json["topology"]["bottleneck"]["loss"]["kind"],
        "gilbert-elliott"
    );
    assert_eq!(json["groups"][2]["protocol"]["kind"], "onoff");
    assert_eq!(json["groups"][0]["marker"]["kind"], "token-bucket");
    // The same network written as a graph travels too.
    let bottleneck = spec.bottleneck().unwrap().clone();
    let graph = qstp_sim::topology::dumbbell_graph(&spec, &bottleneck).unwrap();
    spec.topology = Topology::Graph(graph);
    assert_eq!(round_trip(&spec), spec);
    let json = serde_json::to_value(&spec).unwrap();
    assert_eq!(json["topology"]["kind"], "graph");
    assert_eq!(json["topology"]["nodes"][2]["kind"], "router");
}

#[test]
fn a_specs_kind_is_the_name_its_json_carries() {
    let specs: Vec<QueueSpec> = vec![QueueSpec::drop_tail(5), paper_rio()];
    for spec in &specs {
        let json = serde_json::to_value(spec).unwrap();
        assert_eq!(json["kind"], spec.kind());
        assert!(QueueSpec::KINDS
            .iter()
            .any(|(name, _)| *name == spec.kind()));
    }
    let m = MarkerSpec::Tsw2(Tsw2Spec {
        cir: Rate::from_kbps(500),
        window: Duration::from_secs(1),
    });
    assert_eq!(serde_json::to_value(m).unwrap()["kind"], "tsw2");
    let l = LossSpec::GilbertElliott(GilbertElliottSpec {
        p_good_to_bad: 0.01,
        p_bad_to_good: 0.5,
        loss_good: 0.0,
        loss_bad: 1.0,
    });
    assert_eq!(serde_json::to_value(l).unwrap()["kind"], l.kind());
}

#[test]
fn a_source_travels_flat_tagged_by_its_kind() {
    // The registry's newtype variants serialise as the struct variants they replaced did: the
    // kind's fields beside `kind`, so JSON written before the registry still reads.
    let tcp = GroupSpec::new("t", newreno(), 1, Duration::from_millis(40));
    let json = serde_json::to_value(&tcp.protocol).unwrap();
    assert_eq!(json["kind"], "tcp");
    assert_eq!(json["congestion"]["name"], "newreno");
    assert!(json["options"].is_object());
    let onoff = Protocol::OnOff(OnOffSpec {
        schedule: vec![(Duration::ZERO, Rate::from_kbps(1))],
        mean_on: Duration::from_secs(1),
        mean_off: Duration::from_secs(2),
    });
    let json = serde_json::to_value(&onoff).unwrap();
    assert_eq!(json["kind"], "onoff");
    assert!(json["mean_on"].is_object() || json["mean_on"].is_number());
    assert_eq!(serde_json::from_value::<Protocol>(json).unwrap(), onoff);
    assert_eq!(onoff.get().label(), "onoff");
    assert_eq!(
        qstp_sim::spec::source::names(),
        ["tcp", "tfrc", "tfrc-sack", "gtfrc", "qstp", "cbr", "onoff"]
    );
}
