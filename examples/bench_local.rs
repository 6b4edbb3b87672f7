//! Measures the in-process engine against llama.cpp's own server on the same model,
//! prompt and thread count: load time, time to first token, prompt and generation
//! tokens/s, one tool round trip (closing tag → first token after the output) and peak
//! RSS. Run by scripts/bench-local.sh, which starts the server; prints one JSON object.
//! Usage: bench_local MODEL.gguf [--server URL] [--threads N] [--ctx N] [--gen N]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use ikigai::provider::local::LocalSettings;
use ikigai::provider::local::engine::{Engine, EngineEvent};
use ikigai::provider::local::render::{self, ChatPrompt};
use ikigai::provider::local::tag::{exec_block, output_block};
use ikigai::provider::sse::SseDecoder;
use ikigai::tools::bash::Bash;
use ikigai::tools::{Envelope, Tool, ToolContext};
use serde_json::{Value, json};

const SYSTEM: &str = "You are a careful senior engineer. Answer precisely.";
const COMMAND: &str = "uname -s; echo round-trip";

fn user_prompt() -> String {
    let code = include_str!("../src/provider/local/tag.rs");
    let code: String = code.chars().take(2400).collect();
    format!(
        "Here is a Rust module:\n\n```rust\n{code}\n```\n\nExplain in detail, step by step, what this code does and how it could fail."
    )
}

/// The conversation a tool round trip happens in: the long prompt, then a command.
fn round_trip_prompt() -> String {
    format!("{}\n\nFirst run uname.", user_prompt())
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn peak_rss_mib(pid: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|k| k.parse::<f64>().ok())
        .map_or(0.0, |k| k / 1024.0)
}

async fn run_bash() -> String {
    let ctx = ToolContext::new(std::env::temp_dir(), 64 * 1024, Duration::from_secs(10));
    let out = Bash
        .call(json!({ "command": COMMAND }), &ctx)
        .await
        .expect("bash");
    output_block(&render::plain_output(&Envelope::of_output(&out).to_string()))
}

/// Runs a job; returns (events, time of the first text event).
async fn job(engine: &Engine, prompt: ChatPrompt, max: u32) -> (Vec<EngineEvent>, Option<Instant>) {
    let (mut rx, _c) = engine.start(prompt, Some(max));
    let mut events = Vec::new();
    let mut first = None;
    while let Some(e) = rx.recv().await {
        if first.is_none() && matches!(e, EngineEvent::Text(_)) {
            first = Some(Instant::now());
        }
        let last = matches!(e, EngineEvent::Finished { .. } | EngineEvent::Failed(_));
        events.push(e);
        if last {
            break;
        }
    }
    (events, first)
}

async fn in_process(model: &str, threads: u32, ctx: u32, gen_n: u32) -> (Value, Engine) {
    let mut s = LocalSettings::new(model);
    s.threads = threads;
    s.ctx = ctx;
    s.temperature = 0.0;
    let t = Instant::now();
    let engine = Engine::spawn(s).expect("engine");
    engine.ready().await.expect("model loads");
    let load_ms = t.elapsed().as_secs_f64() * 1000.0;

    let base = ChatPrompt {
        turns: vec![("system".into(), SYSTEM.into()), ("user".into(), user_prompt())],
        continuation: None,
    };
    // First token = the first sampled token (the engine's own clock from the job's start):
    // the text matcher may hold a piece back while it could still begin a tag.
    job(&engine, base.clone(), gen_n).await;
    let c = engine.counters();
    let ttft_ms = c.first_token_ms;
    // Decoding alone, as llama-server's `timings.prompt_per_second` counts it (its
    // template and tokenizer run before); rendering and tokenizing are reported apart.
    let prompt_tps = f64::from(c.decoded) * 1000.0 / c.decode_ms;
    let prepare_ms = c.prefill_ms - c.decode_ms;

    // Tool round trip: the prompt ends at a closing tag (the engine pauses there), the
    // command runs through the bash tool, the output block is decoded, first token.
    let mut p = base.clone();
    p.turns[1].1 = round_trip_prompt();
    p.continuation = Some(exec_block(COMMAND));
    job(&engine, p.clone(), 4).await;
    let t0 = Instant::now();
    let block = run_bash().await;
    p.continuation = Some(format!("{}{block}", exec_block(COMMAND)));
    let dispatch_ms = t0.elapsed().as_secs_f64() * 1000.0;
    job(&engine, p, 4).await;
    let rt = engine.counters();
    let rt_ms = dispatch_ms + rt.first_token_ms;
    let out = json!({
        "load_ms": load_ms,
        "ttft_ms": ttft_ms,
        "prompt_tokens": c.decoded,
        "prompt_tps": prompt_tps,
        "prompt_prepare_ms": prepare_ms,
        "generated": c.generated,
        "gen_tps": c.generation_tps(),
        "round_trip_ms": rt_ms,
        "round_trip_decoded": rt.decoded,
        "peak_rss_mib": peak_rss_mib("self"),
    });
    (out, engine)
}

