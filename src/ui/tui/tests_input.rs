//! Input and loop tests: paste, history recall, Tab, exit keys, the event loop fed a
//! synthetic key stream, narrow help, NO_COLOR, long inputs and resizes.

use std::time::{Duration, Instant};

use crossterm::event::{Event as TermEvent, KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;

use super::app::App;
use super::event_loop;
use super::history::History;
use super::screen::Screen;
use super::tests::{Harness, buffer_lines, context};
use super::theme::Theme;
use crate::protocol::{Event, Op, TurnEndReason};

#[test]
fn paste_inserts_without_sending_and_history_recalls() {
    let mut h = Harness::new(60, 12, &[]);
    h.app
        .on_terminal_event(TermEvent::Paste("line a\r\nline b".into()), h.t0);
    assert_eq!(h.app.editor.text(), "line a\nline b");
    assert!(h.app.take_ops().is_empty());
    h.enter();
    h.app.take_ops();
    h.ev(Event::TurnEnded {
        reason: TurnEndReason::Done,
    });
    h.key(KeyCode::Up, KeyModifiers::NONE);
    assert_eq!(h.app.editor.text(), "line a\nline b");
    h.key(KeyCode::Down, KeyModifiers::NONE);
    assert_eq!(h.app.editor.text(), "");
}

#[test]
fn tab_completes_commands() {
    let mut h = Harness::new(60, 12, &[]);
    h.typed("/hel");
    h.key(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.app.editor.text(), "/help ");
    h.app.editor.take();
    h.typed("/to");
    h.key(KeyCode::Tab, KeyModifiers::NONE);
    assert_eq!(h.app.hint.as_deref(), Some("/tools  /tool"));
}

#[test]
fn ctrl_c_twice_exits_and_ctrl_d_exits_on_empty_prompt() {
    let mut h = Harness::new(60, 12, &[]);
    let t = h.t0;
    h.app
        .on_key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL), t);
    assert!(!h.app.should_exit());
    assert_eq!(h.app.hint.as_deref(), Some("Press Ctrl+C again to exit"));
    // Too late: starts over.
    h.app.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        t + Duration::from_secs(3),
    );
    assert!(!h.app.should_exit());
    h.app.on_key(
        KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL),
        t + Duration::from_millis(3500),
    );
    assert!(h.app.should_exit());

    let mut h = Harness::new(60, 12, &[]);
    h.typed("x");
    h.key(KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(!h.app.should_exit(), "Ctrl+D with text deletes");
    h.key(KeyCode::Backspace, KeyModifiers::NONE);
    h.key(KeyCode::Char('d'), KeyModifiers::CONTROL);
    assert!(h.app.should_exit());
}

