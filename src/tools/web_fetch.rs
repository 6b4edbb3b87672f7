//! The `web_fetch` tool: GETs an `http`/`https` URL and returns the page as Markdown
//! (HTML) or as it is (other text), capped like `file_read` with `offset` to read on
//! (`web_page`). Follows at most `MAX_REDIRECTS` redirects, each only within the same host
//! (same host name and port; `http` → `https` on the default ports too); a redirect
//! elsewhere is returned to the model, which must call again (and pass the permission
//! gate again). Refuses other schemes and URLs with credentials before connecting, binary
//! bodies without downloading them, and everything under a sandbox with
//! `sandbox_network = false`. Sends no header of ikigai's beyond a user agent and an
//! `Accept`: never a key or a cookie. Reads at most `MAX_DOWNLOAD` bytes; converts HTML in
//! bounded work (`html_markdown`), stopped when the call ends; a call that runs out of time
//! says how far it got. Decides no permission (the gate runs before it).

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::WEB_FETCH;
use async_trait::async_trait;
use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use serde_json::{Map, Value, json};

use super::params::Params;
use super::web_page::{self, Kind};
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

pub(crate) const NAME: &str = WEB_FETCH.name;
/// The most redirects followed for one call.
pub(crate) const MAX_REDIRECTS: usize = 5;
/// The most bytes of a body downloaded; the rest is not read.
pub(crate) const MAX_DOWNLOAD: usize = 10 * 1024 * 1024;
/// What is asked for: pages and text first.
const ACCEPTED: &str = "text/html, application/xhtml+xml, text/markdown;q=0.9, text/plain;q=0.8, \
                        application/json;q=0.8, */*;q=0.5";

pub(crate) struct WebFetch;

/// `web_fetch`'s arguments, typed.
struct Args {
    url: String,
    /// The first line of the page to return, from 1.
    offset: u64,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            url: p.non_empty_string("url")?.to_string(),
            offset: p.opt_u64("offset", 0)?.unwrap_or(1).max(1),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| ToolSchema {
    name: NAME.into(),
    description: "Fetch a web page (http or https) and return it as Markdown.\n\
            Other text (JSON, plain text) comes as it is; images and other binary content \
            are refused. A page cut at the size limit says so and gives `next_offset`: \
            call again with it as `offset` to read on."
        .into(),
    parameters: vec![
        ParamSpec::new("url", "string", "The http(s) URL to GET.", true),
        ParamSpec::new(
            "offset",
            "integer",
            "First line of the page to return, 1-based; default 1.",
            false,
        ),
    ],
    json_schema: None,
});

#[async_trait]
impl Tool for WebFetch {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&WEB_FETCH)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { url: raw, offset } = Args::read(&args)?;
        let url = parse(&raw).map_err(ToolError::InvalidParams)?;
        if let Some(c) = crate::permissions::sandbox_in_force::current_sandbox()
            && !c.network
        {
            return Ok(sandbox_denied(&url, &c.mode));
        }
        let secs = ctx.timeout.as_secs_f64();
        // Whatever ends the call (its timeout, a cancel) stops a conversion still running.
        let progress = StopOnDrop(std::sync::Arc::new(Progress::default()));
        // The conversion has most of the time left and ends on its own with what it made.
        let convert_by = std::time::Instant::now() + ctx.timeout.mul_f64(0.8);
        let call = fetch(&url, offset, ctx.max_output_size, &progress.0, convert_by);
        match tokio::time::timeout(ctx.timeout, call).await {
            Ok(out) => Ok(out),
            Err(_) => Err(ToolError::Timeout {
                message: progress.0.timed_out(&url, secs),
                partial_output: String::new(),
            }),
        }
    }
}

/// How far a call got: what its timeout message says; `stop` ends a conversion.
#[derive(Default)]
struct Progress {
    /// The status of the answer, once its headers arrived (0 before).
    status: std::sync::atomic::AtomicU16,
    /// Bytes of the body received.
    received: std::sync::atomic::AtomicU64,
    /// The body was read and is being converted.
    converting: std::sync::atomic::AtomicBool,
    stop: std::sync::atomic::AtomicBool,
}

