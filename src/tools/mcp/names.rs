//! The names MCP tools are offered under: `SERVER__TOOL`, reduced to the characters every
//! vendor accepts and cut to 64, made unique with a short hash of the original names. The
//! same server and tool always get the same name. Pure.

/// Vendors' longest tool name.
pub const MAX_NAME: usize = 64;
/// `_` and 8 hex digits, added when a name had to be cut or collided.
const SUFFIX: usize = 9;

/// `s` with every character outside `[A-Za-z0-9_-]` replaced by `_`.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a of `server`, a NUL and `tool`: stable across builds and platforms.
fn hash(server: &str, tool: &str) -> u32 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in server.bytes().chain([0]).chain(tool.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h ^ (h >> 32)) as u32
}

/// The name for one tool of one server, ignoring collisions: `server__tool` when it is
/// clean and fits, else cleaned, cut and suffixed with the hash.
pub fn base_name(server: &str, tool: &str) -> String {
    let joined = format!("{}__{}", clean(server), clean(tool));
    let exact = joined == format!("{server}__{tool}");
    if exact && joined.len() <= MAX_NAME {
        return joined;
    }
    hashed(&joined, server, tool)
}

fn hashed(joined: &str, server: &str, tool: &str) -> String {
    // Cleaned names are ASCII, so any byte index is a char boundary.
    let keep = joined.len().min(MAX_NAME - SUFFIX);
    format!("{}_{:08x}", &joined[..keep], hash(server, tool))
}

/// Names for `(server, tool)` pairs, in the given order: each `base_name`, except that a
/// name already taken (by an earlier pair or by `taken`) gets the hash suffix instead.
pub fn assign(pairs: &[(String, String)], taken: &[String]) -> Vec<String> {
    let mut used: Vec<String> = taken.to_vec();
    let mut out = Vec::with_capacity(pairs.len());
    for (server, tool) in pairs {
        let mut name = base_name(server, tool);
        if used.contains(&name) {
            name = hashed(&format!("{}__{}", clean(server), clean(tool)), server, tool);
        }
        // Two different pairs with the same 32-bit hash and prefix: count up.
        let mut n = 0u32;
        let stem = name.clone();
        while used.contains(&name) {
            n += 1;
            let tail = format!("_{n}");
            name = format!("{}{tail}", &stem[..stem.len().min(MAX_NAME - tail.len())]);
        }
        used.push(name.clone());
        out.push(name);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    #[test]
    fn clean_short_names_are_kept() {
        assert_eq!(base_name("github", "create_issue"), "github__create_issue");
        assert_eq!(base_name("every", "get-sum"), "every__get-sum");
    }

    #[test]
    fn long_or_unclean_names_are_cut_and_hashed_the_same_way_every_time() {
        let long = "t".repeat(100);
        let a = base_name("srv", &long);
        assert_eq!(a.len(), MAX_NAME);
        assert_eq!(a, base_name("srv", &long), "deterministic");
        assert_ne!(a, base_name("srv", &format!("{long}x")), "different tools differ");
        let dotted = base_name("s", "files.read");
        assert!(dotted.starts_with("s__files_read_"), "{dotted}");
        assert!(
            dotted
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
        let uni = base_name("s", "lire_fichier_é");
        assert!(uni.is_ascii() && uni.len() <= MAX_NAME, "{uni}");
    }

    #[test]
    fn collisions_get_distinct_stable_names() {
        let p = pairs(&[("s", "a.b"), ("s", "a_b"), ("s", "a_b_")]);
        let names = assign(&p, &[]);
        assert_eq!(names[1], "s__a_b", "the exact name keeps its name");
        assert_ne!(names[0], names[1]);
        assert_eq!(names, assign(&p, &[]));
        let names = assign(&pairs(&[("s", "x")]), &["s__x".to_string()]);
        assert!(names[0].starts_with("s__x_") && names[0] != "s__x", "{names:?}");
        let long = "y".repeat(80);
        let twice = assign(&pairs(&[("s", &long), ("s", &long)]), &[]);
        assert_ne!(twice[0], twice[1]);
        assert!(twice.iter().all(|n| n.len() <= MAX_NAME));
    }
}
