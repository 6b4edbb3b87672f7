//! The integration suite, built as one test binary: each module is one former test file;
//! `common` (fake vendors, database and tmux helpers), `tools_util` and `local` are shared.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[cfg(feature = "local")]
mod local;
mod tools_util;

mod agent_every_tool;
mod agent_loop;
mod cli_binary;
mod compaction_notice_e2e;
mod example_tools;
mod external_tools;
mod external_tools_e2e;
mod fixtures_replay;
mod install;
mod interrupts_e2e;
mod local_e2e;
mod local_engine;
mod long_session_memory;
mod long_sessions;
mod model_switch;
mod oversized_message;
mod plain_changes;
mod reasoning_display;
mod request_body;
mod responses_provider;
mod resume_e2e;
mod scripted;
mod secrets;
mod session_lease;
mod sessions_cli;
mod store;
mod store_cli;
mod store_file_removed;
mod store_outage;
mod store_spool_e2e;
mod stream_trust;
mod text_protocol;
mod tool_error_lines_e2e;
mod tool_escapes_subreaper;
mod tool_kill_running;
mod tool_processes;
mod tools_bash;
mod tools_cli;
mod tools_files;
mod tools_search;
mod tools_write;
mod tui_e2e;
mod tui_model_e2e;
mod tui_resize_e2e;
mod vendor_agent;
mod vendor_fixtures;
mod vendor_switch;
