//! How the engine picks each token: freely (a mild repetition penalty, then temperature and
//! top-p, or greedy) in text, and
//! under the exec-tag grammar (`grammar`) from the moment the model opens an exec tag until
//! the tag is closed. Text outside tags is never constrained. Owns the tag scanner of the
//! response (the text protocol's one, shared with every other provider); knows nothing of
//! the KV cache or the job's channel.
//!
//! Why not llama.cpp's lazy grammar with a trigger: `llama-cpp-2` (without its `common`
//! feature, which this build does not compile) reaches it only through the C API, where a
//! trigger whose matched text the grammar rejects throws through C and aborts the process.
//! Here the trigger is the scanner: when a sampled token opens a tag and goes on into the
//! body, only its text up to the tag's end is kept (the caller decodes that text instead of
//! the token) and the body is sampled again under a fresh, non-lazy grammar. A grammar
//! llama.cpp rejects leaves sampling unconstrained (`grammar_error` says why).

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;

use super::grammar;
use super::settings::LocalSettings;
use crate::provider::text_protocol::calls::SHELL_TOOL;
use crate::provider::text_protocol::tags::{OUTPUT_CLOSE, Piece, Scanner};
use crate::tool_vocab::ToolSchema;

/// What one sampled token's text gave.
pub(crate) struct Step {
    /// Text and commands the scanner is sure of.
    pub pieces: Vec<Piece>,
    /// Set when the token opened an exec tag and went on into its body: the text to keep
    /// (up to the tag's end) in place of the token.
    pub head: Option<String>,
}

pub(crate) struct Sampling<'m> {
    model: &'m LlamaModel,
    free: LlamaSampler,
    /// Active while an exec tag is open.
    grammar: Option<LlamaSampler>,
    /// The grammar's text; `None` when constraining is off or the grammar failed to load.
    gbnf: Option<String>,
    pub scanner: Scanner,
    /// Tokens sampled under the grammar.
    pub constrained: u32,
    pub grammar_error: Option<String>,
}

/// The text a continuation adds after the last output block (the part of the response
/// the scanner has not seen in an earlier job).
fn unseen(continuation: &str) -> &str {
    continuation
        .rfind(OUTPUT_CLOSE)
        .map_or(continuation, |i| &continuation[i + OUTPUT_CLOSE.len()..])
}

/// The command of a complete tag that ends a continuation (a prefilled call), in any form
/// the scanner accepts; it runs before anything is sampled.
pub(crate) fn trailing_call(continuation: &str, tools: &[ToolSchema]) -> Option<String> {
    let names = tools.iter().map(|t| t.name.clone()).collect();
    let mut scanner = Scanner::with_tools(names);
    match scanner.push(unseen(continuation)).pop() {
        Some(Piece::Exec(c)) if scanner.open_command().is_none() => Some(c),
        _ => None,
    }
}

fn free_chain(s: &LocalSettings, n_vocab: i32) -> LlamaSampler {
    // A mild penalty on tokens of the last 64: small models otherwise copy a tool's output
    // on and on after answering.
    let penalty = LlamaSampler::penalties(n_vocab, 64, 1.1, 0.0, 0.0);
    if s.temperature <= 0.0 {
        return LlamaSampler::chain_simple([penalty, LlamaSampler::greedy()]);
    }
    LlamaSampler::chain_simple([
        penalty,
        LlamaSampler::top_p(s.top_p, 1),
        LlamaSampler::temp(s.temperature),
        LlamaSampler::dist(s.seed),
    ])
}

/// Whether `grammar` allows `token` next (applied to that one candidate alone).
fn allows(grammar: &mut LlamaSampler, token: LlamaToken) -> bool {
    let mut one = LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, 0.0, 0.0)], false);
    one.apply_sampler(grammar);
    one.data.first().is_some_and(|d| d.logit().is_finite())
}

impl<'m> Sampling<'m> {
    pub fn new(model: &'m LlamaModel, settings: &LocalSettings, tools: &[ToolSchema]) -> Self {
        let names = tools
            .iter()
            .filter(|t| t.name != SHELL_TOOL)
            .map(|t| t.name.clone())
            .collect();
        Sampling {
            model,
            free: free_chain(settings, model.n_vocab()),
            grammar: None,
            gbnf: settings.constrain.then(|| {
                settings
                    .exec_grammar
                    .clone()
                    .unwrap_or_else(|| grammar::exec_body(tools))
            }),
            scanner: Scanner::with_tools(names),
            constrained: 0,
            grammar_error: None,
        }
    }

