//! The context budget: the model's window, the output reserve, and the estimate of a
//! request's tokens (the last reported input tokens as ground truth, plus bytes/4 of
//! what changed since). Pure bookkeeping: sends nothing, changes no conversation, and
//! knows nothing of the store.

use crate::message::{Kind, Message};
pub use crate::text::wire_chars;
use crate::tool_vocab::ToolSchema;

/// Past this share of the window, old tool results are elided on the wire.
pub const ELIDE_AT: f64 = 0.70;
/// Kept free besides the output reserve, for the estimate's own error.
pub const SAFETY: f64 = 0.05;
/// Characters per token of the estimate.
const CHARS_PER_TOKEN: u64 = 4;
/// Wire characters of one message besides its text (role, keys, ids).
const MESSAGE_OVERHEAD: u64 = 24;

/// Where the window size came from (a fallback is asked of the provider once).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowSource {
    Config,
    Preset,
    Server,
    Fallback,
}

/// What the agent knows about the budget of the current model.
#[derive(Clone, Debug)]
pub struct Budget {
    /// Context window in tokens.
    window: u64,
    source: WindowSource,
    /// Tokens kept free for the answer.
    reserve: u64,
    /// Set when `reserve` came from the config (it then survives a window change).
    reserve_fixed: bool,
    /// Share of the window at which the conversation is compacted.
    compact_at: f64,
    /// Share of the window one tool result may take.
    tool_share: f64,
    /// Estimated characters of the system prompt and tool schemas.
    fixed_chars: u64,
    /// How many tool schemas `fixed_chars` counted.
    fixed_tools: usize,
    /// Reported minus estimated tokens of the last request that got a usage report.
    offset: i64,
    /// Estimated tokens of the request sent last (before its report arrives).
    last_sent: Option<u64>,
    /// Cached wire characters per message, aligned with the conversation.
    sizes: Vec<u64>,
    /// Kind and content length of the first message `sizes` was computed for.
    first: Option<(Kind, usize)>,
    /// The provider was asked for the window already.
    probed: bool,
    /// The server is not a vendor's own endpoint: ask it even when the family table knows
    /// the model's name (a local server's window is however it was started).
    ask_server: bool,
}

impl Budget {
    /// A budget for `window` tokens; `reserve` from the config when given.
    pub fn new(
        window: u64,
        source: WindowSource,
        reserve: Option<u64>,
        compact_at: f64,
        tool_share: f64,
    ) -> Self {
        Budget {
            window,
            source,
            reserve: reserve.unwrap_or_else(|| default_reserve(window)),
            reserve_fixed: reserve.is_some(),
            compact_at,
            tool_share,
            fixed_chars: 0,
            fixed_tools: usize::MAX,
            offset: 0,
            last_sent: None,
            sizes: Vec::new(),
            first: None,
            probed: false,
            ask_server: false,
        }
    }

    /// The budget `config` implies for `model` at the provider of `spec` (without asking
    /// any server).
    pub fn from_config(config: &crate::config::Config, spec: &crate::provider::Spec, model: &str) -> Self {
        let (window, source) = window_for(config, &spec.name, spec.context_window, model);
        let mut b = Budget::new(
            window,
            source,
            spec.max_output_tokens,
            config.auto_compact_at,
            config.max_tool_result_share,
        );
        b.ask_server = asks_server(source, spec);
        b
    }

    /// `/model PROVIDER/MODEL`: the window of `model` at the provider of `spec` (named
    /// `name`), whose own configured window is `window` (0 when unknown). A server that is
    /// not a vendor's own endpoint is asked, as at start.
    pub fn provider_changed(
        &mut self,
        config: &crate::config::Config,
        spec: &crate::provider::Spec,
        window: u64,
        model: &str,
    ) {
        let (window, source) = window_for(config, &spec.name, window, model);
        self.set_window(window, source);
        self.probed = false;
        self.ask_server = asks_server(source, spec);
    }

    /// Context window in tokens.
    pub fn window(&self) -> u64 {
        self.window
    }

    /// Tokens kept free for the answer.
    pub fn reserve(&self) -> u64 {
        self.reserve
    }

    pub fn source(&self) -> WindowSource {
        self.source
    }

    /// Whether the provider should be asked for the window: nothing else knew it, or it is
    /// not a vendor's own endpoint (then its answer wins over the family table), and it was
    /// not asked yet for this model.
    pub fn needs_probe(&self) -> bool {
        (self.source == WindowSource::Fallback || self.ask_server) && !self.probed
    }

    /// The provider was asked (whatever it answered).
    pub fn probed(&mut self) {
        self.probed = true;
    }

