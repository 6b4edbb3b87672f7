//! The engine thread: loads the model once, owns the llama.cpp context, and serves jobs in
//! order. Per job it renders the prompt, keeps the longest cached prefix (compared as text
//! on token boundaries, so sampled tokens match however the tokenizer would split them),
//! drops the rest from the KV cache, decodes only the new suffix, then samples, streaming
//! text and pausing after a complete exec tag. Never touches the async runtime.

use std::num::NonZeroU32;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, mpsc};
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::{LlamaChatMessage, LlamaChatTemplate, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use tokio::sync::watch;

use super::load::{LoadError, backend, load_model};
use super::messages::{Counters, EngineError, EngineEvent, Finish, Job, Status};
use super::render::ChatPrompt;
use super::sampling::{Sampling, trailing_call};
use super::settings::LocalSettings;
use super::tag::OutputGuard;
use crate::provider::text_protocol::tags::{End, Piece};

/// Prompt tokens decoded per llama.cpp call (also the cancel granularity while prefilling).
const BATCH: u32 = 512;

pub const CHATML_NOTICE: &str = "the model's chat template cannot be applied by llama.cpp; using ChatML";

/// The tokens in the KV cache (sequence 0) and the text they stand for.
#[derive(Default)]
struct Cache {
    tokens: Vec<LlamaToken>,
    /// Byte offset in `text` where each token ends.
    ends: Vec<usize>,
    text: Vec<u8>,
}

impl Cache {
    fn end_of(&self, n: usize) -> usize {
        if n == 0 { 0 } else { self.ends[n - 1] }
    }

    fn truncate(&mut self, n: usize) {
        let end = self.end_of(n);
        self.tokens.truncate(n);
        self.ends.truncate(n);
        self.text.truncate(end);
    }

    fn push(&mut self, token: LlamaToken, piece: &[u8]) {
        self.text.extend_from_slice(piece);
        self.tokens.push(token);
        self.ends.push(self.text.len());
    }

    fn len(&self) -> u32 {
        self.tokens.len() as u32
    }
}

struct Worker<'m> {
    model: &'m LlamaModel,
    ctx: LlamaContext<'m>,
    template: Option<LlamaChatTemplate>,
    settings: LocalSettings,
    cache: Cache,
    batch: LlamaBatch<'static>,
    counters: Arc<Mutex<Counters>>,
}

pub fn run(
    settings: LocalSettings,
    jobs: mpsc::Receiver<Job>,
    status: watch::Sender<Status>,
    counters: Arc<Mutex<Counters>>,
) {
    let started = Instant::now();
    let (model, info) = match load_model(&settings.model_path, settings.gpu_layers) {
        Ok(m) => m,
        Err(e) => return fail_all(&jobs, &status, e),
    };
    let context_error = |message: String| LoadError::Failed {
        path: settings.model_path.clone(),
        message,
    };
    let backend = match backend() {
        Ok(b) => b,
        Err(m) => return fail_all(&jobs, &status, context_error(m)),
    };
    let threads = settings.threads.max(1) as i32;
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(settings.ctx.max(16)))
        .with_n_batch(BATCH)
        .with_n_ubatch(BATCH)
        .with_n_threads(threads)
        .with_n_threads_batch(threads);
    let ctx = match model.new_context(backend, params) {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot create a context of {} tokens: {e}", settings.ctx);
            return fail_all(&jobs, &status, context_error(msg));
        }
    };
    let (template, notice) = pick_template(&model);
    if let Ok(mut c) = counters.lock() {
        c.load_ms = started.elapsed().as_secs_f64() * 1000.0;
        c.n_ctx = ctx.n_ctx();
    }
    status.send_replace(Status::Ready {
        name: info.name,
        notice: notice.map(str::to_string),
    });
    let mut w = Worker {
        model: &model,
        ctx,
        template,
        settings,
        cache: Cache::default(),
        batch: LlamaBatch::new(BATCH as usize, 1),
        counters,
    };
    while let Ok(job) = jobs.recv() {
        let event = match w.serve(&job) {
            Ok(e) => e,
            Err(e) => EngineEvent::Failed(e),
        };
        let _ = job.events.send(event);
    }
}

/// Loading failed: every job, now and later, gets the load error.
fn fail_all(jobs: &mpsc::Receiver<Job>, status: &watch::Sender<Status>, e: LoadError) {
    status.send_replace(Status::Failed(e.clone()));
    while let Ok(job) = jobs.recv() {
        let _ = job.events.send(EngineEvent::Failed(EngineError::Load(e.clone())));
    }
}

