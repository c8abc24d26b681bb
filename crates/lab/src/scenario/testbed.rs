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
//!
//! A `[[group]]` of `protocol = "command"` (read here, run by the testbed only) runs programs of
//! the user's in its flows' namespaces: `receiver = ["{qstp}", "recv", "--listen", "{listen}"]`
//! in the receiver's, then `sender = [..]` in the sender's. Each is an argv array (no shell);
//! the placeholders of [`PLACEHOLDERS`] are replaced per flow.

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
    /// Per group, in the scenario's order, the programs of a `protocol = "command"` group
    /// (`None`: the group runs its protocol).
    pub commands: Vec<Option<CommandSpec>>,
}

/// The programs a `protocol = "command"` group runs in each of its flows' namespaces.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandSpec {
    /// Started first, in the receiver's namespace; it must listen on `{port}` of `{receiver_ip}`.
    pub receiver: Vec<String>,
    /// Started at the flow's start, in the sender's namespace; its exit ends the flow.
    pub sender: Vec<String>,
}

/// The placeholders a command's arguments may hold, and what the testbed puts in their place.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("qstp", "the path of the running qstp binary"),
    (
        "bin_dir",
        "its folder (`{bin_dir}/examples/soft_guarantee` is the example cargo builds there)",
    ),
    ("listen", "the receiver's address and port, `10.2.G.F:4433`"),
    ("receiver", "the same, for the sender to connect to"),
    ("receiver_ip", "the receiver's address alone"),
    ("sender_ip", "the sender's address"),
    ("port", "the receiver's port, 4433"),
    (
        "out",
        "this flow's folder in the run's output, for files it writes",
    ),
    ("seed", "the run's seed"),
    ("duration_s", "the run's duration in whole seconds"),
];

/// Most arguments of one command, and most bytes of one argument.
const MAX_ARGS: usize = 64;
const MAX_ARG: usize = 4096;

/// Read one command's argv array (key `key` of a `protocol = "command"` group): strings, at least
/// the program, its placeholders known.
fn argv(f: &mut Fields, key: &str) -> FieldResult<Vec<String>> {
    let Some(items) = f.opt_array(key)? else {
        return Err(f.error(
            key,
            "missing: a command group needs `receiver` and `sender`, each an array of strings \
             (the program, then its arguments)",
        ));
    };
    if items.is_empty() || items.len() > MAX_ARGS {
        return Err(f.error(
            key,
            format!(
                "{} elements: give the program and at most {} arguments",
                items.len(),
                MAX_ARGS - 1
            ),
        ));
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.into_iter().enumerate() {
        let Value::String(arg) = item else {
            return Err(f.error(
                key,
                format!("element {i} is a {}, not a string", item.type_str()),
            ));
        };
        if arg.len() > MAX_ARG || arg.contains('\0') || (i == 0 && arg.is_empty()) {
            return Err(f.error(
                key,
                format!("element {i} is empty, longer than {MAX_ARG} bytes or holds a NUL"),
            ));
        }
        if let Err(name) = check_placeholders(&arg) {
            let known: Vec<String> = PLACEHOLDERS
                .iter()
                .map(|(n, _)| format!("{{{n}}}"))
                .collect();
            return Err(f.error(
                key,
                format!(
                    "element {i}: '{{{name}}}' is not a placeholder (use {})",
                    known.join(", ")
                ),
            ));
        }
        out.push(arg);
    }
    Ok(out)
}

/// `Err(name)` for the first `{name}` (letters, digits, '_') that is not a placeholder.
fn check_placeholders(arg: &str) -> Result<(), String> {
    let mut rest = arg;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('}') else { break };
        let name = &after[..close];
        let word = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if word && !PLACEHOLDERS.iter().any(|(n, _)| *n == name) {
            return Err(name.to_string());
        }
        rest = &after[close + 1..];
    }
    Ok(())
}