/// The long prompt, made different from run `r`'s on (so neither side reuses a cache).
fn variant(r: u32) -> String {
    format!("(Review {r}.)\n{}", user_prompt())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// Prompt and generation tokens/s, `reps` times each side, alternating (in-process, then
/// server, then in-process…) so a slow spell of the machine hits both alike; medians.
async fn alternating(engine: &Engine, url: &str, gen_n: u32, reps: u32) -> Value {
    let client = reqwest::Client::new();
    let (mut ip_prompt, mut ip_gen, mut sv_prompt, mut sv_gen) = (vec![], vec![], vec![], vec![]);
    for r in 0..reps {
        let p = ChatPrompt {
            turns: vec![("system".into(), SYSTEM.into()), ("user".into(), variant(r))],
            continuation: None,
        };
        job(engine, p, gen_n).await;
        let c = engine.counters();
        ip_prompt.push(f64::from(c.decoded) * 1000.0 / c.decode_ms);
        ip_gen.push(c.generation_tps());
        let msgs = json!([{"role": "system", "content": SYSTEM}, {"role": "user", "content": variant(r)}]);
        let (_, _, v) = chat(
            &client,
            url,
            json!({"messages": msgs, "max_tokens": gen_n, "temperature": 0, "cache_prompt": false}),
        )
        .await;
        sv_prompt.push(v["timings"]["prompt_per_second"].as_f64().unwrap_or(0.0));
        sv_gen.push(v["timings"]["predicted_per_second"].as_f64().unwrap_or(0.0));
    }
    json!({
        "reps": reps,
        "in_process": {"prompt_tps": median(ip_prompt.clone()), "gen_tps": median(ip_gen.clone()),
                        "prompt_tps_runs": ip_prompt, "gen_tps_runs": ip_gen},
        "server": {"prompt_tps": median(sv_prompt.clone()), "gen_tps": median(sv_gen.clone()),
                    "prompt_tps_runs": sv_prompt, "gen_tps_runs": sv_gen},
    })
}

async fn chat(client: &reqwest::Client, url: &str, body: Value) -> (Instant, Option<Instant>, Value) {
    let t = Instant::now();
    let resp = client
        .post(format!("{url}/chat/completions"))
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .send()
        .await
        .expect("server");
    if body["stream"] != json!(true) {
        let v: Value = serde_json::from_slice(&resp.bytes().await.expect("body")).expect("json");
        return (t, None, v);
    }
    let mut chunks = resp.bytes_stream();
    let mut sse = SseDecoder::new(1 << 20);
    let mut first = None;
    let mut datas = Vec::new();
    'read: while let Some(Ok(bytes)) = chunks.next().await {
        sse.push(&bytes, &mut datas).expect("sse");
        for data in datas.drain(..) {
            if data == "[DONE]" {
                break 'read;
            }
            let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            let delta = v["choices"][0]["delta"]["content"].as_str().unwrap_or("");
            if first.is_none() && !delta.is_empty() {
                first = Some(Instant::now());
            }
        }
    }
    (t, first, Value::Null)
}

