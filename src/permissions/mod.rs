//! What ikigai may do on the user's behalf: which folders are trusted (`trust`) and what
//! that trust pins (`pin`: the settings and the project files they run, `reach`), the
//! files that run later and so are never an ordinary edit (`protected`), the
//! approval modes (`mode`), rules (`rule`, with `web_fetch` URL patterns in `url_rule`),
//! how a bash line is taken apart (`shell`, reading options with `getopt`), the built-in
//! read-only list (`readonly`; `git_repo` and `git_index` for whether git would run the
//! repository's programs), the decision for each call (`decide`), the
//! remembered "always" answers (`remembered`), the OS sandbox tool processes run in
//! (`sandbox`), how its denials read (`sandbox_denials`) and its write rule for the file
//! tools that run inside ikigai (`sandbox_writes`). Decides and stores; never
//! prints and never asks (front ends do, through their own means).

#[cfg(test)]
mod bypass_tests;
pub mod decide;
pub(crate) mod getopt;
mod git_index;
mod git_repo;
pub mod mode;
pub mod pin;
pub mod private_file;
pub mod project;
#[cfg(test)]
mod property_tests;
pub mod protected;
pub mod reach;
pub mod readonly;
pub mod record;
pub mod remembered;
pub mod rule;
pub mod sandbox;
pub mod sandbox_denials;
pub mod sandbox_writes;
pub mod shell;
pub mod trust;
pub mod unreadable;
pub(crate) mod url_rule;

pub use decide::{By, Decision, Policy, Rules, Verdict};
pub use mode::Mode;
