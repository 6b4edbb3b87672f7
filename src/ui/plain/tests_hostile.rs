//! Every field of every event the agent can send, each holding hostile text
//! (`crate::hostile`), through the scripted front end: as text (coloured, verbose, live)
//! nothing written acts on a terminal or hides text; under `--json` every line is JSON
//! that keeps the hostile text exactly and holds none of it raw.

use crate::hostile::{self, TEXT};
use crate::protocol::Event;

use super::render::{PlainOptions, Renderer};

fn events() -> Vec<Event> {
    let mut events = Event::every_variant_hostile();
    events.extend(crate::ui::tui::tests_hostile::json_shaped());
    events
}

fn render(opts: PlainOptions) -> (Vec<u8>, Vec<u8>) {
    let mut r = Renderer::new(Vec::new(), Vec::new(), opts);
    for e in events() {
        r.render(&e).unwrap();
    }
    r.into_parts()
}

#[test]
fn no_field_of_any_event_reaches_the_terminal_as_it_is() {
    for color in [false, true] {
        let (out, err) = render(PlainOptions {
            json: false,
            verbose: true,
            color,
            live: true,
        });
        for (what, bytes) in [("stdout", &out), ("stderr", &err)] {
            let bad = hostile::violations(bytes, false);
            assert!(
                bad.is_empty(),
                "{what}: {bad:?}\n{}",
                String::from_utf8_lossy(bytes)
            );
        }
        assert!(hostile::shown(&out) > 5, "{}", String::from_utf8_lossy(&out));
    }
}

#[test]
fn json_lines_keep_every_value_and_hold_nothing_raw() {
    let (out, _) = render(PlainOptions {
        json: true,
        ..Default::default()
    });
    let bad = hostile::violations(&out, false);
    assert!(bad.is_empty(), "{bad:?}");
    assert!(!out.contains(&0x1b), "ESC is escaped");
    let text = String::from_utf8(out).unwrap();
    let mut whole = 0;
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        whole += hostile::strings(&v).iter().filter(|s| s.as_str() == TEXT).count();
    }
    assert!(whole > 20, "the hostile text comes out whole, as values:\n{text}");
}
