//! The `[testbed]` table: how `qstp testbed` runs the scenario on real hosts. `qstp run` reads
//! and checks it too, and otherwise ignores it, so that one file serves both.
//!
//! `classify` says how the testbed's router finds the edge marker of a packet: `"flow"` (the
//! default) by its addresses, which name its flow and so its group; `"dscp"` by the DiffServ code
//! point its sender set (RFC 2474 §3), as a DiffServ edge router that trusts its customers' marks
//! would. `dscp = { A = "AF21", B = "EF" }` gives the code point each group's senders set; in
//! `"dscp"` mode a group it does not name gets CS1, CS2, .. by its place among the groups.
//!
//! `sysctl = { "net.ipv4.tcp_recovery" = 0, .. }` sets more sysctls in every host's namespace,
//! after the testbed's own (SACK, timestamps, ECN): a way to switch a kernel TCP feature off and
//! see what it does. Only the network namespace's own settings (`net.ipv4.*`, `net.core.*`)
//! are taken: any other would change the whole machine.

use super::fields::{FieldResult, Fields};
use qstp_dataplane::classify::{check_group_dscps, DscpConflict};
use qstp_sim::GroupSpec;
use toml::Value;

/// How the testbed's router finds a packet's edge marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Classify {
    /// By the packet's addresses: its flow, and so its group.
    #[default]
    Flow,
    /// By its DSCP: the group whose senders set that code point.
    Dscp,
}

impl Classify {
    /// The name the scenario file and summary.json use.
    pub fn name(self) -> &'static str {
        match self {
            Classify::Flow => "flow",
            Classify::Dscp => "dscp",
        }
    }
}

/// What `[testbed]` says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TestbedParams {
    /// How the router classifies.
    pub classify: Classify,
    /// Per group, in the scenario's order, the code point its senders set (`None`: they leave
    /// the sockets' default, CS0, and qstp-net its own choice).
    pub dscp: Vec<Option<u8>>,
    /// More sysctls for every host, `(key, value)` in the file's order of keys (sorted).
    pub sysctl: Vec<(String, String)>,
}

/// Check one `sysctl` entry: a key of the network namespace's own and a value of one line.
fn host_sysctl(key: &str, value: Value) -> Result<String, String> {
    let namespaced = ["net.ipv4.", "net.core."]
        .iter()
        .any(|p| key.strip_prefix(p).is_some_and(|rest| !rest.is_empty()));
    if !namespaced
        || !key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
    {
        return Err(
            "only a network namespace's own sysctls (net.ipv4.*, net.core.*) can be set".into(),
        );
    }
    let value = match value {
        Value::Integer(n) => n.to_string(),
        Value::String(s) if !s.is_empty() && !s.contains(['=', '\n', '\r']) => s,
        Value::String(_) => return Err("an empty value, or one with '=' or a line break".into()),
        other => {
            return Err(format!(
                "expected a number or a string, found {}",
                other.type_str()
            ))
        }
    };
    Ok(value)
}

/// Parse a DSCP: `AF11`..`AF43` (RFC 2597 §6: 8 class + 2 drop precedence), `EF` (46, RFC 3246
/// §2.3), `CS0`..`CS7` (8 class, RFC 2474 §4.2.2) in any case, or a number 0..63.
pub fn parse_dscp(text: &str) -> Result<u8, String> {
    let upper = text.trim().to_ascii_uppercase();
    let digits: Vec<u8> = upper
        .chars()
        .skip(2)
        .map(|c| c.to_digit(10).map_or(u8::MAX, |d| d as u8))
        .collect();
    let value = if upper == "EF" {
        Some(46)
    } else if upper.starts_with("AF") {
        match digits[..] {
            [c @ 1..=4, p @ 1..=3] => Some(8 * c + 2 * p),
            _ => None,
        }
    } else if upper.starts_with("CS") {
        match digits[..] {
            [c @ 0..=7] => Some(8 * c),
            _ => None,
        }
    } else {
        upper.parse::<u8>().ok().filter(|v| *v < 64)
    };
    value.ok_or_else(|| {
        format!("'{text}' is not a DSCP (use AF11..AF43, EF, CS0..CS7 or a number 0..63)")
    })
}

