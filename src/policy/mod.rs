//! What the permission engine speaks, as data every layer may hold: the approval mode
//! (`mode`), the rules and their lists (`rule`, with `web_fetch` URL patterns in
//! `url_rule`), a decision and the place it pinned (`decision`), how a call was decided as
//! stored and emitted (`record`), the sandbox as configured (`sandbox`) and as one tool
//! process gets it (`confinement`). Config reads these, the protocol carries them,
//! `permissions` decides with them. Parses and matches; decides nothing, reads no file and
//! knows no tool but by the names in `crate::tool_vocab`.

pub mod confinement;
pub mod decision;
pub mod mode;
pub mod record;
pub mod rule;
pub mod sandbox;
pub(crate) mod url_rule;

pub use decision::{By, Decision, Pinned, Rules, Verdict};
pub use mode::Mode;
