//! What ikigai may do on the user's behalf: which folders are trusted (`trust`) and what
//! that trust pins (`pin`: the settings and the project files they run, `reach`), the
//! files that run later and so are never an ordinary edit (`protected`), the
//! approval modes, rules and decision records (their data lives in `crate::policy`),
//! how a bash line is taken apart (`shell`, reading options with `getopt`), the built-in
//! read-only list (`readonly`; `git_repo` and `git_index` for whether git would run the
//! repository's programs), the decision for each call (`decide`), the
//! remembered "always" answers (`remembered`), the OS sandbox tool processes run in
//! (`sandbox`, with what the kernel can enforce in `kernel` and the one in force in
//! `sandbox_in_force`), how its denials read (`sandbox_denials`) and its write rule for the file
//! tools that run inside ikigai (`sandbox_writes`). Decides and stores; never
//! prints and never asks (front ends do, through their own means).

#[cfg(test)]
mod bypass_tests;
pub mod decide;
pub(crate) mod getopt;
mod git_index;
mod git_repo;
pub mod kernel;
pub mod pin;
pub mod private_file;
pub mod project;
#[cfg(test)]
mod property_tests;
pub mod protected;
pub mod reach;
pub mod readonly;
pub mod remembered;
pub mod sandbox;
pub mod sandbox_denials;
pub mod sandbox_in_force;
pub mod sandbox_writes;
pub mod shell;
pub mod trust;
pub mod unreadable;

pub use crate::policy::{mode, record, rule};
pub use decide::{By, Decision, Policy, Rules, Verdict};
pub use mode::Mode;