/// The table's values, the defaults where it gives none (or there is no table).
pub(crate) fn testbed(f: Option<Fields>, groups: &[GroupSpec]) -> FieldResult<TestbedParams> {
    let Some(mut f) = f else {
        return Ok(TestbedParams {
            classify: Classify::Flow,
            dscp: vec![None; groups.len()],
            sysctl: Vec::new(),
        });
    };
    let classify = match f.opt_str("classify")?.as_deref() {
        None | Some("flow") => Classify::Flow,
        Some("dscp") => Classify::Dscp,
        Some(other) => {
            return Err(f.error(
                "classify",
                format!("'{other}' is neither \"flow\" nor \"dscp\""),
            ))
        }
    };
    let mut dscp = vec![None; groups.len()];
    if let Some(mut t) = f.opt_table("dscp")? {
        for name in t.keys() {
            let Some(i) = groups.iter().position(|g| g.name == name) else {
                return Err(t.error(&name, "no group of that name"));
            };
            let value = match t.take(&name) {
                Some(Value::String(s)) => parse_dscp(&s),
                Some(Value::Integer(n)) => u8::try_from(n)
                    .ok()
                    .filter(|v| *v < 64)
                    .ok_or_else(|| format!("{n} is outside 0..63")),
                Some(other) => Err(format!(
                    "expected a code point name or number, found {}",
                    other.type_str()
                )),
                None => continue,
            };
            dscp[i] = Some(value.map_err(|reason| t.error(&name, reason))?);
        }
        t.finish()?;
    }
    if classify == Classify::Dscp {
        // Groups the table does not name: CS1, CS2, .. by their place (RFC 2474 §4.2.2).
        for (i, d) in dscp.iter_mut().enumerate() {
            if d.is_none() {
                if i >= 7 {
                    return Err(f.error(
                        "dscp",
                        format!(
                            "group '{}' needs a code point: only the first 7 groups get CS1..CS7 \
                             by default",
                            groups[i].name
                        ),
                    ));
                }
                *d = Some(8 * (i as u8 + 1));
            }
        }
        // Every group now has one; they must differ (and the parser keeps them below 64).
        if let Err(DscpConflict::Shared(j, i, d)) = check_group_dscps(&dscp) {
            return Err(f.error(
                "dscp",
                format!(
                    "groups '{}' and '{}' share code point {d}: with classify = \"dscp\" the \
                     router could not tell them apart",
                    groups[j].name, groups[i].name
                ),
            ));
        }
    }
    let mut sysctl = Vec::new();
    if let Some(mut t) = f.opt_table("sysctl")? {
        for key in t.keys() {
            let Some(value) = t.take(&key) else { continue };
            let value = host_sysctl(&key, value).map_err(|reason| t.error(&key, reason))?;
            sysctl.push((key, value));
        }
        t.finish()?;
    }
    f.finish()?;
    Ok(TestbedParams {
        classify,
        dscp,
        sysctl,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{parse, Overrides};
    use super::*;

    const BASE: &str = r#"
name = "t"
duration = "10s"
[bottleneck]
rate = "10M"
queue = { kind = "droptail", limit = 40 }
[[group]]
name = "A"
protocol = "tcp"
rtt = "40ms"
[[group]]
name = "B"
protocol = "cbr"
rate = "1M"
rtt = "40ms"
"#;

    fn params(extra: &str) -> Result<TestbedParams, String> {
        parse(&format!("{BASE}{extra}"), "t.toml", &Overrides::default())
            .map(|p| p.base().testbed.clone())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn code_points_parse_by_name_and_number() {
        assert_eq!(parse_dscp("AF11"), Ok(10));
        assert_eq!(parse_dscp("af43"), Ok(38));
        assert_eq!(parse_dscp("EF"), Ok(46));
        assert_eq!(parse_dscp("CS7"), Ok(56));
        assert_eq!(parse_dscp("63"), Ok(63));
        for bad in ["AF14", "AF51", "CS8", "64", "AF1", "", "X"] {
            assert!(parse_dscp(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn host_sysctls_are_the_namespace_s_own() {
        let p = params(
            "[testbed]\nsysctl = { \"net.ipv4.tcp_recovery\" = 0, \"net.ipv4.tcp_rmem\" = \"4096 131072 6291456\" }\n",
        )
        .unwrap();
        assert_eq!(
            p.sysctl,
            vec![
                ("net.ipv4.tcp_recovery".to_string(), "0".to_string()),
                (
                    "net.ipv4.tcp_rmem".to_string(),
                    "4096 131072 6291456".to_string()
                )
            ]
        );
        for (bad, why) in [
            ("\"kernel.panic\" = 1", "network namespace's own"),
            ("\"net.ipv4.\" = 1", "network namespace's own"),
            ("\"net.ipv4.a;b\" = 1", "network namespace's own"),
            ("\"net.ipv4.tcp_sack\" = \"1=2\"", "'='"),
            ("\"net.ipv4.tcp_sack\" = true", "found boolean"),
        ] {
            let err = params(&format!("[testbed]\nsysctl = {{ {bad} }}\n")).unwrap_err();
            assert!(err.contains("sysctl") && err.contains(why), "{bad}: {err}");
        }
    }

    #[test]
    fn the_table_is_read_defaulted_and_checked() {
        let p = params("").unwrap();
        assert_eq!((p.classify, p.dscp), (Classify::Flow, vec![None, None]));
        let p = params("[testbed]\nclassify = \"dscp\"\n").unwrap();
        assert_eq!(
            (p.classify, p.dscp),
            (Classify::Dscp, vec![Some(8), Some(16)])
        );
        let p = params("[testbed]\nclassify = \"dscp\"\ndscp = { B = \"EF\" }\n").unwrap();
        assert_eq!(p.dscp, vec![Some(8), Some(46)]);
        let p = params("[testbed]\ndscp = { A = 10 }\n").unwrap();
        assert_eq!((p.classify, p.dscp), (Classify::Flow, vec![Some(10), None]));
        for (extra, key, reason) in [
            ("classify = \"tuple\"", "testbed.classify", "neither"),
            ("dscp = { C = \"EF\" }", "testbed.dscp.C", "no group"),
            ("dscp = { A = \"AF14\" }", "testbed.dscp.A", "not a DSCP"),
            ("dscp = { A = 64 }", "testbed.dscp.A", "outside"),
            (
                "classify = \"dscp\"\ndscp = { B = \"CS1\" }",
                "testbed.dscp",
                "share code point 8",
            ),
            ("classfy = \"dscp\"", "testbed.classfy", "unknown key"),
        ] {
            let err = params(&format!("[testbed]\n{extra}\n")).unwrap_err();
            assert!(err.contains(key) && err.contains(reason), "{extra}: {err}");
        }
    }
}
