//! The approval question the agent has open, as data: which call, what it would do, why
//! it is asked, and what an "always" answer would keep. `approval.rs` shows it and takes
//! the answer; this file renders nothing.

/// The open question.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    pub id: String,
    pub name: String,
    pub arguments: String,
    pub reason: String,
    pub always: Vec<String>,
    /// The sandbox stopped the call: the question is whether to run it again outside.
    pub outside_sandbox: bool,
    /// After `n`: the reason being typed (sent with Enter; Esc sends none).
    pub typing: Option<String>,
}
