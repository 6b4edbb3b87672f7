// An editor's side of ACP for the tests, written with the official TypeScript SDK
// (@agentclientprotocol/sdk, installed by scripts/fetch-mcp-servers.sh; its entry point is
// given as ACP_SDK). Starts the agent command it is given, runs the steps of a plan, and
// prints one JSON object: what each step answered, every session/update in order, every
// permission question, and how long `initialize` took from the agent's start.
//
// node client.mjs PLAN_JSON
// plan: {"command": [bin, ...args], "cwd": dir, "answers": ["reject_once", ...],
//        "steps": [{"do": "initialize"}, {"do": "new"}, {"do": "set_mode", "mode": "auto"},
//                  {"do": "prompt", "text": "go", "cancel_after_chunk": true},
//                  {"do": "list"}, {"do": "load", "id": "..."},
//                  {"do": "authenticate", "method": "api_key"}],
//        "touch_on_output": {"text": "first", "path": "/abs/go"},
//        "fs": {"buffers": {"/abs/path": "unsaved text"}}}
// touch_on_output: when a tool_call_update's content first shows `text` while the call is
// still running, the client creates `path` (a command can wait for it: proof that its
// output reached the editor while it ran).
// fs: the client offers its files (fs/read_text_file, fs/write_text_file) as an editor
// does: a read answers the path's unsaved buffer when it has one, else the file on disk;
// a write lands in the buffer (the disk is untouched). Both are recorded in order
// (`files`: {"op": "read" | "write", "path", "content"?}).
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";

const acp = await import(process.env.ACP_SDK);
const plan = JSON.parse(process.argv[2]);
const { methods } = acp;

const started = performance.now();
const child = spawn(plan.command[0], plan.command.slice(1), {
  cwd: plan.cwd,
  stdio: ["pipe", "pipe", "inherit"],
});
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));

const out = { steps: [], updates: [], permissions: [], files: [] };
const buffers = { ...(plan.fs?.buffers ?? {}) };
let answers = [...(plan.answers ?? [])];
let onChunk = null;

let app = acp
  .client({ name: "ikigai-tests" })
  .onRequest(methods.client.session.requestPermission, async ({ params }) => {
    out.permissions.push(params);
    const pick = answers.shift() ?? "reject_once";
    if (pick === "cancelled") return { outcome: { outcome: "cancelled" } };
    return { outcome: { outcome: "selected", optionId: pick } };
  })
  .onNotification(methods.client.session.update, async ({ params }) => {
    out.updates.push(params.update);
    const u = params.update;
    const watch = plan.touch_on_output;
    if (watch && !watch.done && u.sessionUpdate === "tool_call_update" && u.status === "in_progress") {
      const text = (u.content ?? []).map((c) => c.content?.text ?? "").join("");
      if (text.includes(watch.text)) {
        watch.done = true;
        writeFileSync(watch.path, "");
      }
    }
    if (onChunk && params.update.sessionUpdate === "agent_message_chunk") {
      const f = onChunk;
      onChunk = null;
      f();
    }
  });
// Only a client that offers its files answers for them, with its handlers after the
// update handler: a message passes the handlers in order, and handlers ahead of the
// update handler let a step's answer overtake the updates sent before it.
if (plan.fs) {
  app = app
    .onRequest(methods.client.fs.readTextFile, async ({ params }) => {
    out.files.push({ op: "read", path: params.path });
    if (params.path in buffers) return { content: buffers[params.path] };
    return { content: readFileSync(params.path, "utf8") };
  })
    .onRequest(methods.client.fs.writeTextFile, async ({ params }) => {
    out.files.push({ op: "write", path: params.path, content: params.content });
    buffers[params.path] = params.content;
    return {};
  });
}

const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
await app.connectWith(stream, async (ctx) => {
  let session = null;
  for (const step of plan.steps) {
    const record = { do: step.do };
    try {
      switch (step.do) {
        case "initialize": {
          record.result = await ctx.request(methods.agent.initialize, {
            protocolVersion: acp.PROTOCOL_VERSION,
            clientCapabilities: plan.fs ? { fs: { readTextFile: true, writeTextFile: true } } : {},
          });
          out.initialize_ms = performance.now() - started;
          break;
        }
        case "new": {
          record.result = await ctx.request(methods.agent.session.new, {
            cwd: step.cwd ?? plan.cwd,
            mcpServers: step.mcp_servers ?? [],
          });
          session = record.result.sessionId;
          break;
        }
        case "load": {
          record.result = await ctx.request(methods.agent.session.load, {
            sessionId: step.id,
            cwd: plan.cwd,
            mcpServers: [],
          });
          session = step.id;
          break;
        }
        case "set_option": {
          record.result = await ctx.request(methods.agent.session.setConfigOption, {
            sessionId: session,
            configId: step.id,
            value: step.value,
          });
          break;
        }
        case "authenticate": {
          record.result = await ctx.request(methods.agent.authenticate, { methodId: step.method });
          break;
        }
        case "list": {
          record.result = await ctx.request(methods.agent.session.list, {});
          break;
        }
        case "set_mode": {
          record.result = await ctx.request(methods.agent.session.setMode, {
            sessionId: session,
            modeId: step.mode,
          });
          break;
        }
        case "prompt": {
          if (step.cancel_after_chunk) {
            onChunk = () => ctx.notify(methods.agent.session.cancel, { sessionId: session });
          }
          record.result = await ctx.request(methods.agent.session.prompt, {
            sessionId: session,
            prompt: [{ type: "text", text: step.text }],
          });
          break;
        }
        default:
          throw new Error(`unknown step ${step.do}`);
      }
    } catch (e) {
      record.error = { code: e.code, message: e.message, data: e.data ?? null };
    }
    record.updates_so_far = out.updates.length;
    out.steps.push(record);
  }
});
child.stdin.end();
out.exit = await exited;
process.stdout.write(JSON.stringify(out) + "\n");