    /// Switches to another window (a server said so, or the model changed).
    pub fn set_window(&mut self, window: u64, source: WindowSource) {
        self.window = window.max(1024);
        self.source = source;
        if !self.reserve_fixed {
            self.reserve = default_reserve(self.window);
        }
    }

    /// `set_fixed` again when the tool set changed (tools found later, `/refresh`).
    pub fn refresh_fixed(&mut self, system: &str, tools: &[ToolSchema]) {
        if self.fixed_tools != tools.len() {
            self.set_fixed(system, tools);
        }
    }

    /// Remembers the size of what every request carries besides messages.
    pub fn set_fixed(&mut self, system: &str, tools: &[ToolSchema]) {
        self.fixed_tools = tools.len();
        let tools: u64 = tools
            .iter()
            .map(|t| wire_chars(&t.to_json_schema().to_string()) + wire_chars(&t.description) + 40)
            .sum();
        self.fixed_chars = wire_chars(system) + tools + MESSAGE_OVERHEAD;
    }

    /// Tokens a request may carry: the window less the output reserve and a safety margin.
    pub fn usable(&self) -> u64 {
        let safety = (self.window as f64 * SAFETY) as u64;
        self.window.saturating_sub(self.reserve).saturating_sub(safety)
    }

    /// The estimate past which old tool output is elided.
    pub fn elide_threshold(&self) -> u64 {
        ((self.window as f64 * ELIDE_AT) as u64).min(self.usable())
    }

    /// The estimate past which the conversation is compacted.
    pub fn compact_threshold(&self) -> u64 {
        ((self.window as f64 * self.compact_at) as u64).min(self.usable())
    }

    /// Bytes one tool result may take, given the tools' own `max_output_size`.
    pub fn tool_cap(&self, max_output_size: usize) -> usize {
        let tokens = self.window as f64 * self.tool_share;
        // The result travels as escaped JSON inside the envelope: leave a fifth for that.
        let bytes = (tokens * CHARS_PER_TOKEN as f64 * 0.8) as usize;
        bytes.clamp(1024, max_output_size.max(1024))
    }

    /// Brings the per-message cache in line with `messages` (appends are cheap; a
    /// replaced conversation is measured again).
    pub fn sync(&mut self, messages: &[Message]) {
        let first = messages.first().map(|m| (m.kind, m.content.len()));
        if self.sizes.len() > messages.len() || first != self.first {
            self.sizes.clear();
            self.first = first;
        }
        if self.sizes.is_empty() {
            // A resumed conversation is sized once, with room for the next turns.
            self.sizes.reserve_exact(messages.len() + messages.len() / 16);
        }
        for m in &messages[self.sizes.len()..] {
            self.sizes.push(message_chars(m));
        }
    }

    /// Forgets the cached sizes (the conversation was replaced).
    pub fn reset_sizes(&mut self) {
        self.sizes.clear();
        self.first = None;
    }

    /// Cached wire characters of message `i` (after `sync`).
    pub fn size(&self, i: usize) -> u64 {
        self.sizes.get(i).copied().unwrap_or(0)
    }

    /// Estimated characters of the whole synced conversation, without the fixed part.
    pub fn messages_chars(&self) -> u64 {
        self.sizes.iter().sum()
    }

    /// Tokens of a request carrying `chars` message characters, calibrated by the last
    /// usage report.
    pub fn tokens(&self, chars: u64) -> u64 {
        let raw = (self.fixed_chars + chars).div_ceil(CHARS_PER_TOKEN);
        let calibrated = raw as i64 + self.offset;
        // The calibration corrects, it never halves an estimate.
        calibrated.max((raw / 2) as i64).max(0) as u64
    }

    /// Tokens of a request carrying `chars` message characters, uncalibrated (the
    /// calibration speaks for a whole request, not for a part of one).
    pub fn uncalibrated(&self, chars: u64) -> u64 {
        (self.fixed_chars + chars).div_ceil(CHARS_PER_TOKEN)
    }

    /// Tokens of `chars` message characters alone, uncalibrated and without the fixed part.
    pub fn raw_tokens(&self, chars: u64) -> u64 {
        chars.div_ceil(CHARS_PER_TOKEN)
    }

    /// A request estimated at `tokens` is being sent.
    pub fn sent(&mut self, tokens: u64) {
        self.last_sent = Some(tokens);
    }

    /// The server reported `input` tokens for the last request: calibrate, and return the
    /// share of the window it used, in percent.
    pub fn observe(&mut self, input: u64) -> Option<u32> {
        if input == 0 {
            return None;
        }
        if let Some(sent) = self.last_sent.take() {
            let raw = sent as i64 - self.offset;
            self.offset = input as i64 - raw;
        }
        Some(self.percent(input))
    }

