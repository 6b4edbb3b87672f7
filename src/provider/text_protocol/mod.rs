//! Tools for models that cannot call them natively: the SYSTEM.EXEC text protocol (tags in
//! plain text, parsed while streaming) and recovery of tool calls written as JSON text.
//! Knows no vendor wire format; it works on canonical messages and `StreamEvent`s.

pub mod again;
pub mod calls;
pub mod decode;
pub mod echo;
pub mod environment;
pub mod fabricated;
pub mod recover;
pub mod render;
pub mod tags;
pub mod wrapper;
pub mod write;
