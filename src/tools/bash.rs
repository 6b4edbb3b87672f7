//! The `bash` tool: runs `bash -c COMMAND` through process.rs (own process group, filtered
//! environment) with stdout and stderr on one pipe (so they interleave as produced), capped
//! while read. On timeout, on return and when the call is dropped the process group and
//! every process the command started are killed. Under the sandbox, a failure the sandbox
//! probably caused is named in the result (`sandbox`). Owns no process handling of its own.

use std::sync::LazyLock;

use crate::tool_vocab::ToolMeta;
use crate::tool_vocab::meta::BASH;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use super::output::CappedBuf;
use super::params::Params;
use super::process::{self, Outcome, Spec, StderrMode, signal_name};
use super::{ParamSpec, Tool, ToolContext, ToolError, ToolOutput, ToolSchema};

pub struct Bash;

/// `bash`'s arguments, typed.
struct Args {
    command: String,
}

impl Args {
    /// Reads and checks the arguments object (unknown names, types, missing and empty
    /// values are `INVALID_PARAMS`, worded by `params.rs`), in the order the fields stand.
    fn read(args: &Value) -> Result<Args, ToolError> {
        let p = Params::new(args, &SCHEMA)?;
        Ok(Args {
            command: p.non_empty_string("command")?.to_string(),
        })
    }
}

/// The schema, built once (it is sent with every request and read on every call).
static SCHEMA: LazyLock<ToolSchema> = LazyLock::new(|| {
    ToolSchema {
        name: BASH.name.into(),
        description: "Run a shell command and return its output and exit code.\n\
            Runs `bash -c` in the working directory and returns its combined stdout and stderr (interleaved as printed) and exit code. Stdin is \
            empty (/dev/null), so interactive prompts fail instead of waiting. The command \
            is killed, with everything it started, when it exceeds the tool timeout; \
            background jobs (`cmd &`) are killed when the command returns. A nonzero exit \
            code is a normal result, not an error; a process killed by signal N reports \
            128+N and names the signal."
            .into(),
        parameters: vec![ParamSpec::new(
            "command",
            "string",
            "The command line, e.g. `cargo test 2>&1 | tail -n 50`.",
            true,
        )],
        json_schema: None,
    }
});

#[async_trait]
impl Tool for Bash {
    fn schema(&self) -> ToolSchema {
        SCHEMA.clone()
    }

    fn meta(&self) -> Option<&'static ToolMeta> {
        Some(&BASH)
    }

    async fn call(&self, args: Value, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let Args { command } = Args::read(&args)?;
        run(&command, ctx).await
    }
}

fn crashed(what: &str, e: io::Error) -> ToolError {
    ToolError::Crashed(format!("bash: {what}: {e}"))
}

async fn run(command: &str, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
    let env = ctx.env.current();
    // bash by absolute path from PATH's trusted folders: a repository's own `bash`
    // (`PATH=node_modules/.bin:…`) never stands in for it.
    let path_var = env.iter().find(|(k, _)| k == "PATH").map(|(_, v)| v.as_os_str());
    let program = match crate::trusted_path::find_in("bash", path_var, &ctx.cwd) {
        Ok(p) => p,
        Err(e) => return Ok(ToolOutput::error(format!("Cannot run bash: {e}"))),
    };
    let spec = Spec {
        program,
        args: vec!["-c".into(), command.into()],
        cwd: ctx.cwd.clone(),
        env,
        stdin: None,
        stderr: StderrMode::Merged,
        stdout_cap: ctx.max_output_size,
        stop_when_full: false,
        timeout: ctx.timeout,
        share_partial: true,
        live: process::LiveFrom::Stdout,
    };
    let finished = match process::run(spec).await {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound || !ctx.cwd.is_dir() => {
            return Ok(ToolOutput::error(format!(
                "Cannot run bash in {}: {e}",
                ctx.cwd.display()
            )));
        }
        Err(e) => return Err(crashed("cannot run the command", e)),
    };
    match finished.outcome {
        Outcome::TimedOut => Err(ToolError::Timeout {
            message: format!(
                "Command timed out after {}s; it and every process it started were killed",
                ctx.timeout.as_secs_f64()
            ),
            partial_output: finished.stdout.finish().text,
        }),
        Outcome::Exited(status) => Ok(finish(status, finished.stdout, &ctx.cwd)),
        // Not asked for: bash reads on to count what it left out.
        Outcome::OutputFull => Err(ToolError::Crashed("bash: output stopped early".into())),
    }
}

fn finish(status: ExitStatus, out: CappedBuf, cwd: &std::path::Path) -> ToolOutput {
    let capped = out.finish();
    let mut text = capped.text.clone();
    let (code, signal) = match (status.code(), status.signal()) {
        (Some(c), _) => (c, None),
        (None, Some(s)) => (128 + s, Some(signal_name(s))),
        (None, None) => (-1, None),
    };
    if let Some(name) = &signal {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!("[terminated by signal {name}]"));
    }
    let mut result = Map::new();
    result.insert("output".into(), Value::String(text));
    result.insert("exit_code".into(), json!(code));
    capped.mark(&mut result);
    // A failure the sandbox probably caused says so, for the model to act on.
    let denied = (code != 0)
        .then(|| crate::permissions::sandbox_denials::explain(&capped.text, cwd))
        .flatten();
    let mut summary = match signal {
        Some(name) => format!("exit {code} ({name})"),
        None => format!("exit {code}"),
    };
    if let Some(why) = denied {
        summary.push_str(", denied by the sandbox");
        result.insert("sandbox".into(), Value::String(why));
    }
    ToolOutput::new(Value::Object(result), summary)
}