    /// The response continues `continuation` (after a tool's output, or a prefilled
    /// tag): the scanner learns its last part, and an exec tag it leaves open is
    /// constrained from the first token.
    pub fn resume(&mut self, continuation: &str) {
        let mut probe = self.scanner.clone();
        probe.push(unseen(continuation));
        if probe.open_command().is_some_and(|b| b.is_empty()) {
            self.scanner = probe;
            self.constrain();
        }
    }

    /// The next token. Under the grammar, as llama.cpp's own sampler does it: the token
    /// sampled freely is kept when the grammar allows it (the grammar then checks one
    /// candidate, not the whole vocabulary); otherwise the grammar filters every candidate
    /// first and the free chain picks among what is left.
    pub fn sample(&mut self, ctx: &LlamaContext<'_>) -> LlamaToken {
        let token = self.free.sample(ctx, -1);
        let Some(g) = &mut self.grammar else {
            return token;
        };
        self.constrained += 1;
        if allows(g, token) {
            g.accept(token);
            return token;
        }
        let mut all = ctx.token_data_array_ith(-1);
        all.apply_sampler(g);
        all.apply_sampler(&mut self.free);
        match all.selected.and_then(|i| all.data.get(i)) {
            // llama.cpp aborts on accepting a token its grammar does not allow: only a
            // token left finite by the grammar is accepted.
            Some(d) if d.logit().is_finite() => {
                let token = d.id();
                g.accept(token);
                self.free.accept(token);
                token
            }
            // Nothing is allowed (cannot happen with a grammar that always has a way on):
            // the response ends rather than break the grammar.
            _ => {
                self.grammar = None;
                self.gbnf = None;
                self.model.vocab().eos()
            }
        }
    }

    /// Scans a sampled token's text.
    pub fn push(&mut self, text: &str) -> Step {
        if self.grammar.is_some() || self.scanner.open_command().is_some() {
            return Step {
                pieces: self.scanner.push(text),
                head: None,
            };
        }
        let mut probe = self.scanner.clone();
        let pieces = probe.push(text);
        let Some(body) = probe.open_command() else {
            self.scanner = probe;
            return Step { pieces, head: None };
        };
        if body.is_empty() {
            self.scanner = probe;
            self.constrain();
            return Step { pieces, head: None };
        }
        // The tag ended inside this token: keep the text up to its end, sample the rest.
        if self.gbnf.is_some()
            && let Some(head) = text.strip_suffix(body.as_str())
        {
            let mut cut = self.scanner.clone();
            let head_pieces = cut.push(head);
            if cut.open_command().is_some_and(|b| b.is_empty()) {
                self.scanner = cut;
                self.constrain();
                if self.grammar.is_some() {
                    return Step {
                        pieces: head_pieces,
                        head: Some(head.to_string()),
                    };
                }
                // The grammar did not load: go on with the whole token, unconstrained.
                self.scanner.push(&body);
                return Step { pieces, head: None };
            }
        }
        self.scanner = probe;
        Step { pieces, head: None }
    }

    /// Starts sampling under the grammar (once; a grammar that fails is not retried).
    fn constrain(&mut self) {
        let Some(gbnf) = &self.gbnf else {
            return;
        };
        match LlamaSampler::grammar(self.model, gbnf, grammar::ROOT) {
            Ok(g) => self.grammar = Some(g),
            Err(e) => {
                let why = format!("the exec-tag grammar did not load ({e}); sampling unconstrained");
                if crate::environ::var_os("IKIGAI_LLAMA_LOG").is_some() {
                    eprintln!("ikigai: {why}");
                }
                self.grammar_error = Some(why);
                self.gbnf = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::Registry;

    #[test]
    fn a_continuation_ending_in_a_complete_tag_of_any_accepted_form_names_its_command() {
        let tools = Registry::builtin().schemas();
        let call = |c: &str| trailing_call(c, &tools);
        assert_eq!(
            call("ok <||SYSTEM.EXEC>echo hi<SYSTEM.EXEC||>").as_deref(),
            Some("echo hi")
        );
        assert_eq!(call("<||system.exec>ls<system.exec||>").as_deref(), Some("ls"));
        assert_eq!(
            call("<||file_read(path=\"x\")||>").as_deref(),
            Some("file_read(path=\"x\")")
        );
        assert_eq!(call("<||SYSTEM.EXEC>a<SYSTEM.EXEC||> done"), None);
        assert_eq!(call("stray <SYSTEM.EXEC||>"), None);
        assert_eq!(call("<||SYSTEM.EXEC>ls"), None, "still open: the model goes on");
        // A call already answered by its output block is not run again.
        assert_eq!(
            call("<||SYSTEM.EXEC>ls<SYSTEM.EXEC||>\n<||SYSTEM.OUTPUT>\na\n<SYSTEM.OUTPUT||>\n"),
            None
        );
    }
}
