//! The walk over a parsed line: lists, pipelines (what one stage feeds the next),
//! compound commands, function definitions, `[[ … ]]`, `(( … ))`, simple commands
//! (their assignments, words and redirections), here-documents and here-strings.
//! Hands each simple command to programs.rs. Guards against the parser and bash
//! reading a word differently: a word whose text is not the source it came from
//! (`${ cmd; }` tokenised as `${cmd;}`) makes the line opaque.

use brush_parser::ast;

use super::analysis::{Analysis, MAX_DEPTH, Part, Word, WordKind};
use super::programs::{self, Cmd};
use super::{assign, words};

/// Walks `source` (a whole line, or a script inside one) into `a`.
pub(super) fn source(source: &str, a: &mut Analysis, depth: usize) {
    if depth > MAX_DEPTH {
        a.set_opaque("nested too deeply to judge");
        return;
    }
    let mut parser = brush_parser::Parser::new(std::io::Cursor::new(source), &super::analysis::options());
    match parser.parse_program() {
        Ok(program) => {
            let mut w = Walker { a, depth, source };
            for list in &program.complete_commands {
                w.list(list, &None);
            }
        }
        Err(e) => a.set_opaque(format!("the shell syntax did not parse ({e})")),
    }
}

struct Walker<'a, 's> {
    a: &'a mut Analysis,
    depth: usize,
    source: &'s str,
}

impl Walker<'_, '_> {
    /// A word the parser read: its text must be the source's at its place.
    fn word(&mut self, w: &ast::Word) -> Word {
        if let Some(loc) = &w.loc
            && self.source.get(loc.start.index..loc.end.index) != Some(w.value.as_str())
        {
            self.a.set_opaque(format!(
                "the word `{}` reads differently to bash and to the engine",
                self.source
                    .get(loc.start.index..loc.end.index)
                    .unwrap_or(&w.value)
            ));
        }
        words::classify(&w.value, self.a, self.depth)
    }

