//! The one `tokio::select!` loop: terminal events (any `Stream`, so tests feed synthetic
//! keys), agent events, a shutdown signal, and a timer that exists only while a frame is
//! due or a spinner is visible. Frames are coalesced to at most ~60 per second.

use std::future::Future;
use std::io;
use std::time::{Duration, Instant};

use futures_util::{Stream, StreamExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::protocol::{Event, NoticeLevel, Op};

use super::TuiError;
use super::app::App;
use super::screen::{Anchor, Screen};

/// Shortest time between two frames.
pub(crate) const FRAME: Duration = Duration::from_millis(16);
/// Spinner animation step.
pub(crate) const TICK: Duration = Duration::from_millis(100);
/// Agent events applied before the next frame may be drawn.
const BATCH: usize = 4096;

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The user asked to exit.
    User,
    /// SIGTERM, SIGHUP or SIGINT (sent with `kill`): the exit code, 128 + the signal number.
    Signal(u8),
    /// The input stream ended (the terminal went away).
    InputClosed,
    /// The agent task went away.
    AgentGone,
}

/// When the loop must wake up without any input: a frame is due, or the spinner moves.
fn deadline(app: &App, last_draw: Instant) -> Option<Instant> {
    if app.dirty() || app.has_scrollback() {
        Some(last_draw + FRAME)
    } else if app.animating() {
        Some(last_draw + TICK)
    } else {
        None
    }
}

/// Runs until the user exits, a signal arrives, or the agent goes away.
pub(crate) async fn run_loop<B, S, F>(
    screen: &mut Screen<B>,
    app: &mut App,
    mut input: S,
    events: &mut UnboundedReceiver<Event>,
    ops: &UnboundedSender<Op>,
    shutdown: F,
) -> Result<Stop, TuiError>
where
    B: Anchor,
    S: Stream<Item = io::Result<crossterm::event::Event>> + Unpin,
    F: Future<Output = u8>,
{
    tokio::pin!(shutdown);
    screen.render(app, Instant::now())?;
    let mut last_draw = Instant::now();
    let stop = loop {
        for op in app.take_ops() {
            let _ = ops.send(op);
        }
        if app.should_exit() {
            break Stop::User;
        }
        let wake = deadline(app, last_draw);
        tokio::select! {
            biased;
            code = &mut shutdown => break Stop::Signal(code),
            ev = input.next() => match ev {
                Some(Ok(e)) => {
                    if matches!(e, crossterm::event::Event::Resize(..)) {
                        // The input reader has just handed over an event and is idle: the
                        // one moment the cursor may be asked for.
                        let at = screen.backend_mut().locate();
                        screen.resized(at)?;
                    }
                    app.on_terminal_event(e, Instant::now());
                }
                Some(Err(e)) => return Err(TuiError::Io(e)),
                None => break Stop::InputClosed,
            },
            ev = events.recv() => match ev {
                Some(e) => {
                    let now = Instant::now();
                    app.on_agent_event(e, now);
                    for _ in 0..BATCH {
                        match events.try_recv() {
                            Ok(e) => app.on_agent_event(e, now),
                            Err(_) => break,
                        }
                    }
                }
                None => {
                    app.on_agent_event(Event::notice(NoticeLevel::Error, "the agent stopped"), Instant::now());
                    break Stop::AgentGone;
                }
            },
            () = sleep_until(wake), if wake.is_some() => {
                if app.animating() {
                    app.mark_dirty();
                }
            }
        }
        let now = Instant::now();
        if (app.dirty() || app.has_scrollback()) && now >= last_draw + FRAME {
            screen.render(app, now)?;
            last_draw = now;
        }
    };
    for op in app.take_ops() {
        let _ = ops.send(op);
    }
    Ok(stop)
}

async fn sleep_until(at: Option<Instant>) {
    if let Some(at) = at {
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
    }
}