/// The GGUF's template when llama.cpp can apply it, else ChatML with a notice.
fn pick_template(model: &LlamaModel) -> (Option<LlamaChatTemplate>, Option<&'static str>) {
    let probe = LlamaChatMessage::new("user".into(), "hi".into());
    if let (Ok(t), Ok(p)) = (model.chat_template(None), probe)
        && model.apply_chat_template(&t, &[p], true).is_ok()
    {
        return (Some(t), None);
    }
    (None, Some(CHATML_NOTICE))
}

/// ChatML, for models whose template llama.cpp cannot apply.
fn chatml(prompt: &ChatPrompt) -> String {
    let mut s = String::new();
    for (role, content) in &prompt.turns {
        s.push_str(&format!("<|im_start|>{role}\n{content}<|im_end|>\n"));
    }
    s.push_str("<|im_start|>assistant\n");
    s
}

/// Takes the longest valid UTF-8 prefix of `buf` (a token may end inside a character).
fn take_utf8(buf: &mut Vec<u8>) -> String {
    let valid = match std::str::from_utf8(buf) {
        Ok(s) => s.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        // Invalid bytes: show them replaced rather than stall.
        Err(_) => buf.len(),
    };
    let rest = buf.split_off(valid);
    let text = String::from_utf8_lossy(buf).into_owned();
    *buf = rest;
    text
}

/// `text` as tokens, with the text each one ends (for the cache). When the pieces do not
/// spell the text back, the whole text goes with the first token and all of them end
/// there, so they are reused all together or not at all.
fn tokens_of(model: &LlamaModel, text: &str, special: bool) -> (Vec<LlamaToken>, Vec<Vec<u8>>) {
    let vocab = model.vocab();
    let tokens = vocab.tokenize(text.as_bytes(), false, special);
    let pieces: Vec<Vec<u8>> = tokens
        .iter()
        .map(|t| vocab.token_to_piece(*t, true, None))
        .collect();
    if pieces.concat() == text.as_bytes() || tokens.is_empty() {
        return (tokens, pieces);
    }
    let mut pieces = vec![text.as_bytes().to_vec()];
    pieces.extend(std::iter::repeat_n(Vec::new(), tokens.len() - 1));
    (tokens, pieces)
}

fn llama(e: impl std::fmt::Display) -> EngineError {
    EngineError::Llama(e.to_string())
}

