//! The turn loop: request → stream → tool calls → results → repeat.