impl Progress {
    /// What happened before the call ran out of `secs` seconds.
    fn timed_out(&self, url: &Url, secs: f64) -> String {
        use std::sync::atomic::Ordering::Relaxed;
        let status = self.status.load(Relaxed);
        let received = self.received.load(Relaxed);
        if self.converting.load(Relaxed) {
            format!(
                "web_fetch: {url}: the page ({received} bytes) arrived, but converting it to Markdown \
                 did not finish within {secs} s (tool_timeout_secs); the conversion was stopped"
            )
        } else if status != 0 {
            format!(
                "web_fetch: {url} answered (HTTP {status}) but its body did not arrive within {secs} s \
                 (tool_timeout_secs): {received} bytes were received"
            )
        } else {
            format!(
                "web_fetch: {url} did not answer within {secs} s (tool_timeout_secs); nothing was received"
            )
        }
    }
}

/// Sets the stop flag when the call ends, however it ends.
struct StopOnDrop(std::sync::Arc<Progress>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.stop.store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The URL of a call, or why it is refused: only `http` and `https`, with a host and
/// without credentials.
pub(crate) fn parse(raw: &str) -> Result<Url, String> {
    let url = Url::parse(raw.trim()).map_err(|e| format!("web_fetch: `{raw}` is not a URL ({e})"))?;
    match url.scheme() {
        "http" | "https" => {}
        "file" => {
            return Err(format!(
                "web_fetch fetches http and https URLs only; `{raw}` is refused (use file_read for files)"
            ));
        }
        other => {
            return Err(format!(
                "web_fetch fetches http and https URLs only; the scheme `{other}:` of `{raw}` is refused"
            ));
        }
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("web_fetch: `{raw}` names no host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(format!(
            "web_fetch: `{}` carries credentials (user:password@); web_fetch sends none and refuses it",
            crate::redact::urls::scrub_urls(raw)
        ));
    }
    Ok(url)
}

/// Whether a redirect from `from` to `to` stays on the same host: the same host name (as
/// written: `localhost` is not `127.0.0.1`) and the same port, or an upgrade from `http`
/// to `https` on the default ports. Never to another scheme, never down to `http`.
pub(crate) fn same_host(from: &Url, to: &Url) -> bool {
    let host = from.host_str().is_some_and(|h| Some(h) == to.host_str());
    let ports = match (from.scheme(), to.scheme()) {
        (a, b) if a == b => from.port_or_known_default() == to.port_or_known_default(),
        ("http", "https") => from.port().is_none() && to.port().is_none(),
        _ => false,
    };
    host && ports
}

/// The result of a call the sandbox stopped before it connected; its `sandbox` field lets
/// the agent offer to run it outside the sandbox.
fn sandbox_denied(url: &Url, mode: &str) -> ToolOutput {
    let why = format!(
        "sandbox: network access denied (sandbox = \"{mode}\" with sandbox_network = false); \
         run it outside the sandbox to fetch {url}"
    );
    let result = json!({
        "error": format!("sandbox: network access denied: {url} was not fetched (sandbox = \"{mode}\" with sandbox_network = false)"),
        "sandbox": why,
    });
    ToolOutput::new(result, "denied by the sandbox (sandbox_network = false)")
}

fn client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!("ikigai/", env!("CARGO_PKG_VERSION"), " (web_fetch)"))
        .build()
        .map_err(|e| format!("web_fetch: cannot build the HTTP client: {}", root_cause(&e)))
}

/// GETs `url`, following same-host redirects, and makes the result (saying how far it got
/// in `progress`; an HTML page is converted by `convert_by` at the latest).
async fn fetch(
    url: &Url,
    offset: u64,
    cap: usize,
    progress: &std::sync::Arc<Progress>,
    convert_by: std::time::Instant,
) -> ToolOutput {
    let client = match client() {
        Ok(c) => c,
        Err(e) => return ToolOutput::error(e),
    };
    let mut current = url.clone();
    let mut hops = 0;
    loop {
        let response = match client.get(current.clone()).header(ACCEPT, ACCEPTED).send().await {
            Ok(r) => r,
            Err(e) => return ToolOutput::error(send_error(&current, &e)),
        };
        let status = response.status();
        if !status.is_redirection() || status == reqwest::StatusCode::NOT_MODIFIED {
            progress
                .status
                .store(status.as_u16(), std::sync::atomic::Ordering::Relaxed);
            return page(response, &current, offset, cap, progress, convert_by).await;
        }
        let Some(location) = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()) else {
            return ToolOutput::error(format!(
                "web_fetch: {current} answered {status} without a Location to follow"
            ));
        };
        let next = match current.join(location) {
            Ok(n) => n,
            Err(e) => {
                return ToolOutput::error(format!(
                    "web_fetch: {current} redirects to `{location}`, which is not a URL ({e})"
                ));
            }
        };
        if !same_host(&current, &next) {
            return elsewhere(url, &current, &next, status);
        }
        hops += 1;
        if hops > MAX_REDIRECTS {
            return ToolOutput::error(format!(
                "web_fetch: {url} redirected more than {MAX_REDIRECTS} times (last to {next}); not followed further"
            ));
        }
        current = next;
    }
}