    /// The server refused the last request as too long, maybe saying how long it was:
    /// calibrate so the same request is estimated above the window.
    pub fn refused(&mut self, reported: Option<u64>) {
        if let Some(sent) = self.last_sent.take() {
            let raw = sent as i64 - self.offset;
            let actual = reported.unwrap_or(0).max(self.window + 1).max(sent + sent / 4);
            self.offset = actual as i64 - raw;
        }
    }

    /// `tokens` as a percentage of the window.
    pub fn percent(&self, tokens: u64) -> u32 {
        ((tokens as f64 / self.window.max(1) as f64) * 100.0).round() as u32
    }
}

/// The window for `model`: the provider section's `context_window`, else the model
/// family's, else the provider preset's, else unknown (to be asked of the server).
/// Whether the provider of `spec` is asked for its window even when the family table
/// knows the model: not configured, and a Chat Completions server (the ones that answer:
/// llama.cpp, Ollama, OpenRouter) that is not a vendor's own endpoint.
fn asks_server(source: WindowSource, spec: &crate::provider::Spec) -> bool {
    source != WindowSource::Config
        && spec.kind == crate::config::WireKind::OpenAiChat
        && !crate::provider::presets::is_vendor_endpoint(&spec.base_url)
}

fn window_for(
    config: &crate::config::Config,
    provider: &str,
    window: u64,
    model: &str,
) -> (u64, WindowSource) {
    let section = config
        .providers
        .get(provider)
        .and_then(|s| s.context_window)
        .filter(|w| *w > 0);
    if let Some(w) = section {
        return (w, WindowSource::Config);
    }
    if let Some(w) = crate::provider::window::preset(model) {
        return (w, WindowSource::Preset);
    }
    if window > 0 {
        return (window, WindowSource::Preset);
    }
    (crate::provider::window::FALLBACK_WINDOW, WindowSource::Fallback)
}

/// An eighth of the window, at most 16k tokens.
fn default_reserve(window: u64) -> u64 {
    (window / 8).min(16_384)
}

/// Estimated wire characters of one message.
pub fn message_chars(m: &Message) -> u64 {
    let body = if let Some(c) = m.as_tool_call() {
        wire_chars(&c.function.arguments) + c.function.name.len() as u64 + c.id.len() as u64 + 24
    } else if let Some(r) = m.as_tool_result() {
        wire_chars(&r.output) + r.tool_call_id.len() as u64
    } else if m.kind == Kind::Compaction {
        wire_chars(&m.content) + 120
    } else {
        wire_chars(&m.content)
    };
    body + MESSAGE_OVERHEAD + m.images().len() as u64 * IMAGE_CHARS
}

/// What one image counts as, in wire characters: about 1,500 tokens, what the vendors
/// charge for an image of about a megapixel (not its base64 size, which is never text).
const IMAGE_CHARS: u64 = 6_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_is_calibrated_by_the_last_report() {
        let mut b = Budget::new(8192, WindowSource::Config, None, 0.85, 0.25);
        assert_eq!(b.reserve(), 1024);
        assert_eq!(b.tokens(4000), 1000);
        b.sent(1000);
        assert_eq!(b.observe(1300), Some(16));
        // What is added since counts bytes/4 on top of the reported 1300.
        assert_eq!(b.tokens(4400), 1400);
        b.sent(1400);
        b.refused(Some(9000));
        assert_eq!(b.tokens(4400), 9000);
    }

    #[test]
    fn caps_and_thresholds_follow_the_window() {
        let b = Budget::new(8192, WindowSource::Config, None, 0.85, 0.25);
        assert_eq!(b.tool_cap(1_048_576), 6553);
        assert_eq!(b.tool_cap(2048), 2048);
        assert!(b.elide_threshold() < b.compact_threshold());
        assert!(b.compact_threshold() <= b.usable());
        assert!(b.usable() < 8192 - 1024);
    }

    #[test]
    fn sizes_follow_appends_and_replacement() {
        let mut b = Budget::new(8192, WindowSource::Config, None, 0.85, 0.25);
        let mut msgs = vec![Message::user("a\"b"), Message::assistant("hello")];
        b.sync(&msgs);
        assert_eq!(b.size(0), 4 + MESSAGE_OVERHEAD);
        msgs.push(Message::tool_result("c", "bash", "ok", "{\"x\":1}", true));
        b.sync(&msgs);
        // `{"x":1}` escapes its two quotes; the id counts too.
        assert_eq!(b.messages_chars(), (4 + 5 + (9 + 1)) + 3 * MESSAGE_OVERHEAD);
        let replaced = vec![Message::compaction("sum", 3, 0)];
        b.sync(&replaced);
        assert_eq!(b.size(0), 3 + 120 + MESSAGE_OVERHEAD);
    }
}
