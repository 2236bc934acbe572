//! Whether the host itself is online, for a run with no endpoint to probe (a
//! `command` agent without `[offline] probe`): it is when it has a default route and
//! a resolver that answers. Pure: the route tables, `resolv.conf` and the resolver's
//! reply come in as text and bytes (read by `host_network`); the judgement and the
//! DNS message are here.
//!
//! Like a default endpoint, the host counts as evidence of being offline only after
//! it was seen online during the run (`recovery::probe::judged`): a machine that never
//! had network (a sandbox, CI) keeps its backoff and never pauses forever.

use std::net::IpAddr;

use super::probe::ProbeResult;

/// A default route in `/proc/net/route` (IPv4) or `/proc/net/ipv6_route`: a route
/// to everything (destination 0, prefix 0) that is up, not a reject route, and not
/// on the loopback device.
pub(crate) fn default_route(ipv4: &str, ipv6: &str) -> bool {
    const UP: u32 = 0x1;
    const REJECT: u32 = 0x200;
    let usable = |flags: &str, iface: &str| {
        u32::from_str_radix(flags, 16).is_ok_and(|f| f & UP != 0 && f & REJECT == 0) && iface != "lo"
    };
    let v4 = ipv4.lines().skip(1).any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        matches!(f.as_slice(), [iface, "00000000", _, flags, _, _, _, "00000000", ..] if usable(flags, iface))
    });
    let v6 = ipv6.lines().any(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        match f.as_slice() {
            [dest, "00", _, _, _, _, _, _, flags, iface] => dest.bytes().all(|b| b == b'0') && usable(flags, iface),
            _ => false,
        }
    });
    v4 || v6
}

/// The resolvers `resolv.conf` names, in order.
pub(crate) fn nameservers(resolv_conf: &str) -> Vec<IpAddr> {
    resolv_conf
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some("nameserver")).then(|| words.next()).flatten()
        })
        // A link-local IPv6 address carries its zone (`fe80::1%eth0`), which
        // `IpAddr` does not parse; such a resolver is skipped.
        .filter_map(|addr| addr.parse().ok())
        .collect()
}

/// A DNS query with `id` for the root zone's NS records, recursion desired: the
/// smallest question every resolver can answer from its cache or its upstream.
pub(crate) fn dns_query(id: u16) -> Vec<u8> {
    let mut q = Vec::with_capacity(17);
    q.extend_from_slice(&id.to_be_bytes());
    q.extend_from_slice(&[0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]);
    // The root name, type NS (2), class IN (1).
    q.extend_from_slice(&[0, 0, 2, 0, 1]);
    q
}

/// Whether `reply` answers the query `id`: a response with the same id whose code is
/// "no error" or "no such name". A resolver that cannot reach its upstream answers
/// "server failure" (a local stub such as systemd-resolved does): no answer here.
pub(crate) fn dns_answered(reply: &[u8], id: u16) -> bool {
    let [a, b, flags, codes, ..] = reply else { return false };
    let is_response = flags & 0x80 != 0;
    let rcode = codes & 0x0f;
    u16::from_be_bytes([*a, *b]) == id && is_response && (rcode == 0 || rcode == 3)
}

/// What the host's readings come to. `route` is `None` where the route tables cannot
/// be read (not Linux, a restricted `/proc`): the resolver alone decides then.
pub(crate) fn judge(route: Option<bool>, resolver: Result<(), String>) -> ProbeResult {
    if route == Some(false) {
        return ProbeResult::Offline { last_error: "this host has no default route".to_string() };
    }
    match resolver {
        Ok(()) => ProbeResult::Online,
        Err(why) => ProbeResult::Offline { last_error: format!("no resolver answers ({why})") },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V4_HEAD: &str = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n";

    #[test]
    fn a_default_route_is_an_up_route_to_everything_off_loopback() {
        let with = format!("{V4_HEAD}eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0\n");
        let subnet_only = format!("{V4_HEAD}eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0\n");
        let down = format!("{V4_HEAD}eth0\t00000000\t010200C0\t0002\t0\t0\t0\t00000000\t0\t0\t0\n");
        assert!(default_route(&with, ""));
        assert!(!default_route(&subnet_only, ""));
        assert!(!default_route(&down, ""));
        assert!(!default_route(V4_HEAD, ""));
        let zeros = "00000000000000000000000000000000";
        let v6 = format!(
            "{zeros} 00 {zeros} 00 fe800000000000000000000000000001 00000400 00000001 00000000 00000003 wlan0\n"
        );
        let v6_reject = format!("{zeros} 00 {zeros} 00 {zeros} ffffffff 00000001 00000000 00200200 lo\n");
        let v6_local = "fe800000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001 eth0\n";
        assert!(default_route(V4_HEAD, &v6));
        assert!(!default_route(V4_HEAD, &v6_reject));
        assert!(!default_route(V4_HEAD, v6_local));
    }

    #[test]
    fn the_resolvers_are_the_nameserver_lines() {
        let conf = "# generated\nsearch lan\nnameserver 10.255.255.53\nnameserver ::1\nnameserver fe80::1%eth0\noptions edns0\n";
        let expected: Vec<IpAddr> = vec!["10.255.255.53".parse().unwrap(), "::1".parse().unwrap()];
        assert_eq!(nameservers(conf), expected);
        assert!(nameservers("").is_empty());
    }

    #[test]
    fn a_reply_counts_when_it_answers_the_question() {
        let q = dns_query(0xbeef);
        assert_eq!(q.len(), 17);
        assert_eq!(&q[..2], &[0xbe, 0xef]);
        let reply = |id: u16, flags: u8, rcode: u8| {
            let mut r = q.clone();
            r[..2].copy_from_slice(&id.to_be_bytes());
            (r[2], r[3]) = (flags, 0x80 | rcode);
            r
        };
        assert!(dns_answered(&reply(0xbeef, 0x81, 0), 0xbeef));
        assert!(dns_answered(&reply(0xbeef, 0x81, 3), 0xbeef), "no such name is an answer");
        assert!(!dns_answered(&reply(0xbeef, 0x81, 2), 0xbeef), "server failure: the upstream is gone");
        assert!(!dns_answered(&reply(0x1234, 0x81, 0), 0xbeef));
        assert!(!dns_answered(&q, 0xbeef), "the query itself is no answer");
        assert!(!dns_answered(&[0xbe], 0xbeef));
    }

    #[test]
    fn online_takes_a_route_and_an_answering_resolver() {
        assert_eq!(judge(Some(true), Ok(())), ProbeResult::Online);
        assert_eq!(judge(None, Ok(())), ProbeResult::Online, "no route table to read: the resolver decides");
        let no_route = judge(Some(false), Ok(()));
        assert_eq!(no_route, ProbeResult::Offline { last_error: "this host has no default route".into() });
        match judge(Some(true), Err("10.0.0.53: timed out".into())) {
            ProbeResult::Offline { last_error } => assert_eq!(last_error, "no resolver answers (10.0.0.53: timed out)"),
            ProbeResult::Online => panic!("no resolver answered"),
        }
    }
}