/// A redirect to another host: not followed. The model gets the target to fetch with a
/// call of its own, which the permission gate judges like any other.
fn elsewhere(url: &Url, from: &Url, to: &Url, status: reqwest::StatusCode) -> ToolOutput {
    let origin = from.origin().ascii_serialization();
    let message = format!(
        "web_fetch: {from} redirects ({status}) to another host: {to}. Not followed: web_fetch \
         follows redirects only within {origin}. Call web_fetch with that URL to fetch it."
    );
    let mut out = ToolOutput::error(message);
    out.result["redirect"] = json!(to.as_str());
    out.result["url"] = json!(url.as_str());
    out.summary = format!("redirect to another host not followed: {to}");
    out
}

/// The result for a response that is not a redirect.
async fn page(
    mut response: reqwest::Response,
    url: &Url,
    offset: u64,
    cap: usize,
    progress: &std::sync::Arc<Progress>,
    convert_by: std::time::Instant,
) -> ToolOutput {
    use std::sync::atomic::Ordering::Relaxed;
    let status = response.status();
    let headers = response.headers();
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let length = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let size = |n: Option<u64>| n.map(|n| format!(", {n} bytes")).unwrap_or_default();
    let declared = match web_page::kind_of(content_type.as_deref()) {
        Ok(k) => k,
        Err(mime) => {
            return ToolOutput::error(format!(
                "web_fetch shows text only: {url} is {mime}{} (HTTP {}); it was not downloaded",
                size(length),
                status.as_u16()
            ));
        }
    };
    let mut body: Vec<u8> = Vec::new();
    let mut cut = false;
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = MAX_DOWNLOAD - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                progress.received.store(body.len() as u64, Relaxed);
                if chunk.len() >= room {
                    cut = true;
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                return ToolOutput::error(format!(
                    "web_fetch: reading the body of {url} failed after {} bytes: {}",
                    body.len(),
                    root_cause(&e)
                ));
            }
        }
    }
    let Some(kind) = declared.or_else(|| web_page::sniff(&body)) else {
        return ToolOutput::error(format!(
            "web_fetch shows text only: {url} sent binary content without a content type ({} bytes)",
            body.len()
        ));
    };
    let (text, lossy) = web_page::decode(&body, content_type.as_deref(), kind);
    let html_bytes = text.len();
    let mut conversion = Vec::new();
    let text = match kind {
        Kind::Html => {
            progress.converting.store(true, Relaxed);
            let shared = progress.clone();
            let converted = tokio::task::spawn_blocking(move || {
                let stop = super::html_markdown::Stop {
                    flag: &shared.stop,
                    deadline: convert_by,
                };
                web_page::markdown(&text, stop)
            })
            .await;
            progress.converting.store(false, Relaxed);
            let c = match converted {
                Ok(c) => c,
                Err(e) => {
                    return ToolOutput::error(format!("web_fetch: converting {url} to Markdown failed: {e}"));
                }
            };
            if c.flattened > 0 {
                conversion.push(format!(
                    "The page nests elements deeper than {}: {} tags deeper than that were left out \
                     (their text is kept).",
                    super::html_markdown::MAX_DEPTH,
                    c.flattened
                ));
            }
            if c.plain {
                conversion
                    .push("The page is nested too deeply to convert: it is shown as plain text.".into());
            }
            if let Some(at) = c.stopped_at {
                conversion.push(format!(
                    "Converting the page to Markdown was stopped at byte {at} of {html_bytes} (it took \
                     most of tool_timeout_secs); what was converted is shown."
                ));
            }
            c.markdown
        }
        Kind::Text => text,
    };
    let shown_type = content_type.unwrap_or_else(|| "none".into());
    if !status.is_success() {
        let mut excerpt = Map::new();
        let _ = web_page::window(&text, 1, 2000.min(cap), &mut excerpt);
        let mut out = ToolOutput::error(format!("web_fetch: {url} answered HTTP {status}"));
        out.result["status"] = json!(status.as_u16());
        if let Some(Value::String(b)) = excerpt.remove("output")
            && !b.trim().is_empty()
        {
            out.result["body"] = json!(b);
        }
        return out;
    }
    let mut result = Map::new();
    let lines = match web_page::window(&text, offset, cap, &mut result) {
        Ok(n) => n,
        Err(e) => return ToolOutput::error(format!("web_fetch: {e}")),
    };
    let truncated = result.contains_key("truncated");
    result.insert("url".into(), json!(url.as_str()));
    result.insert("status".into(), json!(status.as_u16()));
    result.insert("content_type".into(), json!(shown_type));
    let mut notes: Vec<String> = Vec::new();
    if let Some(Value::String(n)) = result.remove("note") {
        notes.push(n);
    }
    if cut {
        notes.push(format!(
            "Only the first {} MiB of the body were downloaded.",
            MAX_DOWNLOAD / (1024 * 1024)
        ));
    }
    if lossy {
        notes.push("Some bytes of the body are not valid in its charset; they are shown as U+FFFD.".into());
    }
    notes.extend(conversion);
    if !notes.is_empty() {
        result.insert("note".into(), json!(notes.join(" ")));
    }
    let what = if kind == Kind::Html { "markdown" } else { "text" };
    let mut summary = format!("{} {what}, {lines} lines", status.as_u16());
    if truncated {
        summary.push_str(" (truncated)");
    }
    ToolOutput::new(Value::Object(result), summary)
}

