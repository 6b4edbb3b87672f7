//! What ikigai may do on the user's behalf: which folders are trusted (`trust`) and what
//! that trust pins (`pin`: the settings and the project files they run, `reach`), the
//! files that run later and so are never an ordinary edit (`protected`), the
//! approval modes (`mode`), rules (`rule`), how a bash line is taken apart (`shell`), the
//! built-in read-only list (`readonly`), the decision for each call (`decide`), the
//! remembered "always" answers (`remembered`), the OS sandbox tool processes run in
//! (`sandbox`), how its denials read (`sandbox_denials`) and its write rule for the file
//! tools that run inside ikigai (`sandbox_writes`). Decides and stores; never
//! prints and never asks (front ends do, through their own means).

pub mod decide;
mod git_repo;
pub mod mode;
pub mod pin;
pub mod private_file;
pub mod project;
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

pub use decide::{By, Decision, Policy, Rules, Verdict};
pub use mode::Mode;
