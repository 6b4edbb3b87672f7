//! The interactive terminal UI (ratatui + crossterm).
