//! HTML to Markdown for `web_fetch`, in bounded work: html5ever parses the page and htmd
//! writes the Markdown, but the parser sees at most `MAX_DEPTH` nested elements (deeper
//! tags are left out, their text kept), every token is checked against a stop flag and a
//! deadline (the conversion ends there with what it has), and a tree nested deeper than
//! htmd can walk is written as plain text without recursion. Without the bound, html5ever
//! scans its whole stack of open elements for each tag (200,000 nested `div`s took minutes)
//! and htmd recurses once per level. Pure: no network, no files.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use html5ever::buffer_queue::BufferQueue;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    EndTag, StartTag, Tag, TagToken, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts};
use html5ever::{LocalName, TokenizerResult};
use markup5ever_rcdom::{Handle, NodeData, RcDom};

/// The most elements open inside each other that the parser is given. Pages people read
/// nest 10 to 40 deep; tags deeper than this are left out (their text stays).
pub(crate) const MAX_DEPTH: usize = 256;
/// The deepest tree htmd walks (it recurses once per level); deeper ones are written as
/// plain text.
const MAX_WALK: usize = 2 * MAX_DEPTH + 16;
/// Input is fed to the parser in pieces of this many bytes, between which the stop flag
/// and the deadline are looked at too.
const PIECE: usize = 64 * 1024;

/// What the conversion made, and what it left out.
#[derive(Debug)]
pub(crate) struct Converted {
    pub markdown: String,
    /// Tags left out because they were nested deeper than `MAX_DEPTH`.
    pub flattened: usize,
    /// The conversion stopped (the flag or the deadline) after this many bytes of the page.
    pub stopped_at: Option<usize>,
    /// The tree was too deep to walk: written as plain text.
    pub plain: bool,
}

/// Why the conversion stops early.
#[derive(Clone, Copy)]
pub(crate) struct Stop<'a> {
    /// Set when the call no longer waits (its timeout passed, it was cancelled).
    pub flag: &'a AtomicBool,
    /// When to stop and return what was converted.
    pub deadline: Instant,
}

impl Stop<'_> {
    fn now(&self) -> bool {
        self.flag.load(Ordering::Relaxed) || Instant::now() >= self.deadline
    }
}

/// `html` as Markdown, with the elements in `skip` (scripts, styles…) left out.
pub(crate) fn convert(html: &str, skip: &[&str], stop: Stop<'_>) -> Converted {
    let bounded = Bounded {
        inner: TreeBuilder::new(
            RcDom::default(),
            TreeBuilderOpts {
                scripting_enabled: true,
                ..Default::default()
            },
        ),
        open: RefCell::new(Vec::new()),
        dropped: RefCell::new(Vec::new()),
        flattened: Cell::new(0),
        stopped: Cell::new(false),
        tokens: Cell::new(0),
        stop,
    };
    let tokenizer = Tokenizer::new(bounded, TokenizerOpts::default());
    let input = BufferQueue::default();
    let mut at = 0;
    let mut stopped_at = None;
    while at < html.len() {
        if tokenizer.sink.stopped.get() || stop.now() {
            stopped_at = Some(at);
            break;
        }
        let mut end = (at + PIECE).min(html.len());
        while !html.is_char_boundary(end) {
            end += 1;
        }
        input.push_back(StrTendril::from_slice(&html[at..end]));
        while let TokenizerResult::Script(_) = tokenizer.feed(&input) {}
        at = end;
    }
    if stopped_at.is_none() && tokenizer.sink.stopped.get() {
        stopped_at = Some(html.len());
    }
    tokenizer.end();
    let flattened = tokenizer.sink.flattened.get();
    let dom = tokenizer.sink.inner.sink;
    let mut converter = htmd::HtmlToMarkdown::builder();
    if !skip.is_empty() {
        converter = converter.skip_tags(skip.to_vec());
    }
    let converter = converter.build();
    let plain = depth(&dom.document) > MAX_WALK;
    let markdown = if plain {
        plain_text(&dom.document, skip)
    } else {
        converter.tree_to_markdown(&dom.document)
    };
    Converted {
        markdown,
        flattened,
        stopped_at,
        plain,
    }
}

/// Elements that never hold others (`<br>`): they open nothing.
const VOID: [&str; 19] = [
    "area", "base", "basefont", "bgsound", "br", "col", "embed", "frame", "hr", "image", "img", "input",
    "keygen", "link", "meta", "param", "source", "track", "wbr",
];
/// Never counted: the parser makes at most one of each, whatever the page says.
const ROOTS: [&str; 3] = ["html", "head", "body"];
/// Start tags that close a `p` that is open right before them.
const CLOSES_P: [&str; 38] = [
    "address",
    "article",
    "aside",
    "blockquote",
    "center",
    "details",
    "dialog",
    "dir",
    "div",
    "dl",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "header",
    "hgroup",
    "main",
    "menu",
    "nav",
    "ol",
    "p",
    "search",
    "section",
    "summary",
    "ul",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "listing",
    "form",
    "hr",
    "xmp",
    "li",
    "dd",
];
const HEADINGS: [&str; 6] = ["h1", "h2", "h3", "h4", "h5", "h6"];