#[tokio::test]
async fn event_loop_sends_ops_from_synthetic_keys() {
    let (keys_tx, keys_rx) = tokio::sync::mpsc::unbounded_channel::<std::io::Result<TermEvent>>();
    let input = tokio_stream::wrappers::UnboundedReceiverStream::new(keys_rx);
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let (ops_tx, mut ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(context(&[]), Theme::new(false), History::load(None), "~".into());
    let mut screen = Screen::new(TestBackend::new(60, 16), 3).unwrap();
    let press = |c| Ok(TermEvent::Key(KeyEvent::new(c, KeyModifiers::NONE)));
    for c in "hi".chars() {
        keys_tx.send(press(KeyCode::Char(c))).unwrap();
    }
    keys_tx.send(press(KeyCode::Enter)).unwrap();
    let driver = async {
        assert_eq!(ops_rx.recv().await, Some(Op::Submit("hi".into())));
        ev_tx.send(Event::TurnStarted).unwrap();
        ev_tx
            .send(Event::TextDelta {
                text: "hello **there**".into(),
            })
            .unwrap();
        keys_tx.send(press(KeyCode::Esc)).unwrap();
        assert_eq!(ops_rx.recv().await, Some(Op::Cancel));
        ev_tx
            .send(Event::TurnEnded {
                reason: TurnEndReason::Interrupted,
            })
            .unwrap();
        // Let the loop take those events before the exit key (input is polled first).
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
        // Ctrl+D on an empty prompt exits even while busy.
        keys_tx
            .send(Ok(TermEvent::Key(KeyEvent::new(
                KeyCode::Char('d'),
                KeyModifiers::CONTROL,
            ))))
            .unwrap();
    };
    let run = event_loop::run_loop(
        &mut screen,
        &mut app,
        input,
        &mut ev_rx,
        &ops_tx,
        std::future::pending(),
    );
    let (stop, ()) = tokio::time::timeout(Duration::from_secs(20), async { tokio::join!(run, driver) })
        .await
        .expect("the loop ends");
    screen.finish(&mut app).unwrap();
    assert_eq!(stop.unwrap(), event_loop::Stop::User);
    let text = buffer_lines(screen.backend().scrollback()).join("\n")
        + &buffer_lines(screen.backend().buffer()).join("\n");
    assert!(text.contains("hello there"), "{text}");
    assert!(text.contains("■ interrupted"), "{text}");
}

#[tokio::test]
async fn event_loop_stops_on_signal_and_when_agent_goes() {
    let (_keys_tx, keys_rx) = tokio::sync::mpsc::unbounded_channel::<std::io::Result<TermEvent>>();
    let input = tokio_stream::wrappers::UnboundedReceiverStream::new(keys_rx);
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let (ops_tx, _ops_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut app = App::new(context(&[]), Theme::new(false), History::load(None), "~".into());
    let mut screen = Screen::new(TestBackend::new(60, 16), 3).unwrap();
    let stop = event_loop::run_loop(&mut screen, &mut app, input, &mut ev_rx, &ops_tx, async { 143 }).await;
    assert_eq!(stop.unwrap(), event_loop::Stop::Signal(143));
    drop(ev_tx);
    let (_keys_tx, keys_rx) = tokio::sync::mpsc::unbounded_channel::<std::io::Result<TermEvent>>();
    let input = tokio_stream::wrappers::UnboundedReceiverStream::new(keys_rx);
    let stop = event_loop::run_loop(
        &mut screen,
        &mut app,
        input,
        &mut ev_rx,
        &ops_tx,
        std::future::pending(),
    )
    .await;
    assert_eq!(stop.unwrap(), event_loop::Stop::AgentGone);
}

#[test]
fn help_at_forty_columns_puts_descriptions_under_keys() {
    let mut h = Harness::new(40, 60, &[]);
    h.typed("/help").enter().draw();
    let t = h.text();
    assert!(
        t.contains("  /resume ID\n    resume a stored session (a unique id\n    prefix is enough)"),
        "{t}"
    );
    for line in t.lines() {
        assert!(super::wrap::str_width(line) <= 40, "{line:?}");
    }
}

#[test]
fn no_color_theme_renders_without_colours() {
    let mut app = App::new(context(&[]), Theme::new(false), History::load(None), "~".into());
    let mut screen = Screen::new(TestBackend::new(60, 20), 3).unwrap();
    app.on_agent_event(
        Event::TextDelta {
            text: "```rust\nfn x() {}\n```\n**b** `c`".into(),
        },
        Instant::now(),
    );
    app.on_agent_event(
        Event::TurnEnded {
            reason: TurnEndReason::Done,
        },
        Instant::now(),
    );
    screen.render(&mut app, Instant::now()).unwrap();
    let b = screen.backend();
    for buf in [b.scrollback(), b.buffer()] {
        for cell in &buf.content {
            assert_eq!(cell.fg, ratatui::style::Color::Reset, "{:?}", cell.symbol());
        }
    }
}

#[test]
fn a_long_input_shows_a_window_around_the_cursor() {
    let mut h = Harness::new(40, 12, &[]);
    let text: String = (1..=30).map(|i| format!("row {i}\n")).collect();
    h.app.editor.insert_str(&text);
    h.draw();
    let t = h.text();
    assert!(t.contains("row 30"), "{t}");
    assert!(h.screen.viewport_height() <= 12);
    for _ in 0..29 {
        h.key(KeyCode::Up, KeyModifiers::NONE);
    }
    h.draw();
    let screen = h.text();
    let visible = screen.split("═══ screen ═══").nth(1).unwrap();
    assert!(
        visible.contains("› row 1\n") || visible.contains("  row 1\n"),
        "{visible}"
    );
    assert!(!visible.contains("row 30"), "{visible}");
}

#[test]
fn a_resize_rewraps_the_live_area() {
    let mut h = Harness::new(80, 20, &[]);
    h.typed("go").enter();
    h.ev(Event::TurnStarted);
    h.ev(Event::TextDelta {
        text: "A sentence long enough to need wrapping once the terminal gets narrow, with 日本語 too."
            .into(),
    });
    h.draw();
    h.screen.backend_mut().resize(40, 20);
    h.draw();
    let screen = h.text();
    let visible = screen.split("═══ screen ═══").nth(1).unwrap();
    assert!(
        visible.contains(
            "A sentence long enough to need wrapping\nonce the terminal gets narrow, with\n日本語 too.\n"
        ),
        "{visible}"
    );
    for line in visible.lines() {
        assert!(super::wrap::str_width(line) <= 40, "{line:?}");
    }
}

#[test]
fn a_shrink_below_the_viewport_keeps_input_and_status_on_the_screen() {
    let mut h = Harness::new(60, 20, &[]);
    h.typed("go").enter();
    h.ev(Event::TurnStarted);
    let text: String = (1..=30).map(|i| format!("line {i}\n")).collect();
    h.ev(Event::TextDelta { text });
    h.draw();
    for (w, rows) in [(60, 6), (60, 20), (50, 4), (60, 20)] {
        h.screen.backend_mut().resize(w, rows);
        h.draw();
        let screen = h.text();
        let visible = screen.split("═══ screen ═══").nth(1).unwrap();
        let lines: Vec<&str> = visible.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            lines.last().is_some_and(|l| l.contains("tools 0/50")),
            "{w}x{rows}: the status line is the last row:\n{visible}"
        );
        if rows >= 10 {
            assert!(
                visible.contains("line 30"),
                "{w}x{rows}: the newest line shows:\n{visible}"
            );
        }
        assert!(
            h.screen.viewport_height() <= super::screen::viewport_room(rows),
            "{w}x{rows}: two thirds at most"
        );
    }
}
