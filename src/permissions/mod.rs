//! What ikigai may do on the user's behalf: which folders are trusted (`trust`). Decides
//! and stores; never prints and never asks (front ends do, through their own means).

pub mod trust;