async fn server(url: &str, gen_n: u32) -> Value {
    let client = reqwest::Client::new();
    let msgs = json!([{"role": "system", "content": SYSTEM}, {"role": "user", "content": user_prompt()}]);
    // Throughput from the server's own timings (no prompt cache), then time to first token.
    let (_, _, v) = chat(
        &client,
        url,
        json!({"messages": msgs, "max_tokens": gen_n, "temperature": 0, "cache_prompt": false}),
    )
    .await;
    let timings = v["timings"].clone();
    let (t, first, _) = chat(
        &client,
        url,
        json!({"messages": msgs, "max_tokens": 4, "temperature": 0, "cache_prompt": false, "stream": true}),
    )
    .await;
    let ttft_ms = first.map_or(0.0, |f| (f - t).as_secs_f64() * 1000.0);
    // Round trip over HTTP: the assistant message so far ends at the closing tag (cached
    // by the server), the command runs, the next request continues that message.
    let mut prefix = vec![
        json!({"role": "system", "content": SYSTEM}),
        json!({"role": "user", "content": round_trip_prompt()}),
    ];
    prefix.push(json!({"role": "assistant", "content": exec_block(COMMAND)}));
    chat(
        &client,
        url,
        json!({"messages": prefix, "max_tokens": 1, "temperature": 0}),
    )
    .await;
    let t0 = Instant::now();
    let block = run_bash().await;
    prefix.pop();
    prefix.push(json!({"role": "assistant", "content": format!("{}{block}", exec_block(COMMAND))}));
    let dispatch = t0.elapsed();
    let (_, first, _) = chat(
        &client,
        url,
        json!({"messages": prefix, "max_tokens": 4, "temperature": 0, "stream": true}),
    )
    .await;
    let rt_ms = first.map_or(0.0, |f| (f - t0).as_secs_f64() * 1000.0);
    // The same request when the server cannot reuse its cache (another conversation was
    // served meanwhile, or prompt caching is off): it re-reads the whole conversation.
    let (t2, cold, _) = chat(
        &client,
        url,
        json!({"messages": prefix, "max_tokens": 4, "temperature": 0, "stream": true, "cache_prompt": false}),
    )
    .await;
    let rt_cold_ms = cold.map_or(0.0, |f| (dispatch + (f - t2)).as_secs_f64() * 1000.0);
    json!({
        "ttft_ms": ttft_ms,
        "prompt_tokens": timings["prompt_n"],
        "prompt_tps": timings["prompt_per_second"],
        "generated": timings["predicted_n"],
        "gen_tps": timings["predicted_per_second"],
        "round_trip_ms": rt_ms,
        "round_trip_uncached_ms": rt_cold_ms,
    })
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let model = args
        .get(1)
        .cloned()
        .expect("usage: bench_local MODEL.gguf [--server URL]");
    let threads = arg(&args, "--threads").and_then(|v| v.parse().ok()).unwrap_or(2);
    let ctx = arg(&args, "--ctx").and_then(|v| v.parse().ok()).unwrap_or(8192);
    let gen_n = arg(&args, "--gen").and_then(|v| v.parse().ok()).unwrap_or(128);
    let reps = arg(&args, "--reps").and_then(|v| v.parse().ok()).unwrap_or(5);
    let (ip, engine) = in_process(&model, threads, ctx, gen_n).await;
    let mut out = json!({"threads": threads, "ctx": ctx, "in_process": ip});
    if let Some(url) = arg(&args, "--server") {
        out["server"] = server(&url, gen_n).await;
        // Throughput from the alternating runs replaces the single runs above.
        let alt = alternating(&engine, &url, gen_n, reps).await;
        for side in ["in_process", "server"] {
            for k in ["prompt_tps", "gen_tps"] {
                out[side][k] = alt[side][k].clone();
            }
        }
        out["alternating"] = alt;
    }
    println!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
}
