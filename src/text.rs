//! Small text helpers shared across the crate.

/// At most `max` bytes of `s`, cut at a char boundary (for quoting or capping text).
pub fn shorten(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    #[test]
    fn shorten_cuts_at_a_char_boundary() {
        assert_eq!(super::shorten("héllo", 2), "h");
        assert_eq!(super::shorten("abc", 10), "abc");
    }
}