/// Why a request could not be sent or answered, in words.
fn send_error(url: &Url, e: &reqwest::Error) -> String {
    let place = match (url.host_str(), url.port_or_known_default()) {
        (Some(h), Some(p)) => format!("{h}:{p}"),
        _ => url.to_string(),
    };
    let io = io_kind(e);
    if io == Some(std::io::ErrorKind::ConnectionRefused) {
        return format!("web_fetch: connection refused: nothing listens at {place} ({url})");
    }
    let cause = root_cause(e);
    let lower = cause.to_lowercase();
    if lower.contains("dns") || lower.contains("resolve") || lower.contains("name or service") {
        return format!("web_fetch: cannot resolve the host of {url}: {cause}");
    }
    if e.is_connect() {
        return format!("web_fetch: cannot connect to {place} ({url}): {cause}");
    }
    format!("web_fetch: {url}: {cause}")
}

/// The kind of the I/O error beneath `e`, if any.
fn io_kind(e: &(dyn std::error::Error + 'static)) -> Option<std::io::ErrorKind> {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        cur = err.source();
    }
    None
}

fn root_cause(e: &(dyn std::error::Error + 'static)) -> String {
    let mut cur = e;
    while let Some(next) = cur.source() {
        cur = next;
    }
    cur.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_and_https_without_credentials_pass() {
        assert!(parse("https://docs.rs/htmd").is_ok());
        assert!(parse("http://127.0.0.1:8080/x").is_ok());
        for (bad, says) in [
            ("file:///etc/passwd", "use file_read"),
            ("ftp://example.com/x", "`ftp:`"),
            ("data:text/plain,hi", "`data:`"),
            ("javascript:alert(1)", "`javascript:`"),
            ("not a url", "is not a URL"),
            ("https://me:hunter2@example.com/", "credentials"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn same_host_means_same_name_and_port_or_an_upgrade_to_https() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_host(&u("http://127.0.0.1:80/a"), &u("http://127.0.0.1/b")));
        assert!(same_host(&u("http://Example.com/a"), &u("https://example.com/b")));
        assert!(!same_host(
            &u("https://example.com/a"),
            &u("http://example.com/b")
        ));
        assert!(!same_host(&u("http://127.0.0.1:1/a"), &u("http://localhost:1/a")));
        assert!(!same_host(&u("http://127.0.0.1:1/a"), &u("http://127.0.0.1:2/a")));
        assert!(!same_host(
            &u("http://example.com/a"),
            &u("http://www.example.com/a")
        ));
        assert!(!same_host(&u("http://example.com/a"), &u("file:///etc/passwd")));
    }
}
