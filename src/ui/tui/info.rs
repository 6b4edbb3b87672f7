//! The TUI's own texts: welcome, /help, /tools, /tool NAME, /config and the `/model`
//! listing, as styled lines. Pure: reads the registry and config it is given.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::config::Config;
use crate::tools::{Registry, ToolSource};

use super::cells::{Cell, styled};
use super::commands::{self, COMMANDS};
use super::theme::Theme;

/// The keys, as (keys, what they do), for /help and the README.
pub(crate) const KEYS: &[(&str, &str)] = &[
    ("Enter", "send (queued while the model works)"),
    ("Shift+Enter, Alt+Enter, Ctrl+J", "new line"),
    ("Up / Down", "earlier inputs (on the first / last line)"),
    ("Tab", "complete a /command or a file path"),
    ("Esc, Ctrl+C", "interrupt the model or the running tool"),
    ("Shift+Tab", "approval mode: ask → auto → read-only"),
    (
        "y / n / a / s, Esc",
        "answer an approval question (yes, no, always, this session)",
    ),
    ("Ctrl+C twice, Ctrl+D", "exit (on an empty prompt)"),
    ("Ctrl+A / Ctrl+E, Home / End", "start / end of line"),
    ("Alt+B / Alt+F, Ctrl+Left / Right", "word left / right"),
    (
        "Ctrl+K / Ctrl+U / Ctrl+W",
        "delete to end / to start / word before",
    ),
];

/// The first lines: version, provider/model, folder, setup notes, a one-line key hint.
pub(crate) fn welcome(
    t: &Theme,
    ctx: &super::TuiContext,
    model: &str,
    cwd_display: &str,
) -> Vec<Line<'static>> {
    let mut out = vec![Line::from(vec![
        Span::styled("ikigai", t.heading),
        Span::styled(format!(" v{}", env!("CARGO_PKG_VERSION")), t.dim),
    ])];
    out.push(Line::from(vec![
        Span::styled("model ", t.dim),
        Span::raw(format!("{}/{}", ctx.provider.name, model)),
        Span::styled("  cwd ", t.dim),
        Span::raw(cwd_display.to_string()),
    ]));
    for note in &ctx.welcome_notes {
        out.push(styled(note.clone(), t.warning));
    }
    out.push(styled(
        "Enter sends, Shift+Enter adds a line, Esc interrupts, /help lists keys and commands.",
        t.dim,
    ));
    out
}

/// The /help cells: keys, then commands.
pub(crate) fn help(custom: &crate::ui::custom_commands::CustomCommands) -> Vec<Cell> {
    let keys = KEYS.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let commands = COMMANDS
        .iter()
        .map(|(name, arg, what)| {
            let usage = if arg.is_empty() {
                name.to_string()
            } else {
                format!("{name} {arg}")
            };
            (usage, what.to_string())
        })
        .collect();
    let mut cells = vec![
        Cell::Columns {
            title: "Keys".into(),
            rows: keys,
            notes: Vec::new(),
        },
        Cell::Columns {
            title: "Commands".into(),
            rows: commands,
            notes: vec!["Start a message with // to send a leading slash.".into()],
        },
    ];
    let rows = custom.rows();
    if !rows.is_empty() {
        cells.push(Cell::Columns {
            title: "Custom commands".into(),
            rows,
            notes: Vec::new(),
        });
    }
    cells
}

pub(crate) fn tools(registry: &Registry, t: &Theme) -> Vec<Line<'static>> {
    if registry.tools().is_empty() {
        return vec![styled("No tools are available.", t.warning)];
    }
    let mut out = vec![styled(format!("{} tools", registry.tools().len()), t.heading)];
    for tool in registry.tools() {
        let s = tool.schema();
        let from = match tool.source() {
            ToolSource::Builtin => "built-in".to_string(),
            ToolSource::External(p) => p.display().to_string(),
            ToolSource::Mcp(server) => format!("MCP server {server}"),
        };
        let desc = s.description.lines().next().unwrap_or("").to_string();
        out.push(Line::from(vec![
            Span::styled(format!("  {}", s.name), t.tool),
            Span::styled(format!("  [{from}]"), t.dim),
        ]));
        if !desc.is_empty() {
            out.push(Line::from(vec![Span::raw("    "), Span::raw(desc)]));
        }
    }
    for s in registry.skipped() {
        out.push(Line::from(vec![
            Span::styled(format!("  skipped {}", s.path.display()), t.warning),
            Span::styled(format!("  {}", s.reason), t.dim),
        ]));
    }
    out.push(styled("  /tool NAME shows a tool's schema.", t.dim));
    out
}

pub(crate) fn tool(registry: &Registry, name: Option<&str>, t: &Theme) -> Cell {
    let Some(name) = name else {
        return Cell::Notice(
            crate::protocol::NoticeLevel::Error,
            "Usage: /tool NAME (see /tools)".into(),
        );
    };
    match registry.get(name) {
        Some(tool) => {
            let json = serde_json::to_string_pretty(&tool.schema().to_protocol_json()).unwrap_or_default();
            let mut out = vec![styled(name.to_string(), t.tool)];
            out.extend(json.lines().map(|l| Line::raw(l.to_string())));
            Cell::Lines(out)
        }
        None => {
            let names: Vec<String> = registry.schemas().into_iter().map(|s| s.name).collect();
            let best = commands::nearest(name, names.iter().map(String::as_str))
                .map(|n| format!(" Did you mean {n}?"))
                .unwrap_or_else(|| " See /tools.".into());
            Cell::Notice(
                crate::protocol::NoticeLevel::Error,
                format!("No tool named {name}.{best}"),
            )
        }
    }
}

/// `/config`: the settings, with the provider in use running `model`.
pub(crate) fn config(c: &Config, provider: &crate::provider::Spec, model: &str) -> Cell {
    Cell::Columns {
        title: "Settings".into(),
        rows: crate::provider::describe(c, provider, model),
        notes: Vec::new(),
    }
}

/// The `/model` listing: the current provider in the accent colour, a missing key as a
/// warning, model lists dimmed, a failed listing as a warning line.
pub(crate) fn providers(list: &[crate::protocol::ProviderInfo], t: &Theme) -> Vec<Line<'static>> {
    let mut out = vec![styled(crate::ui::models::TITLE.to_string(), t.heading)];
    for e in crate::ui::models::entries(list) {
        let head = if e.current { t.accent } else { Style::default() };
        let key = if e.key_missing { t.warning } else { t.dim };
        out.push(Line::from(vec![
            Span::styled(e.head, head),
            Span::raw("  "),
            Span::styled(e.key, key),
        ]));
        match e.detail {
            Some(Ok(models)) => out.push(styled(format!("    {models}"), t.dim)),
            Some(Err(why)) => out.push(styled(format!("    {why}"), t.warning)),
            None => {}
        }
    }
    out
}
