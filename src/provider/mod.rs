//! Model providers: one wire format per file; nothing else knows a wire format.
