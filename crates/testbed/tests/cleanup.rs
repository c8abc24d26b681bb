//! A run that panics half-way leaves nothing behind: its namespaces, and with them its veth
//! pairs and TUN devices, go as the guard unwinds. Needs root; skipped with a printed reason
//! elsewhere.

use qstp_testbed::ns::{self, Namespaces};
use qstp_testbed::setup::{self, HostTcp};

#[test]
fn a_panic_half_way_through_the_setup_removes_every_namespace_and_device() {
    if let Err(e) = qstp_testbed::check_privileges() {
        println!("SKIPPED: {e}");
        return;
    }
    let prefix = ns::unique_prefix();
    let links_before = links();
    let p = prefix.clone();
    let outcome = std::panic::catch_unwind(move || {
        let mut guard = Namespaces::new(p.clone());
        let r = setup::router(&mut guard).unwrap();
        let tcp = HostTcp {
            sack: true,
            timestamps: false,
            ecn: false,
            initcwnd: 2,
            rto_min_ms: 200,
            quickack: true,
            mtu: 1500,
            sysctl: vec!["net.ipv4.tcp_recovery=0".into()],
        };
        let pair = setup::hosts(&mut guard, &r, 0, (0, 0), &tcp).unwrap();
        // The scenario's own sysctls hold in the hosts (the machine's default is 1).
        for host in [&pair.sender_ns, &pair.receiver_ns] {
            let out = std::process::Command::new("ip")
                .args([
                    "netns",
                    "exec",
                    host,
                    "sysctl",
                    "-n",
                    "net.ipv4.tcp_recovery",
                ])
                .output()
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "0", "{host}");
        }
        let _tuns = setup::tuns(&r).unwrap();
        let made: Vec<String> = ns::list()
            .unwrap()
            .into_iter()
            .filter(|n| n.starts_with(&p))
            .collect();
        assert_eq!(made.len(), 3, "router and two hosts: {made:?}");
        panic!("a failure half-way through the run");
    });
    assert!(outcome.is_err(), "the closure was meant to panic");
    let left: Vec<String> = ns::list()
        .unwrap()
        .into_iter()
        .filter(|n| n.starts_with(&prefix))
        .collect();
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    // Devices lived inside the namespaces: the caller's own list of links is as it was.
    assert_eq!(links(), links_before);
}

/// The names of the links in this process's namespace.
fn links() -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .unwrap();
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split(':').nth(1).map(|n| n.trim().to_string()))
        .collect();
    names.sort();
    names
}
