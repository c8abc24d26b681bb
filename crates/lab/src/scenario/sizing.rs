//! `limit = "auto"`: a bottleneck queue sized from the flows that cross it.
//!
//! Free & Stunts paper (§IV) sizes its RED bottleneck as RTT x C / sqrt(m)
//! (Appenzeller et al.'s rule for m desynchronised flows), with B_min a quarter of it and
//! B_max = B_min + 3 B_min. The paper leaves RED's other settings to "encourage the stability of
//! the average queue size"; the lab takes ns-2's defaults, the simulator the paper used: max_p
//! 0.1 (ns-2 `linterm_` 10) and the usual averaging weight 0.002.

use super::fields::{FieldResult, Fields};
use qstp_proto::{Duration, Rate};
use qstp_sim::GroupSpec;
use toml::Value;

/// Drop probability at B_max of an auto-sized RED queue (ns-2's `linterm_` = 10).
pub(crate) const AUTO_MAX_P: f64 = 0.1;

/// Fewest packets an auto-sized queue holds (B_min is then one packet).
const MIN_AUTO_LIMIT: u64 = 4;

/// The flows of a dumbbell: how many, and their mean base round trip.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Crossing {
    /// m, every flow of every group.
    pub flows: u64,
    /// Mean base RTT over the flows.
    pub mean_rtt: Duration,
    /// Bytes of a packet, to count the capacity in packets.
    pub packet_size: usize,
}

impl Crossing {
    /// The flows of `groups` (a dumbbell's: each group has its `rtt`).
    pub(crate) fn of(groups: &[GroupSpec], packet_size: usize) -> Crossing {
        let flows: u64 = groups.iter().map(|g| u64::from(g.flows)).sum();
        let rtt_sum: f64 = groups
            .iter()
            .map(|g| g.rtt.as_secs_f64() * f64::from(g.flows))
            .sum();
        Crossing {
            flows,
            mean_rtt: Duration::from_secs_f64(rtt_sum / flows.max(1) as f64),
            packet_size,
        }
    }

    /// RTT x C / sqrt(m), packets (Free & Stunts §IV), at least [`MIN_AUTO_LIMIT`].
    pub(crate) fn limit(&self, rate: Rate) -> u64 {
        let packets_per_s = rate.bps() as f64 / (8.0 * self.packet_size.max(1) as f64);
        let bdp = self.mean_rtt.as_secs_f64() * packets_per_s;
        ((bdp / (self.flows.max(1) as f64).sqrt()).round() as u64).max(MIN_AUTO_LIMIT)
    }
}

/// If the queue table `q` says `limit = "auto"`, write the numbers in its place: the limit, and
/// for RED without a `curve` of its own, curve = [limit / 4, limit, 0.1] (B_max = B_min + 3 B_min).
pub(crate) fn resolve_auto(
    q: &mut Fields,
    rate: Rate,
    crossing: Option<&Crossing>,
) -> FieldResult<()> {
    if q.peek("limit").and_then(Value::as_str) != Some("auto") {
        return Ok(());
    }
    let Some(crossing) = crossing else {
        return Err(q.error(
            "limit",
            "\"auto\" sizes a dumbbell's [bottleneck] from its groups' flows and rtt; give \
             [[link]] queues a number",
        ));
    };
    let kind = q
        .peek("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if !matches!(kind.as_str(), "red" | "droptail") {
        return Err(q.error(
            "limit",
            format!("\"auto\" sizes red and droptail queues, not '{kind}'"),
        ));
    }
    let limit = crossing.limit(rate);
    q.set("limit", Value::Integer(limit as i64));
    if kind == "red" && !q.has("curve") {
        let b_min = limit as f64 / 4.0;
        let curve = [b_min, 4.0 * b_min, AUTO_MAX_P];
        q.set(
            "curve",
            Value::Array(curve.iter().map(|&v| Value::Float(v)).collect()),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Overrides};
    use qstp_dataplane::queue::QueueSpec;
    use qstp_sim::Topology;

    fn bottleneck_queue(text: &str) -> Result<QueueSpec, String> {
        let plan = parse(text, "t.toml", &Overrides::default()).map_err(|e| e.to_string())?;
        match &plan.base().topology {
            Topology::Dumbbell { bottleneck } => Ok(bottleneck.queue.clone()),
            Topology::Graph(_) => unreachable!("a dumbbell"),
        }
    }

    const GROUPS: &str =
        "[[group]]\nname = \"A\"\nprotocol = \"tcp\"\nflows = 9\nrtt = \"100ms\"\n\
        [[group]]\nname = \"B\"\nprotocol = \"tcp\"\nflows = 7\nrtt = \"100ms\"\n";

    #[test]
    fn auto_red_follows_the_free_and_stunts_rule() {
        // 40 Mbit/s of 1000-byte packets is 5000 packets/s; x 100 ms = 500; / sqrt(16) = 125.
        let text = format!(
            "name = \"t\"\nduration = \"10s\"\npacket_size = 1000\n[bottleneck]\nrate = \"40M\"\n\
             queue = {{ kind = \"red\", limit = \"auto\" }}\n{GROUPS}"
        );
        let QueueSpec::Red(red) = bottleneck_queue(&text).unwrap() else {
            panic!("a red queue")
        };
        assert_eq!(red.limit, 125);
        assert_eq!(red.params.min_th, 31.25);
        assert_eq!(red.params.max_th, 125.0);
        assert_eq!(red.params.max_p, 0.1);
        // A curve of the file's own is kept; the limit is still sized.
        let text = text.replace("limit = \"auto\"", "limit = \"auto\", curve = [5, 50, 0.2]");
        let QueueSpec::Red(red) = bottleneck_queue(&text).unwrap() else {
            panic!("a red queue")
        };
        assert_eq!(
            (red.limit, red.params.max_th, red.params.max_p),
            (125, 50.0, 0.2)
        );
    }

    #[test]
    fn auto_is_refused_where_it_has_no_meaning() {
        let text = format!(
            "name = \"t\"\nduration = \"10s\"\n[bottleneck]\nrate = \"40M\"\n\
             queue = {{ kind = \"rio\", limit = \"auto\", in = [20, 40, 0.02], out = [10, 20, 0.1] }}\n{GROUPS}"
        );
        let err = bottleneck_queue(&text).unwrap_err();
        assert!(err.contains("bottleneck.queue.limit"), "{err}");
        assert!(err.contains("not 'rio'"), "{err}");
    }
}
