//! What ikigai may do on the user's behalf: which folders are trusted (`trust`), the OS
//! sandbox tool processes run in (`sandbox`) and how its denials read (`sandbox_denials`).
//! Decides and stores; never prints and never asks (front ends do, through their own means).

pub mod sandbox;
pub mod sandbox_denials;
pub mod trust;