/// A token sink in front of the tree builder that counts how deep the page nests and
/// leaves out the tags past `MAX_DEPTH`. The count errs high, never low: a tag closes an
/// element only when it is the innermost one open, or when the parser is sure to close it
/// too (a `<p>` right before a `<div>`, a row's open cells at `</tr>`). Past the stop flag
/// or the deadline, no token reaches the parser.
struct Bounded<'a> {
    inner: TreeBuilder<Handle, RcDom>,
    /// The elements open, as counted.
    open: RefCell<Vec<LocalName>>,
    /// Tags left out, still open (their end tags are left out too).
    dropped: RefCell<Vec<LocalName>>,
    flattened: Cell<usize>,
    stopped: Cell<bool>,
    tokens: Cell<u32>,
    stop: Stop<'a>,
}

impl Bounded<'_> {
    /// Pops the innermost element while it is one of `names`.
    fn pop_while(&self, names: &[&str]) {
        let mut open = self.open.borrow_mut();
        while open.last().is_some_and(|n| names.contains(&&**n)) {
            open.pop();
        }
    }

    /// Pops the innermost element when it is one of `names`.
    fn pop_if(&self, names: &[&str]) {
        let mut open = self.open.borrow_mut();
        if open.last().is_some_and(|n| names.contains(&&**n)) {
            open.pop();
        }
    }

    /// For an end tag: the innermost elements, when they are all `through` and the one
    /// under them is `name`, are closed with it.
    fn close_through(&self, name: &str, through: &[&str]) {
        let mut open = self.open.borrow_mut();
        let run = open.iter().rev().take_while(|n| through.contains(&&***n)).count();
        let under = open.len().checked_sub(run + 1);
        if let Some(i) = under
            && &*open[i] == name
        {
            open.truncate(i);
        }
    }

    /// Whether a start tag is let through (and counted).
    fn start(&self, tag: &Tag) -> bool {
        let name: &str = &tag.name;
        if !self.dropped.borrow().is_empty() {
            self.drop_start(tag);
            return false;
        }
        let foreign = self
            .inner
            .adjusted_current_node_present_but_not_in_html_namespace();
        if ROOTS.contains(&name) || (VOID.contains(&name) && !foreign) {
            return true;
        }
        if tag.self_closing && (foreign || name == "svg" || name == "math") {
            return true;
        }
        if !foreign {
            if CLOSES_P.contains(&name) {
                self.pop_if(&["p"]);
            }
            match name {
                "li" => self.pop_if(&["li"]),
                "dd" | "dt" => self.pop_if(&["dd", "dt"]),
                "option" | "optgroup" => self.pop_if(&["option"]),
                "tr" => {
                    self.pop_while(&["td", "th"]);
                    self.pop_if(&["tr"]);
                }
                "td" | "th" => self.pop_if(&["td", "th"]),
                n if HEADINGS.contains(&n) => self.pop_if(&HEADINGS),
                _ => {}
            }
        }
        if self.open.borrow().len() >= MAX_DEPTH {
            self.drop_start(tag);
            return false;
        }
        self.open.borrow_mut().push(tag.name.clone());
        true
    }

    fn drop_start(&self, tag: &Tag) {
        self.flattened.set(self.flattened.get() + 1);
        let name: &str = &tag.name;
        if !VOID.contains(&name) && !tag.self_closing {
            self.dropped.borrow_mut().push(tag.name.clone());
        }
    }

    /// Whether an end tag is let through.
    fn end(&self, tag: &Tag) -> bool {
        let name: &str = &tag.name;
        {
            let mut dropped = self.dropped.borrow_mut();
            if !dropped.is_empty() {
                // Only the innermost left-out element's end tag is known for sure; any
                // other is left out too (the parser never saw what it would close).
                if dropped.last().is_some_and(|n| &**n == name) {
                    dropped.pop();
                }
                return false;
            }
        }
        if self.open.borrow().last().is_some_and(|n| &**n == name) {
            self.open.borrow_mut().pop();
            return true;
        }
        match name {
            "tr" => self.close_through(name, &["td", "th"]),
            "tbody" | "thead" | "tfoot" => self.close_through(name, &["td", "th", "tr"]),
            "table" => self.close_through(
                name,
                &["td", "th", "tr", "tbody", "thead", "tfoot", "caption", "colgroup"],
            ),
            "ul" | "ol" => self.close_through(name, &["li", "p"]),
            "dl" => self.close_through(name, &["dd", "dt", "p"]),
            "select" | "datalist" => self.close_through(name, &["option", "optgroup"]),
            _ => self.close_through(name, &["p"]),
        }
        true
    }
}

