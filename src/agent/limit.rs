//! The pure decision of which tool calls of a response run, given the per-turn limit.

/// What happens to one tool call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Action {
    Execute,
    /// Execute it; it reaches the limit, so its result carries the limit marker.
    ExecuteLast,
    /// Not executed; it gets an error result so the history stays valid.
    Skip,
}

/// Plans `n` calls when `executed` calls already ran this turn and `limit` may run.
pub(crate) fn plan(executed: u32, limit: u32, n: usize) -> Vec<Action> {
    (0..n)
        .map(|i| {
            let nth = u64::from(executed) + i as u64 + 1;
            match nth.cmp(&u64::from(limit)) {
                std::cmp::Ordering::Less => Action::Execute,
                std::cmp::Ordering::Equal => Action::ExecuteLast,
                std::cmp::Ordering::Greater => Action::Skip,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;

    #[test]
    fn plans_around_the_limit() {
        assert_eq!(plan(0, 3, 2), vec![Execute, Execute]);
        assert_eq!(plan(2, 3, 3), vec![ExecuteLast, Skip, Skip]);
        assert_eq!(plan(3, 3, 2), vec![Skip, Skip]);
        assert_eq!(plan(0, 1, 1), vec![ExecuteLast]);
        assert!(plan(0, 3, 0).is_empty());
    }
}