    fn list(&mut self, list: &ast::CompoundList, input: &Option<String>) {
        for item in &list.0 {
            let and_or = &item.0;
            self.pipeline(&and_or.first, input);
            for next in &and_or.additional {
                match next {
                    ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p, input),
                }
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline, input: &Option<String>) {
        let mut feed = input.clone();
        for cmd in &p.seq {
            feed = self.command(cmd, &feed);
        }
    }

    /// Walks one command fed `input`; returns the exact text it writes to its standard
    /// output when the line shows it (`echo literal`), for the next stage.
    fn command(&mut self, cmd: &ast::Command, input: &Option<String>) -> Option<String> {
        match cmd {
            ast::Command::Simple(s) => return self.simple(s, input),
            ast::Command::Compound(c, redirects) => {
                let mut input = input.clone();
                if let Some(r) = redirects {
                    for io in &r.0 {
                        if let Some(fed) = self.redirect(io) {
                            input = fed;
                        }
                    }
                }
                self.compound(c, &input);
            }
            ast::Command::Function(f) => {
                // A later part may call it by a harmless-looking name.
                self.a
                    .set_opaque(format!("it defines a function ({})", f.fname.value));
                self.compound(&f.body.0, &None);
            }
            ast::Command::ExtendedTest(e, redirects) => {
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io);
                    }
                }
                self.test(&e.expr);
            }
        }
        None
    }

    fn compound(&mut self, c: &ast::CompoundCommand, input: &Option<String>) {
        use ast::CompoundCommand as C;
        match c {
            C::BraceGroup(g) => self.list(&g.list, input),
            C::Subshell(s) => self.list(&s.list, input),
            C::ForClause(f) => {
                assign::name(&f.variable_name, self.a);
                for w in f.values.iter().flatten() {
                    self.word(w);
                }
                self.list(&f.body.list, input);
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater].into_iter().flatten() {
                    words::arithmetic(&e.value, self.a, self.depth);
                }
                self.list(&f.body.list, input);
            }
            C::CaseClause(cc) => {
                self.word(&cc.value);
                for item in &cc.cases {
                    for p in &item.patterns {
                        self.word(p);
                    }
                    if let Some(list) = &item.cmd {
                        self.list(list, input);
                    }
                }
            }
            C::IfClause(i) => {
                self.list(&i.condition, input);
                self.list(&i.then, input);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, input);
                    }
                    self.list(&e.body, input);
                }
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, input);
                self.list(&w.1.list, input);
            }
            C::Coprocess(c) => {
                if let Some(n) = &c.name {
                    assign::name(&n.value, self.a);
                }
                self.command(&c.body, &None);
            }
            C::Arithmetic(x) => words::arithmetic(&x.expr.value, self.a, self.depth),
        }
    }

    /// `[[ … ]]`: its words are words; `-v NAME[i]` and the arithmetic comparisons
    /// (`-eq`, `-lt`…) evaluate text as arithmetic, which runs `$(…)` in a subscript.
    fn test(&mut self, e: &ast::ExtendedTestExpr) {
        use ast::ExtendedTestExpr as E;
        match e {
            E::And(l, r) | E::Or(l, r) => {
                self.test(l);
                self.test(r);
            }
            E::Not(x) | E::Parenthesized(x) => self.test(x),
            E::UnaryTest(pred, w) => {
                let word = self.word(w);
                let text = pred.to_string();
                if (text == "-v" || text == "-R") && (word.text.contains('[') || !word.is_literal()) {
                    self.a
                        .set_opaque(format!("`[[ {text} {} ]]` evaluates a subscript", w.value));
                }
            }
            E::BinaryTest(pred, l, r) => {
                let l = self.word(l);
                let r = self.word(r);
                if pred.to_string().starts_with('-')
                    && !matches!(pred.to_string().as_str(), "-ef" | "-nt" | "-ot")
                {
                    for side in [&l, &r] {
                        let number = side.is_literal()
                            && !side.text.is_empty()
                            && side
                                .text
                                .trim_start_matches(['-', '+'])
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        if !number {
                            self.a.set_opaque(format!(
                                "`[[ … {pred} … ]]` evaluates `{}` as arithmetic",
                                side.text
                            ));
                        }
                    }
                }
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand, input: &Option<String>) -> Option<String> {
        let mut cmd = Cmd {
            input: None,
            ..Cmd::default()
        };
        let mut fed: Option<Option<String>> = None;
        let mut prefix_names: Vec<String> = Vec::new();
        for item in s.prefix.iter().flat_map(|p| p.0.iter()) {
            use ast::CommandPrefixOrSuffixItem as I;
            match item {
                I::IoRedirect(io) => {
                    if let Some(f) = self.redirect(io) {
                        fed = Some(f);
                    }
                }
                I::AssignmentWord(asg, w) => {
                    self.word_source(w);
                    assign::assignment(asg, self.a, self.depth, false);
                    prefix_names.push(w.value.clone());
                    cmd.assigns = true;
                }
                I::Word(w) => {
                    let word = self.word(w);
                    cmd.words.push(word);
                }
                I::ProcessSubstitution(_, sub) => cmd.words.push(self.process_substitution(sub)),
            }
        }
        if let Some(name) = &s.word_or_name {
            let word = self.word(name);
            cmd.words.push(word);
        }
        let suffix: Vec<&ast::CommandPrefixOrSuffixItem> = s.suffix.iter().flat_map(|p| p.0.iter()).collect();
        for (k, item) in suffix.iter().enumerate() {
            use ast::CommandPrefixOrSuffixItem as I;
            match item {
                I::IoRedirect(io) => {
                    if let Some(f) = self.redirect(io) {
                        fed = Some(f);
                    }
                }
                I::Word(w) => {
                    // `{name}>file` opens a descriptor and stores its number in `name`.
                    let named_fd = w.value.len() > 2
                        && w.value.starts_with('{')
                        && w.value.ends_with('}')
                        && assign::is_identifier(&w.value[1..w.value.len() - 1])
                        && matches!(suffix.get(k + 1), Some(I::IoRedirect(_)));
                    if named_fd {
                        assign::name(&w.value[1..w.value.len() - 1], self.a);
                        continue;
                    }
                    let word = self.word(w);
                    cmd.words.push(word);
                }
                I::AssignmentWord(asg, w) => {
                    let word = self.word(w);
                    cmd.assignments.insert(cmd.words.len(), asg.clone());
                    cmd.words.push(word);
                }
                I::ProcessSubstitution(_, sub) => cmd.words.push(self.process_substitution(sub)),
            }
        }
        cmd.input = match fed {
            Some(f) => f,
            None => input.clone(),
        };
        if cmd.words.is_empty() {
            // Assignments alone (`x=1`): checked above; a part rules can name.
            if cmd.assigns {
                let words: Vec<Word> = prefix_names.into_iter().map(Word::literal).collect();
                self.a.parts.push(Part::new(words, true, false));
            }
            return None;
        }
        let out = echoed(&cmd.words);
        programs::run(cmd, self.a, self.depth);
        out
    }

    /// An assignment word: only its source check (its parts are checked as parsed).
    fn word_source(&mut self, w: &ast::Word) {
        if let Some(loc) = &w.loc
            && self.source.get(loc.start.index..loc.end.index) != Some(w.value.as_str())
        {
            self.a.set_opaque(format!(
                "the word `{}` reads differently to bash and to the engine",
                w.value
            ));
        }
    }

    fn process_substitution(&mut self, sub: &ast::SubshellCommand) -> Word {
        self.depth += 1;
        self.list(&sub.list, &None);
        self.depth -= 1;
        Word {
            text: "<(…)".into(),
            kind: WordKind::Dynamic,
            may_be_option: false,
        }
    }

    /// Notes what a redirection reads or writes. Returns what it feeds the command's
    /// standard input: `Some(Some(text))` when the line shows the text exactly,
    /// `Some(None)` when it feeds something unseen, `None` when it is not an input.
    fn redirect(&mut self, io: &ast::IoRedirect) -> Option<Option<String>> {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T, IoRedirect as R};
        match io {
            R::File(fd, kind, target) => {
                let stdin = matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput)
                    && fd.is_none_or(|f| f == 0);
                match target {
                    T::Filename(w) => {
                        let path = self.word(w);
                        let write = matches!(
                            kind,
                            K::Write | K::Append | K::Clobber | K::ReadAndWrite | K::DuplicateOutput
                        );
                        self.file(&path, write);
                    }
                    T::Duplicate(w) => {
                        let target = self.word(w);
                        let fd_number = target.is_literal()
                            && !target.text.is_empty()
                            && target
                                .text
                                .trim_end_matches('-')
                                .chars()
                                .all(|c| c.is_ascii_digit());
                        if !fd_number {
                            self.file(&target, matches!(kind, K::DuplicateOutput));
                        }
                    }
                    T::ProcessSubstitution(_, sub) => {
                        self.process_substitution(sub);
                    }
                    T::Fd(_) => {}
                }
                stdin.then_some(None)
            }
            R::OutputAndError(w, _) => {
                let path = self.word(w);
                self.file(&path, true);
                None
            }
            R::HereString(fd, w) => {
                let word = self.word(w);
                let exact = word.is_literal().then(|| format!("{}\n", word.text));
                fd.is_none_or(|f| f == 0).then_some(exact)
            }
            R::HereDocument(fd, doc) => {
                let body = &doc.doc.value;
                let exact = if doc.requires_expansion {
                    match brush_parser::word::parse_heredoc(body, &super::analysis::options()) {
                        Ok(pieces) => {
                            let plain = pieces
                                .iter()
                                .all(|p| matches!(p.piece, brush_parser::word::WordPiece::Text(_)));
                            if !plain {
                                // Walk its substitutions and expansions like a word's.
                                words::classify(
                                    &format!("\"{}\"", body.replace('"', "\\\"")),
                                    self.a,
                                    self.depth,
                                );
                            }
                            plain.then(|| body.clone())
                        }
                        Err(_) => {
                            self.a.set_opaque("a here-document the engine cannot read");
                            None
                        }
                    }
                } else {
                    Some(body.clone())
                };
                fd.is_none_or(|f| f == 0).then_some(exact)
            }
        }
    }

    /// A file a redirection opens (`write`: for writing).
    fn file(&mut self, path: &Word, write: bool) {
        if !path.is_literal() {
            self.a.unseen_redirect = Some(format!(
                "a redirection to `{}`, a file named when it runs",
                path.text
            ));
            return;
        }
        let p = path.text.clone();
        // bash opens a connection for `/dev/tcp/HOST/PORT` (and udp) in either
        // direction: judged like a write outside the project, never read-only.
        let network = p.starts_with("/dev/tcp/") || p.starts_with("/dev/udp/");
        if network || (write && p != "/dev/null") {
            self.a.writes.push(p);
        } else if !write {
            self.a.reads.push(p);
        }
    }
}

/// The exact text `echo WORDS…` writes, when every word is literal and `echo` takes no
/// options or escapes from them.
fn echoed(words: &[Word]) -> Option<String> {
    let (first, rest) = words.split_first()?;
    if first.text != "echo" || !words.iter().all(Word::is_literal) {
        return None;
    }
    if rest.first().is_some_and(|w| w.text.starts_with('-')) || rest.iter().any(|w| w.text.contains('\\')) {
        return None;
    }
    let texts: Vec<&str> = rest.iter().map(|w| w.text.as_str()).collect();
    Some(format!("{}\n", texts.join(" ")))
}