impl TokenSink for Bounded<'_> {
    type Handle = Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<Handle> {
        if self.stopped.get() {
            return TokenSinkResult::Continue;
        }
        let n = self.tokens.get().wrapping_add(1);
        self.tokens.set(n);
        if n.is_multiple_of(256) && self.stop.now() {
            self.stopped.set(true);
            return TokenSinkResult::Continue;
        }
        let pass = match &token {
            TagToken(tag) if tag.kind == StartTag => self.start(tag),
            TagToken(tag) if tag.kind == EndTag => self.end(tag),
            _ => true,
        };
        if pass {
            self.inner.process_token(token, line_number)
        } else {
            TokenSinkResult::Continue
        }
    }

    fn end(&self) {
        self.inner.end();
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.inner
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

/// How deep the tree under `root` goes (without recursing).
fn depth(root: &Handle) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root.clone(), 0usize)];
    while let Some((node, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in node.children.borrow().iter() {
            stack.push((child.clone(), d + 1));
        }
    }
    deepest
}

/// The text of the tree under `root` in document order, without the elements in `skip`,
/// a line break after each block-ish element (without recursing).
fn plain_text(root: &Handle, skip: &[&str]) -> String {
    let mut out = String::new();
    let mut stack: Vec<Rc<markup5ever_rcdom::Node>> = vec![root.clone()];
    while let Some(node) = stack.pop() {
        match &node.data {
            NodeData::Text { contents } => out.push_str(&contents.borrow()),
            NodeData::Element { name, .. } => {
                if skip.contains(&&*name.local) {
                    continue;
                }
                if !out.ends_with('\n') && !out.is_empty() {
                    out.push('\n');
                }
            }
            _ => {}
        }
        for child in node.children.borrow().iter().rev() {
            stack.push(child.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(html: &str) -> Converted {
        let flag = AtomicBool::new(false);
        let stop = Stop {
            flag: &flag,
            deadline: Instant::now() + std::time::Duration::from_secs(3600),
        };
        convert(html, &["script", "style"], stop)
    }

    #[test]
    fn ordinary_pages_convert_whole() {
        let c = run(
            "<html><head><title>t</title><style>p{}</style></head><body><h1>Title</h1>\
             <p>One <a href=\"https://x/\">link</a><p>Two<ul><li>a<li>b</ul>\
             <table><tr><td>c<td>d<tr><td>e</table><script>evil()</script></body></html>",
        );
        assert_eq!(c.flattened, 0);
        assert!(c.stopped_at.is_none() && !c.plain);
        for want in ["# Title", "[link](https://x/)", "Two", "a\n", "b\n", "c", "e"] {
            assert!(c.markdown.contains(want), "{want}: {}", c.markdown);
        }
        assert!(!c.markdown.contains("evil"), "{}", c.markdown);
    }

    /// Sloppy pages that close nothing stay shallow: paragraphs, items, cells and rows
    /// close the one before them.
    #[test]
    fn unclosed_paragraphs_items_and_cells_do_not_add_up() {
        let page = "<p>para<p>more<ul><li>a<li>b</ul><dl><dt>t<dd>d</dl>\
                    <table><tr><td>c<td>d<tr><td>e</table><h2>h<h3>i"
            .repeat(600);
        let c = run(&page);
        assert_eq!(c.flattened, 0, "{}", &c.markdown[..200]);
    }

    /// Every way of nesting deep is cut at `MAX_DEPTH`, in time linear in the page, and
    /// keeps the text.
    #[test]
    fn deep_nesting_of_every_kind_is_cut_and_the_text_kept() {
        let forms = [
            ("<div>", "</div>"),
            ("<span>", "</span>"),
            ("<b id=x>", "</b>"),
            ("<table><tr><td>", "</td></tr></table>"),
            ("<ul><li>", "</li></ul>"),
            ("<svg><g>", "</g></svg>"),
            ("<math><mrow>", "</mrow></math>"),
            ("<section><li>", "</ul>"),
            ("<p><b>", "</p>x"),
            ("<a href=y>", ""),
            ("<select><optgroup>", ""),
            ("<div><span>", "</div>"),
        ];
        for (open, close) in forms {
            let n = 3_000;
            let page = format!("{}deep text{}", open.repeat(n), close.repeat(n));
            let c = run(&page);
            assert!(c.flattened > 0, "{open}");
            assert!(
                c.markdown.contains("deep text"),
                "{open}: {}",
                &c.markdown[..c.markdown.len().min(300)]
            );
            assert!(c.stopped_at.is_none(), "{open}");
        }
    }

    #[test]
    fn a_stop_ends_it_at_once_with_what_was_converted() {
        let flag = AtomicBool::new(true);
        let stop = Stop {
            flag: &flag,
            deadline: Instant::now() + std::time::Duration::from_secs(3600),
        };
        let c = convert(&"<p>x</p>".repeat(100_000), &[], stop);
        assert_eq!(c.stopped_at, Some(0));
        let c = convert(
            &"<p>x</p>".repeat(100_000),
            &[],
            Stop {
                flag: &AtomicBool::new(false),
                deadline: Instant::now(),
            },
        );
        assert!(c.stopped_at.is_some());
    }
}
