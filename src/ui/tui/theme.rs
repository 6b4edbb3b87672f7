//! The colour theme of the TUI: a handful of named styles, all plain when `NO_COLOR` is set.
//! Owns no state beyond the styles; never touches the terminal.

use ratatui::style::{Color, Modifier, Style};

/// Named styles used across the TUI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    pub color: bool,
    pub accent: Style,
    pub user: Style,
    pub dim: Style,
    pub bold: Style,
    pub heading: Style,
    pub code: Style,
    pub link: Style,
    pub quote: Style,
    pub tool: Style,
    pub tool_ok: Style,
    pub tool_err: Style,
    pub info: Style,
    pub warning: Style,
    pub error: Style,
    pub status: Style,
    pub spinner: Style,
}

impl Theme {
    /// The coloured theme, or the monochrome one (modifiers only) when `color` is false.
    pub fn new(color: bool) -> Self {
        let fg = |c: Color| if color { Style::new().fg(c) } else { Style::new() };
        let bold = Style::new().add_modifier(Modifier::BOLD);
        Theme {
            color,
            accent: fg(Color::Cyan),
            user: fg(Color::Cyan).add_modifier(Modifier::BOLD),
            dim: if color {
                Style::new().fg(Color::DarkGray)
            } else {
                Style::new().add_modifier(Modifier::DIM)
            },
            bold,
            heading: fg(Color::Magenta).add_modifier(Modifier::BOLD),
            code: fg(Color::Yellow),
            link: fg(Color::Blue).add_modifier(Modifier::UNDERLINED),
            quote: fg(Color::Green).add_modifier(Modifier::ITALIC),
            tool: fg(Color::Blue).add_modifier(Modifier::BOLD),
            tool_ok: fg(Color::Green),
            tool_err: fg(Color::Red),
            info: fg(Color::Cyan),
            warning: fg(Color::Yellow),
            error: fg(Color::Red).add_modifier(Modifier::BOLD),
            status: if color {
                Style::new().fg(Color::Gray)
            } else {
                Style::new()
            },
            spinner: fg(Color::Magenta),
        }
    }

    /// Colour unless `NO_COLOR` is set to a non-empty value.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Self {
        Self::new(env("NO_COLOR").is_none_or(|v| v.is_empty()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_drops_colours_but_keeps_modifiers() {
        let t = Theme::from_env(&|k| (k == "NO_COLOR").then(|| "1".to_string()));
        assert!(!t.color);
        assert_eq!(t.accent.fg, None);
        assert!(t.bold.add_modifier.contains(Modifier::BOLD));
        let t = Theme::from_env(&|k| (k == "NO_COLOR").then(String::new));
        assert!(t.color, "an empty NO_COLOR does not count");
        assert!(Theme::from_env(&|_| None).color);
    }
}