/// The programs of a `protocol = "command"` group, its `protocol` key taken already.
pub(crate) fn command(f: &mut Fields) -> FieldResult<CommandSpec> {
    Ok(CommandSpec {
        receiver: argv(f, "receiver")?,
        sender: argv(f, "sender")?,
    })
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
pub(crate) fn testbed(
    f: Option<Fields>,
    groups: &[GroupSpec],
    commands: Vec<Option<CommandSpec>>,
) -> FieldResult<TestbedParams> {
    let Some(mut f) = f else {
        return Ok(TestbedParams {
            classify: Classify::Flow,
            dscp: vec![None; groups.len()],
            sysctl: Vec::new(),
            commands,
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
        commands,
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

    const COMMAND: &str = r#"
[[group]]
name = "C"
protocol = "command"
rtt = "40ms"
receiver = ["{qstp}", "recv", "--listen", "{listen}", "--out", "{out}/received"]
sender = ["{qstp}", "send", "--duration", "5", "--to", "{receiver}"]
"#;

    #[test]
    fn a_command_group_is_read_for_the_testbed_and_refused_by_the_lab() {
        let plan = parse(&format!("{BASE}{COMMAND}"), "t.toml", &Overrides::default()).unwrap();
        let s = plan.base();
        assert_eq!(s.testbed.commands.len(), 3);
        assert!(s.testbed.commands[..2].iter().all(Option::is_none));
        let c = s.testbed.commands[2].as_ref().unwrap();
        assert_eq!(c.receiver[3], "{listen}");
        assert_eq!(c.sender.len(), 6);
        // In the simulator's spec it stands as a source that sends nothing.
        assert_eq!(
            s.groups[2].protocol,
            qstp_sim::Protocol::from(qstp_sim::spec::source::CbrSpec {
                schedule: vec![(qstp_proto::Duration::ZERO, qstp_proto::Rate::ZERO)]
            })
        );
        let err = plan.refuse_testbed_only().unwrap_err().to_string();
        assert!(
            err.starts_with("t.toml: group.C.protocol: \"command\" runs programs"),
            "{err}"
        );
        assert!(err.contains("cannot be simulated"), "{err}");
        // Without a command group nothing is refused.
        let plain = parse(BASE, "t.toml", &Overrides::default()).unwrap();
        assert!(plain.refuse_testbed_only().is_ok());
        assert_eq!(plain.base().testbed.commands, vec![None, None]);
    }

    #[test]
    fn bad_commands_name_their_key_and_reason() {
        for (from, to, key, reason) in [
            ("{listen}", "{lisen}", "group.C.receiver", "'{lisen}' is not a placeholder"),
            ("sender = [", "sender = [1, ", "group.C.sender", "element 0 is a integer"),
            (
                "receiver = [\"{qstp}\", \"recv\", \"--listen\", \"{listen}\", \"--out\", \"{out}/received\"]",
                "receiver = []",
                "group.C.receiver",
                "0 elements",
            ),
            (
                "receiver = [\"{qstp}\", \"recv\", \"--listen\", \"{listen}\", \"--out\", \"{out}/received\"]",
                "",
                "group.C.receiver",
                "missing",
            ),
            ("rtt = \"40ms\"", "rtt = \"40ms\"\ntarget = \"1M\"", "group.C.target", "their own rates"),
            ("rtt = \"40ms\"", "rtt = \"40ms\"\nrate = \"1M\"", "group.C.rate", "unknown key"),
        ] {
            let text = format!("{BASE}{}", COMMAND.replace(from, to));
            let err = parse(&text, "t.toml", &Overrides::default())
                .unwrap_err()
                .to_string();
            assert!(err.contains(key) && err.contains(reason), "{to}: {err}");
        }
        // Braces that are no placeholder name (JSON, shell) pass as written.
        assert!(check_placeholders("{\"a\": 1} {} {x-y}").is_ok());
        assert_eq!(check_placeholders("{out}/{rx}"), Err("rx".into()));
    }
}