impl Worker<'_> {
    fn render(&self, prompt: &ChatPrompt) -> Result<String, EngineError> {
        let mut text = match &self.template {
            Some(t) => {
                let msgs = prompt
                    .turns
                    .iter()
                    .map(|(r, c)| LlamaChatMessage::new(r.clone(), c.clone()))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(llama)?;
                self.model.apply_chat_template(t, &msgs, true).map_err(llama)?
            }
            None => chatml(prompt),
        };
        if let Some(c) = &prompt.continuation {
            text.push_str(c);
        }
        Ok(text)
    }

    fn set_counters(&self, f: impl FnOnce(&mut Counters)) {
        if let Ok(mut c) = self.counters.lock() {
            f(&mut c);
            c.position = self.cache.len();
        }
    }

    /// Decodes `tokens` at the end of the cache; logits only for the last one.
    fn decode(&mut self, tokens: &[LlamaToken], pieces: &[Vec<u8>]) -> Result<(), EngineError> {
        self.batch.clear();
        let start = self.cache.len() as i32;
        for (i, t) in tokens.iter().enumerate() {
            let last = i + 1 == tokens.len();
            self.batch.add(*t, start + i as i32, &[0], last).map_err(llama)?;
        }
        if let Err(e) = self.ctx.decode(&mut self.batch) {
            // The KV cache may hold part of the batch: start over rather than guess.
            self.ctx.clear_kv_cache();
            self.cache.truncate(0);
            return Err(llama(e));
        }
        for (t, p) in tokens.iter().zip(pieces) {
            self.cache.push(*t, p);
        }
        Ok(())
    }

    fn serve(&mut self, job: &Job) -> Result<EngineEvent, EngineError> {
        let started = Instant::now();
        let prompt = self.render(&job.prompt)?;
        let n_ctx = self.ctx.n_ctx();

        // 1. Keep the longest cached prefix that ends on a token and character boundary.
        let common = self
            .cache
            .text
            .iter()
            .zip(prompt.as_bytes())
            .take_while(|(a, b)| a == b)
            .count();
        let mut keep = self.cache.ends.partition_point(|&e| e <= common);
        if keep > 0 && self.cache.end_of(keep) >= prompt.len() {
            keep -= 1; // nothing new: re-decode the last token for its logits
        }
        // Never split a character, nor a run of tokens that share one end offset (their
        // text is only known as a whole).
        let ends = &self.cache.ends;
        while keep > 0
            && (!prompt.is_char_boundary(ends[keep - 1])
                || (keep < ends.len() && ends[keep] == ends[keep - 1]))
        {
            keep -= 1;
        }
        if !matches!(
            self.ctx.clear_kv_cache_seq(Some(0), Some(keep as u32), None),
            Ok(true)
        ) {
            self.ctx.clear_kv_cache();
            keep = 0;
        }
        self.cache.truncate(keep);
        let reused = keep as u32;

        // 2. Tokenize the new suffix; BOS (if the model wants one) starts an empty cache.
        let model = self.model;
        let vocab = model.vocab();
        let suffix = &prompt[self.cache.end_of(keep)..];
        let mut tokens = Vec::new();
        let mut pieces: Vec<Vec<u8>> = Vec::new();
        if keep == 0 && vocab.should_add_bos() {
            tokens.push(vocab.bos());
            pieces.push(Vec::new());
        }
        let (body, body_pieces) = tokens_of(model, suffix, true);
        pieces.extend(body_pieces);
        tokens.extend(body);
        if tokens.is_empty() {
            return Err(EngineError::Llama("the prompt rendered to no tokens".into()));
        }
        let needed = self.cache.len() + tokens.len() as u32;
        if needed >= n_ctx {
            self.set_counters(|c| c.jobs += 1);
            return Err(EngineError::ContextFull {
                needed: needed + 1,
                n_ctx,
            });
        }

        // 3. Prefill, in batches, cancellable between them.
        let decoded = tokens.len() as u32;
        let decoding = Instant::now();
        for (t, p) in tokens.chunks(BATCH as usize).zip(pieces.chunks(BATCH as usize)) {
            if job.cancel.load(Ordering::Relaxed) {
                let prompt_tokens = self.cache.len();
                self.set_counters(|c| {
                    c.jobs += 1;
                    c.reused = reused;
                    c.decoded = decoded;
                    c.generated = 0;
                });
                return Ok(EngineEvent::Finished {
                    finish: Finish::Cancelled,
                    prompt_tokens,
                    reused,
                    generated: 0,
                });
            }
            self.decode(t, p)?;
        }
        let prompt_tokens = self.cache.len();
        let decode_ms = decoding.elapsed().as_secs_f64() * 1000.0;
        let prefill_ms = started.elapsed().as_secs_f64() * 1000.0;
        self.set_counters(|c| {
            c.jobs += 1;
            c.prompt_tokens = prompt_tokens;
            c.reused = reused;
            c.decoded = decoded;
            c.generated = 0;
            c.prefill_ms = prefill_ms;
            c.decode_ms = decode_ms;
            c.first_token_ms = 0.0;
            c.generation_ms = 0.0;
        });

        // 4. A prompt that ends in a complete tag pauses at once: its command runs next.
        let tools = &job.tools;
        if let Some(cmd) = job
            .prompt
            .continuation
            .as_deref()
            .and_then(|c| trailing_call(c, tools))
        {
            let _ = job.events.send(EngineEvent::Exec(cmd));
            return Ok(EngineEvent::Finished {
                finish: Finish::Exec,
                prompt_tokens,
                reused,
                generated: 0,
            });
        }
        self.generate(job, prompt_tokens, reused, started)
    }

    fn generate(
        &mut self,
        job: &Job,
        prompt_tokens: u32,
        reused: u32,
        started: Instant,
    ) -> Result<EngineEvent, EngineError> {
        let mut sampling = Sampling::new(self.model, &self.settings, &job.tools);
        // A continuation that ends inside an open exec tag is constrained from the start.
        if let Some(c) = job.prompt.continuation.as_deref() {
            sampling.resume(c);
        }
        let max = job.max_tokens.unwrap_or(self.settings.max_output_tokens);
        let n_ctx = self.ctx.n_ctx();
        let mut utf8 = Vec::new();
        let mut generated = 0u32;
        let mut first: Option<Instant> = None;
        let mut exec: Option<String> = None;
        let send = |e: EngineEvent| job.events.send(e).is_ok();
        // Text goes out through the guard against made-up output blocks; true when one began.
        let mut guard = OutputGuard::default();
        let mut made_up = false;
        let mut send_text = |pieces: Vec<Piece>, exec: &mut Option<String>| {
            let mut made_up = false;
            for p in pieces {
                match p {
                    Piece::Text(t) if exec.is_none() && !made_up => {
                        let (shown, stop) = guard.push(&t);
                        if !shown.is_empty() {
                            send(EngineEvent::Text(shown));
                        }
                        made_up = stop;
                    }
                    Piece::Exec(c) if exec.is_none() && !made_up => *exec = Some(c),
                    _ => {}
                }
            }
            made_up
        };
        let finish = loop {
            if job.cancel.load(Ordering::Relaxed) || job.events.is_closed() {
                break Finish::Cancelled;
            }
            if generated >= max {
                break Finish::Length;
            }
            let token = sampling.sample(&self.ctx);
            if first.is_none() {
                first = Some(Instant::now());
                let ms = started.elapsed().as_secs_f64() * 1000.0;
                self.set_counters(|c| c.first_token_ms = ms);
            }
            if self.model.vocab().is_eog(token) {
                break Finish::Stop;
            }
            if self.cache.len() + 1 >= n_ctx {
                let mut dropped = None;
                send_text(sampling.scanner.finish(End::Length), &mut dropped);
                self.set_counters(|c| c.generated = generated);
                return Err(EngineError::ContextFull {
                    needed: n_ctx + 1,
                    n_ctx,
                });
            }
            let piece = self.model.vocab().token_to_piece(token, true, None);
            utf8.extend_from_slice(&piece);
            let text = take_utf8(&mut utf8);
            let step = sampling.push(&text);
            if send_text(step.pieces, &mut exec) {
                // The model began writing a command's output itself: its turn ends here.
                self.decode(&[token], &[piece])?;
                generated += 1;
                made_up = true;
                break Finish::Stop;
            }
            if let Some(cmd) = &exec {
                // Announce first, so the command starts while the closing tag is decoded.
                send(EngineEvent::Exec(cmd.clone()));
            }
            match step.head {
                // The token opened a tag and went on into its body: only its text up to the
                // tag's end is kept; the body is sampled again, under the grammar.
                Some(head) => {
                    utf8.clear();
                    let (tokens, pieces) = tokens_of(self.model, &head, false);
                    if !tokens.is_empty() {
                        self.decode(&tokens, &pieces)?;
                    }
                }
                None => self.decode(&[token], &[piece])?,
            }
            generated += 1;
            if exec.is_some() {
                break Finish::Exec;
            }
        };
        let end = if finish == Finish::Stop {
            End::Stop
        } else {
            End::Length
        };
        // A one-line command left open when the model stopped still runs.
        let mut late = None;
        if exec.is_none() && !made_up {
            let mut tail = sampling.scanner.finish(end);
            let rest = take_utf8(&mut utf8);
            if !rest.is_empty() {
                tail.push(Piece::Text(rest));
            }
            send_text(tail, &mut late);
            let rest = guard.finish();
            if !rest.is_empty() {
                send(EngineEvent::Text(rest));
            }
        }
        let finish = match late {
            Some(cmd) => {
                send(EngineEvent::Exec(cmd));
                Finish::Exec
            }
            None => finish,
        };
        let gen_ms = first.map_or(0.0, |f| f.elapsed().as_secs_f64() * 1000.0);
        let (constrained, grammar_error) = (sampling.constrained, sampling.grammar_error.clone());
        self.set_counters(|c| {
            c.generated = generated;
            c.generation_ms = gen_ms;
            c.constrained = constrained;
            c.grammar_error = grammar_error;
        });
        Ok(EngineEvent::Finished {
            finish,
            prompt_tokens,
            reused,
            generated,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_inside_a_character_waits_for_the_rest() {
        let mut b = "é".as_bytes()[..1].to_vec();
        assert_eq!(take_utf8(&mut b), "");
        b.extend_from_slice(&"é".as_bytes()[1..]);
        assert_eq!(take_utf8(&mut b), "é");
        assert!(b.is_empty());
    }
}
