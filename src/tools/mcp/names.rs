//! The names MCP tools are offered under: `SERVER__TOOL`, reduced to the characters every
//! vendor accepts and cut to 64, with a short hash of the original names when it had to be
//! cleaned or cut. The same server and tool always get the same name, and a name stands
//! for one tool only: tools whose names come out the same — ignoring case, which some
//! vendors and models do — (`x_` + `y` and `x` + `_y` are both `x___y`; `a.b` and `a_b`
//! clean alike; long names cut alike) or the same as a built-in or external tool, are all
//! refused, never given out in order of arrival. Pure.

use std::collections::HashMap;

/// Vendors' longest tool name.
pub const MAX_NAME: usize = 64;
/// `_` and 8 hex digits, added when a name had to be cut or cleaned.
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

/// The name for one tool of one server, before collisions are looked at: `server__tool`
/// when it is clean and fits, else cleaned, cut and suffixed with the hash.
pub fn base_name(server: &str, tool: &str) -> String {
    let joined = format!("{}__{}", clean(server), clean(tool));
    let exact = joined == format!("{server}__{tool}");
    if exact && joined.len() <= MAX_NAME {
        return joined;
    }
    // Cleaned names are ASCII, so any byte index is a char boundary.
    let keep = joined.len().min(MAX_NAME - SUFFIX);
    format!("{}_{:08x}", &joined[..keep], hash(server, tool))
}

/// Tools refused because their names come out the same.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Collision {
    /// The name they would all have had.
    pub name: String,
    /// The (server, tool) pairs refused.
    pub tools: Vec<(String, String)>,
    /// A built-in or external tool already has the name.
    pub taken: bool,
}

impl Collision {
    /// One line saying what was refused and why.
    pub fn describe(&self) -> String {
        let tools: Vec<String> = self
            .tools
            .iter()
            .map(|(s, t)| format!("`{t}` of server `{s}`"))
            .collect();
        let why = if self.taken {
            "a built-in or external tool has that name".to_string()
        } else {
            "each would be offered under the same name".to_string()
        };
        format!(
            "MCP tool{} {} not offered: {why} ({}); rename one on its server or leave it out \
             with enabled_tools / disabled_tools",
            if self.tools.len() == 1 { "" } else { "s" },
            tools.join(" and "),
            self.name
        )
    }
}

/// Names for `(server, tool)` pairs, in the given order: each `base_name`, or `None` for a
/// tool refused because another pair's name, or one of `taken`, is the same ignoring case.
pub fn assign(pairs: &[(String, String)], taken: &[String]) -> (Vec<Option<String>>, Vec<Collision>) {
    let names: Vec<String> = pairs.iter().map(|(s, t)| base_name(s, t)).collect();
    let taken: std::collections::HashSet<String> = taken.iter().map(|n| n.to_ascii_lowercase()).collect();
    let mut by_key: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, n) in names.iter().enumerate() {
        by_key.entry(n.to_ascii_lowercase()).or_default().push(i);
    }
    let mut out: Vec<Option<String>> = names.iter().cloned().map(Some).collect();
    let mut collisions = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (i, n) in names.iter().enumerate() {
        let key = n.to_ascii_lowercase();
        let group = &by_key[&key];
        let is_taken = taken.contains(&key);
        if group.len() == 1 && !is_taken {
            continue;
        }
        out[i] = None;
        if seen.insert(key) {
            collisions.push(Collision {
                name: n.clone(),
                tools: group.iter().map(|&j| pairs[j].clone()).collect(),
                taken: is_taken,
            });
        }
    }
    (out, collisions)
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

    /// Every way two different tools can come out under one name: each pair is refused
    /// whole, in either order, and a tool alone keeps its name.
    #[test]
    fn tools_that_would_share_a_name_are_all_refused_in_any_order() {
        let long = "y".repeat(80);
        let hashed_a_b = base_name("s", "a.b");
        let classes: Vec<(&str, Vec<(String, String)>)> = vec![
            ("the separator", pairs(&[("x_", "y"), ("x", "_y")])),
            ("more underscores", pairs(&[("a_", "_b"), ("a", "__b")])),
            ("case", pairs(&[("gh", "Read"), ("gh", "read")])),
            ("case of the server", pairs(&[("GH", "read"), ("gh", "read")])),
            ("the same tool twice", pairs(&[("s", "t"), ("s", "t")])),
            (
                "a name written like a hashed one",
                vec![
                    ("s".into(), "a.b".into()),
                    ("s".into(), hashed_a_b[3..].to_string()),
                ],
            ),
            (
                "hashed names differing only in case",
                pairs(&[("s", "A.b"), ("s", "a.b")]),
            ),
        ];
        for (class, p) in classes {
            for order in [p.clone(), p.iter().rev().cloned().collect()] {
                let (names, collisions) = assign(&order, &[]);
                if names.iter().all(Option::is_some) {
                    // Only when the names really differ, ignoring case.
                    let lower: std::collections::HashSet<String> =
                        names.iter().flatten().map(|n| n.to_ascii_lowercase()).collect();
                    assert_eq!(lower.len(), names.len(), "{class}: {names:?}");
                    continue;
                }
                assert!(names.iter().all(Option::is_none), "{class}: {names:?}");
                assert_eq!(collisions.len(), 1, "{class}");
                assert_eq!(collisions[0].tools.len(), 2, "{class}");
                assert!(collisions[0].describe().contains("not offered"), "{class}");
            }
        }
        // Cut to the same prefix, different tools: different hashes, both offered.
        let (names, none) = assign(&pairs(&[("s", &long), ("s", &format!("{long}z"))]), &[]);
        assert!(none.is_empty() && names[0] != names[1], "{names:?}");
        // Alone, every one of them keeps its name.
        let (names, none) = assign(&pairs(&[("x_", "y"), ("x", "z")]), &[]);
        assert!(none.is_empty());
        assert_eq!(names, [Some("x___y".to_string()), Some("x__z".to_string())]);
    }

    #[test]
    fn a_name_a_built_in_or_external_tool_has_is_refused() {
        let (names, collisions) = assign(&pairs(&[("s", "x"), ("t", "y")]), &["S__X".to_string()]);
        assert_eq!(names, [None, Some("t__y".to_string())]);
        assert!(collisions[0].taken);
        assert!(
            collisions[0].describe().contains("`x` of server `s`"),
            "{}",
            collisions[0].describe()
        );
    }
}
