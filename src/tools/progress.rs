//! Progress of the running tool call: the caller (the agent's turn) runs the call inside
//! `scope` with a sink that shows a line on the call; a tool that learns of progress (an
//! MCP server's `notifications/progress`) reports it with `Sink::current`. Owns no
//! rendering and no protocol.

use std::future::Future;
use std::sync::Arc;

tokio::task_local! {
    static CURRENT: Sink;
}

/// Where the progress lines of one call go.
#[derive(Clone)]
pub struct Sink(Arc<dyn Fn(String) + Send + Sync>);

impl std::fmt::Debug for Sink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("progress::Sink")
    }
}

impl Sink {
    pub fn new(f: impl Fn(String) + Send + Sync + 'static) -> Self {
        Sink(Arc::new(f))
    }

    /// Reports one progress line.
    pub fn report(&self, text: String) {
        (self.0)(text)
    }

    /// Runs `call` with this sink receiving its progress.
    pub async fn scope<F: Future>(self, call: F) -> F::Output {
        CURRENT.scope(self, call).await
    }

    /// The sink of the call running on this task, if it was given one.
    pub fn current() -> Option<Sink> {
        CURRENT.try_with(Clone::clone).ok()
    }
}

/// A progress notification as one short line: `3/5 (60%) message`, `3 message`.
pub fn describe(progress: f64, total: Option<f64>, message: Option<&str>) -> String {
    let num = |v: f64| {
        if v.fract() == 0.0 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            format!("{v:.2}")
        }
    };
    let mut s = match total {
        Some(t) if t > 0.0 => format!(
            "{}/{} ({}%)",
            num(progress),
            num(t),
            ((progress / t) * 100.0).clamp(0.0, 100.0).round() as i64
        ),
        _ => num(progress),
    };
    if let Some(m) = message.map(str::trim).filter(|m| !m.is_empty()) {
        s.push(' ');
        s.push_str(crate::text::shorten(m, 200));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_scope_receives_what_the_call_reports() {
        let got = Arc::new(std::sync::Mutex::new(Vec::new()));
        let g = got.clone();
        let sink = Sink::new(move |t| g.lock().unwrap().push(t));
        sink.scope(async {
            Sink::current().expect("in scope").report("1/2".into());
        })
        .await;
        assert_eq!(*got.lock().unwrap(), ["1/2"]);
        assert!(Sink::current().is_none());
    }

    #[test]
    fn lines_read_well() {
        assert_eq!(describe(3.0, Some(5.0), None), "3/5 (60%)");
        assert_eq!(describe(0.5, None, Some(" halfway ")), "0.50 halfway");
        assert_eq!(describe(7.0, Some(0.0), Some("")), "7");
    }
}
