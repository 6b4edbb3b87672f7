//! `web_fetch` rules, matched on the URL's parsed parts — scheme, host, port, path and
//! query — never as one string, so a `*` in the host cannot cross into the path
//! (`https://*.github.com/*` does not match `https://evil.example/.github.com/`). Hosts
//! are compared as the URL parser normalises them (lower case, IDNA, every IPv4 form
//! such as `2130706433` or `127.1` as dotted quads, IPv4-mapped IPv6 as IPv4, no trailing
//! dot). A `deny` or `ask` rule that names a loopback host covers every loopback host
//! (`127.0.0.0/8`, `::1`, `0.0.0.0`, `localhost` and `*.localhost`) and, when it names no
//! port, every port; an `allow` rule covers only what it names (the scheme's default port
//! when it names none). Matches; never decides.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use globset::{GlobBuilder, GlobMatcher};
use reqwest::Url;

/// A parsed `web_fetch(…)` pattern.
#[derive(Clone, Debug)]
pub(crate) struct UrlPattern {
    scheme: GlobMatcher,
    host: Host,
    port: Port,
    /// Over the path and query (`/a/b?c`); `None`: any.
    path: Option<GlobMatcher>,
}

#[derive(Clone, Debug)]
enum Host {
    /// A host without glob characters, normalised like a URL's.
    Exact(String),
    Glob(GlobMatcher),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Port {
    /// The pattern names none.
    Unnamed,
    Any,
    Exact(u16),
}

fn glob(pattern: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(pattern)
        .literal_separator(false)
        .case_insensitive(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

fn has_glob(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

impl UrlPattern {
    /// `scheme://host[:port][/path]`, each part a glob; without `scheme://`, the pattern
    /// is a host (any scheme, any path).
    pub(crate) fn parse(p: &str) -> Result<UrlPattern, String> {
        let (scheme, rest) = match p.split_once("://") {
            Some((s, r)) => (s, r),
            None => ("*", p),
        };
        if scheme.is_empty() || rest.is_empty() {
            return Err(
                "a web_fetch pattern is `scheme://host[:port][/path]` (each part may use `*`)".into(),
            );
        }
        let (authority, path) = match rest.find('/') {
            Some(at) => (&rest[..at], Some(&rest[at..])),
            None => (rest, None),
        };
        if authority.contains('@') {
            return Err("a web_fetch pattern names no user or password".into());
        }
        let (host, port) = split_port(authority)?;
        if host.is_empty() {
            return Err("a web_fetch pattern names a host (`*` for any)".into());
        }
        let host = if has_glob(host) {
            Host::Glob(glob(&host.to_ascii_lowercase())?)
        } else {
            let url =
                Url::parse(&format!("http://{host}/")).map_err(|e| format!("the host `{host}`: {e}"))?;
            Host::Exact(normalised_host(&url).ok_or_else(|| format!("the host `{host}` is not a host"))?)
        };
        Ok(UrlPattern {
            scheme: glob(&scheme.to_ascii_lowercase())?,
            host,
            port,
            path: match path {
                Some(p) if p != "/*" && p != "*" => Some(glob(p)?),
                _ => None,
            },
        })
    }

    /// Whether the pattern matches `url`; `broad` for `deny` and `ask` rules (loopback
    /// hosts stand for one another; no port named is any port).
    pub(crate) fn matches(&self, url: &Url, broad: bool) -> bool {
        if !self.scheme.is_match(url.scheme()) {
            return false;
        }
        let Some(host) = normalised_host(url) else {
            return false;
        };
        let host_ok = match &self.host {
            Host::Exact(h) => *h == host,
            Host::Glob(g) => g.is_match(&host),
        };
        let loopback_ok = broad && is_loopback(&host) && self.names_loopback();
        if !(host_ok || loopback_ok) {
            return false;
        }
        let port_ok = match self.port {
            Port::Any => true,
            Port::Exact(p) => url.port_or_known_default() == Some(p),
            Port::Unnamed => broad || url.port().is_none(),
        };
        if !port_ok {
            return false;
        }
        match &self.path {
            None => true,
            Some(g) => {
                let mut target = url.path().to_string();
                if let Some(q) = url.query() {
                    target.push('?');
                    target.push_str(q);
                }
                g.is_match(&target)
            }
        }
    }

    /// Whether the host pattern names a loopback host.
    fn names_loopback(&self) -> bool {
        match &self.host {
            Host::Exact(h) => is_loopback(h),
            Host::Glob(g) => ["127.0.0.1", "localhost", "::1"].iter().any(|h| g.is_match(h)),
        }
    }
}

/// `host:port` → the host and the port pattern (IPv6 in brackets keeps its colons).
fn split_port(authority: &str) -> Result<(&str, Port), String> {
    let (host, port) = if authority.starts_with('[') {
        match authority.find(']') {
            Some(end) => (&authority[..=end], authority[end + 1..].strip_prefix(':')),
            None => return Err("an IPv6 host in a web_fetch pattern is closed by `]`".into()),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (authority, None),
        }
    };
    let port = match port {
        None => Port::Unnamed,
        Some("*") => Port::Any,
        Some(p) => Port::Exact(
            p.parse()
                .map_err(|_| format!("`{p}` is not a port (a number or `*`)"))?,
        ),
    };
    Ok((host, port))
}

/// A URL's host as rules see it: lower case (the parser's IDNA), IPv6 without brackets,
/// an IPv4-mapped IPv6 address as IPv4, no trailing dot.
pub(crate) fn normalised_host(url: &Url) -> Option<String> {
    let host = url.host_str()?;
    if let Some(v6) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        let a: Ipv6Addr = v6.parse().ok()?;
        return Some(match a.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => a.to_string(),
        });
    }
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// Whether `host` (normalised) is this machine: `127.0.0.0/8`, `0.0.0.0`, `::1`, `::`,
/// `localhost`, `*.localhost`.
pub(crate) fn is_loopback(host: &str) -> bool {
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(a)) => a.is_loopback() || a == Ipv4Addr::UNSPECIFIED,
        Ok(IpAddr::V6(a)) => a == Ipv6Addr::LOCALHOST || a == Ipv6Addr::UNSPECIFIED,
        Err(_) => host == "localhost" || host.ends_with(".localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, url: &str, broad: bool) -> bool {
        let p = UrlPattern::parse(pattern).unwrap();
        p.matches(&Url::parse(url).unwrap(), broad)
    }

    #[test]
    fn a_star_in_the_host_does_not_cross_into_the_path() {
        let p = "https://*.github.com/*";
        assert!(m(p, "https://api.github.com/repos", false));
        assert!(m(p, "https://a.b.GitHub.com./x", false));
        for no in [
            "https://evil.example/.github.com/",
            "https://evil.example/x.github.com/y",
            "https://github.com.evil.example/",
            "https://evil.example?.github.com/",
            "https://evil.example#.github.com/",
            "http://api.github.com/",
            "https://api.github.com:8443/",
        ] {
            assert!(!m(p, no, false), "{no}");
        }
        assert!(m("https://docs.rs/*", "https://DOCS.rs/htmd", false));
        assert!(!m("https://docs.rs/*", "https://docs.rs.evil.example/", false));
        assert!(!m("https://docs.rs/*", "https://docs.rs@evil.example/", false));
        assert!(m(
            "https://docs.rs/htmd/*",
            "https://docs.rs/htmd/latest?x=1",
            false
        ));
        assert!(!m("https://docs.rs/htmd/*", "https://docs.rs/other/", false));
        assert!(m("http://127.0.0.1:8080/*", "http://127.0.0.1:8080/a", false));
        assert!(!m("http://127.0.0.1:8080/*", "http://127.0.0.1:9090/a", false));
    }

    #[test]
    fn a_deny_rule_on_a_loopback_address_covers_every_name_and_form_of_it() {
        let p = "http://127.0.0.1*";
        for url in [
            "http://127.0.0.1/",
            "http://127.0.0.1:8080/x",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://app.localhost/",
            "http://[::ffff:127.0.0.1]:9/",
            "http://[::1]/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://127.0.0.2/",
            "http://0.0.0.0:9/",
            "http://[::]/",
        ] {
            assert!(m(p, url, true), "{url}");
        }
        assert!(m("*://localhost/*", "https://127.0.0.1:4443/x", true));
        assert!(!m(p, "http://example.com/", true));
        // An allow rule covers only what it names.
        assert!(!m("http://localhost/*", "http://127.0.0.1/", false));
        assert!(!m("http://localhost/*", "http://localhost:8080/", false));
    }

    #[test]
    fn bad_patterns_say_what_is_wrong() {
        for bad in ["https://", "https://u@h/", "http://h:port/", "http://[::1/"] {
            assert!(UrlPattern::parse(bad).is_err(), "{bad}");
        }
        assert!(m("docs.rs", "https://docs.rs/x", false));
    }
}
