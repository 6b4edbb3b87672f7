//! Drives the real agent task against the fake provider, with no front end.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ikigai::agent::{AgentHandle, AgentSetup};
use ikigai::config::{Config, Secret};
use ikigai::protocol::{Event, Op};
use ikigai::provider::openai::OpenAiChat;
use ikigai::tools::Registry;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::fake_provider::FakeProvider;

pub struct TestAgent {
    pub handle: AgentHandle,
    pub events: UnboundedReceiver<Event>,
}

/// A config pointing at the fake, with quick retries.
pub fn config_for(fake: &FakeProvider) -> Config {
    Config {
        base_url: Some(fake.base_url.clone()),
        api_key: Some(Secret::new("test-key")),
        model: Some("fake-model".into()),
        retry_base_delay_ms: 10,
        ..Config::default()
    }
}

impl TestAgent {
    pub fn start(config: Config, cwd: &Path) -> TestAgent {
        let provider = OpenAiChat::new(&config).expect("provider");
        Self::with_provider(config, Arc::new(provider), cwd)
    }

    /// The agent with any provider (built by `provider::build`, for example).
    pub fn with_provider(
        config: Config,
        provider: Arc<dyn ikigai::provider::Provider>,
        cwd: &Path,
    ) -> TestAgent {
        let (tx, events) = unbounded_channel();
        let setup = AgentSetup {
            config,
            provider,
            registry: Registry::builtin(),
            sessions: None,
            cwd: cwd.to_path_buf(),
            system_prompt: "You are a test.".into(),
            environment: String::new(),
            instructions: Vec::new(),
            skills: Default::default(),
            mode: None,
            resumed: None,
            follow_tree: true,
        };
        let handle = ikigai::agent::spawn(setup, tx);
        TestAgent { handle, events }
    }

    /// The agent with a provider built elsewhere (another wire kind, from `provider::build`).
    pub fn start_with(
        config: Config,
        provider: Arc<dyn ikigai::provider::Provider>,
        cwd: &Path,
    ) -> TestAgent {
        let (tx, events) = unbounded_channel();
        let setup = AgentSetup {
            config,
            provider,
            registry: Registry::builtin(),
            sessions: None,
            cwd: cwd.to_path_buf(),
            system_prompt: "You are a test.".into(),
            environment: String::new(),
            instructions: Vec::new(),
            skills: Default::default(),
            mode: None,
            resumed: None,
            follow_tree: true,
        };
        let handle = ikigai::agent::spawn(setup, tx);
        TestAgent { handle, events }
    }

    pub fn send(&self, op: Op) {
        self.handle.ops.send(op).expect("agent alive");
    }

    /// Events up to and including the next `TurnEnded` (bounded wait, never hangs the suite).
    pub async fn until_turn_end(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(60), self.events.recv())
                .await
                .expect("turn ended within 60 s")
                .expect("agent alive");
            let end = matches!(ev, Event::TurnEnded { .. });
            out.push(ev);
            if end {
                return out;
            }
        }
    }

    /// Submits `text` and collects its events.
    pub async fn turn(&mut self, text: &str) -> Vec<Event> {
        self.send(Op::Submit(text.to_string()));
        self.until_turn_end().await
    }

    /// Waits for the first event matching `pred`, returning everything seen up to it.
    pub async fn until(&mut self, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
        let mut out = Vec::new();
        loop {
            let ev = tokio::time::timeout(Duration::from_secs(60), self.events.recv())
                .await
                .expect("event within 60 s")
                .expect("agent alive");
            let hit = pred(&ev);
            out.push(ev);
            if hit {
                return out;
            }
        }
    }
}

pub fn text_of(events: &[Event]) -> String {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TextDelta { text } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

pub fn turn_end(events: &[Event]) -> Option<ikigai::protocol::TurnEndReason> {
    events.iter().find_map(|e| match e {
        Event::TurnEnded { reason } => Some(*reason),
        _ => None,
    })
}

pub fn notices(events: &[Event]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Notice { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}
