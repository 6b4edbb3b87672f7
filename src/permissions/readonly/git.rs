//! The read-only `git` commands: the global options allowed before the subcommand, the
//! subcommands that only read, and the options each accepts. Not listed (so never
//! read-only): `-c`, `-C`, `--git-dir`, `--exec-path`, `--output`, `--ext-diff`,
//! `--textconv`, `-O`/`--open-files-in-pager`, `--paginate`, and every subcommand or
//! form that writes (`branch NAME`, `tag NAME`). Whether the repository itself runs a
//! program of its own is git_repo.rs's question.

use std::sync::LazyLock;

use crate::permissions::getopt::{Spec, Table};

use super::super::shell::analysis::Word;

/// Options before the subcommand.
const GLOBAL: &str = "flags=P long=no-pager,no-optional-locks,literal-pathspecs,glob-pathspecs,noglob-pathspecs,icase-pathspecs,no-replace-objects";

/// Options of every command that shows a diff (`diff`, `log -p`, `show`).
const DIFF: &str = "flags=pusRabwWBDz arg=UlSGO optarg=MC \
    long=patch,no-patch,raw,patch-with-raw,numstat,shortstat,summary,name-only,name-status,no-color,no-renames,irreversible-delete,pickaxe-all,pickaxe-regex,text,ignore-cr-at-eol,ignore-space-at-eol,ignore-space-change,ignore-all-space,ignore-blank-lines,function-context,exit-code,quiet,no-ext-diff,no-textconv,no-prefix,default-prefix,ita-invisible-in-index,full-index,binary,minimal,patience,histogram,cached,staged,merge-base,no-index,check,compact-summary,no-relative,indent-heuristic,no-indent-heuristic,color-moved-ws,no-color-moved,no-color-moved-ws,find-copies-harder,stat-graph-width,combined-all-paths,cc,no-merges,merges,follow,no-stat \
    arg-long=diff-filter,src-prefix,dst-prefix,line-prefix,word-diff-regex,diff-algorithm,anchored,inter-hunk-context,stat-width,stat-name-width,stat-count,output-indicator-new,output-indicator-old,output-indicator-context,orderfile,skip-to,rotate-to,ignore-matching-lines \
    opt-long=stat,dirstat,color,word-diff,color-words,color-moved,find-renames,find-copies,break-rewrites,relative,ignore-submodules,submodule,abbrev,unified";

/// Options of the commands that walk history (`log`, `show`, `rev-list`, `shortlog`).
const LOG: &str = "flags=iEFPgmctr arg=nL num \
    long=all-match,invert-grep,regexp-ignore-case,basic-regexp,extended-regexp,fixed-strings,perl-regexp,first-parent,all,reflog,walk-reflogs,oneline,abbrev-commit,no-abbrev-commit,no-decorate,source,graph,relative-date,reverse,topo-order,date-order,author-date-order,left-right,cherry-pick,cherry-mark,cherry,boundary,ancestry-path,simplify-by-decoration,full-history,dense,sparse,simplify-merges,parents,children,no-notes,mailmap,use-mailmap,no-mailmap,no-use-mailmap,log-size,no-expand-tabs,show-signature,no-walk,do-walk,root,full-diff,left-only,right-only,not,no-min-parents,no-max-parents,show-linear-break,count,objects,objects-edge,in-commit-order,no-object-names,bisect,show-pulls,single-worktree,ignore-missing,remove-empty \
    arg-long=max-count,skip,since,after,until,before,author,committer,grep,grep-reflog,min-parents,max-parents,glob,exclude,format,encoding,date,diff-merges,since-as-filter,exclude-first-parent-only \
    opt-long=pretty,decorate,branches,tags,remotes,notes,expand-tabs,show-notes,decorate-refs,decorate-refs-exclude,clear-decorations,ancestry-path";

/// Read-only subcommands and their own options (the diff and log sets are added where
/// the subcommand shows diffs or history).
static SUBCOMMANDS: LazyLock<Table> = LazyLock::new(|| {
    let with = |own: &str, sets: &[&str]| {
        let mut s = own.to_string();
        for set in sets {
            s.push(' ');
            s.push_str(set);
        }
        s
    };
    Table::new(&[
        (
            "status",
            "flags=sbvz optarg=u long=short,branch,show-stash,long,verbose,null,no-column,ahead-behind,no-ahead-behind,renames,no-renames \
             opt-long=porcelain,untracked-files,ignore-submodules,ignored,column,find-renames"
                .to_string(),
        ),
        ("diff", DIFF.to_string()),
        ("log", with("", &[DIFF, LOG])),
        ("show", with("", &[DIFF, LOG])),
        ("rev-list", LOG.to_string()),
        (
            "shortlog",
            "flags=nsec num long=numbered,summary,email,committer,all,no-merges,merges,reverse \
             arg-long=group,format,since,until,after,before,author,grep,max-count"
                .to_string(),
        ),
        (
            "blame",
            "flags=bltsefnpcwM arg=LS optarg=C long=root,show-stats,show-email,incremental,porcelain,line-porcelain,show-name,show-number,reverse,first-parent,color-lines,color-by-age,progress,no-progress,minimal,score-debug \
             arg-long=date,contents,ignore-rev,ignore-revs-file,encoding opt-long=abbrev"
                .to_string(),
        ),
        (
            "ls-files",
            "flags=cdoiskmutvfz arg=xX long=cached,deleted,others,ignored,stage,unmerged,killed,modified,directory,no-empty-directory,eol,full-name,recurse-submodules,error-unmatch,exclude-standard,debug,deduplicate,sparse,resolve-undo \
             arg-long=exclude,exclude-from,exclude-per-directory,format,with-tree opt-long=abbrev"
                .to_string(),
        ),
        (
            "ls-tree",
            "flags=dlrtz long=long,name-only,name-status,object-only,full-name,full-tree arg-long=format opt-long=abbrev"
                .to_string(),
        ),
        (
            "rev-parse",
            "flags=q long=show-toplevel,show-prefix,show-cdup,git-dir,git-common-dir,absolute-git-dir,is-inside-work-tree,is-inside-git-dir,is-bare-repository,is-shallow-repository,verify,quiet,symbolic,symbolic-full-name,all,revs-only,no-revs,flags,no-flags,show-object-format,local-env-vars \
             arg-long=since,until,after,before,default,git-path,path-format opt-long=short,abbrev-ref,branches,tags,remotes"
                .to_string(),
        ),
        (
            "describe",
            "long=all,tags,contains,long,always,first-parent,exact-match,debug arg-long=match,exclude,candidates opt-long=abbrev,dirty,broken"
                .to_string(),
        ),
        (
            "branch",
            "flags=avlr long=list,show-current,all,remotes,verbose,no-column,ignore-case,omit-empty \
             arg-long=format,sort,contains,no-contains,merged,no-merged,points-at opt-long=color,column,abbrev"
                .to_string(),
        ),
        (
            "tag",
            "flags=l optarg=n long=list,ignore-case,omit-empty arg-long=sort,format,contains,no-contains,merged,no-merged,points-at opt-long=column,color"
                .to_string(),
        ),
        (
            "grep",
            "flags=aiIvwcEFGPlLhHnoqzpWr arg=efABCm num long=cached,untracked,no-index,no-exclude-standard,exclude-standard,recurse-submodules,text,ignore-case,word-regexp,invert-match,full-name,extended-regexp,basic-regexp,fixed-strings,perl-regexp,files-with-matches,name-only,files-without-match,null,only-matching,count,heading,break,show-function,function-context,and,or,not,all-match,quiet,line-number,column,no-textconv \
             arg-long=max-depth,threads,max-count,context,after-context,before-context opt-long=color"
                .to_string(),
        ),
        ("show-ref", "flags=dqs long=head,dereference,heads,tags,verify,quiet,exists,branches opt-long=hash,abbrev".to_string()),
        (
            "for-each-ref",
            "long=ignore-case,omit-empty arg-long=format,sort,count,points-at,merged,no-merged,contains,no-contains,exclude opt-long=color"
                .to_string(),
        ),
        ("merge-base", "flags=a long=all,octopus,independent,is-ancestor,fork-point".to_string()),
        ("cat-file", "flags=tsep".to_string()),
        ("remote", "flags=v long=verbose".to_string()),
    ])
});

/// Whether `git` with `args` only reads (its options are listed, it writes nothing).
pub(super) fn read_only(args: &[Word]) -> bool {
    if args.iter().any(|w| !w.is_literal() && w.may_be_option) {
        return false;
    }
    let texts: Vec<String> = args.iter().map(|w| w.text.clone()).collect();
    // The global options end at the subcommand.
    let mut at = 0;
    while texts.get(at).is_some_and(|t| t.starts_with('-')) {
        at += 1;
    }
    let Some(sub) = texts.get(at) else {
        return false;
    };
    let global = Spec::parse(GLOBAL);
    if global.scan(&texts[..at], &vec![false; at]).is_err() {
        return false;
    }
    let Some(spec) = SUBCOMMANDS.get(sub) else {
        return false;
    };
    let rest = &texts[at + 1..];
    let dynamic: Vec<bool> = args[at + 1..].iter().map(|w| w.may_be_option).collect();
    let Ok(s) = spec.scan(rest, &dynamic) else {
        return false;
    };
    let listing = s.options.iter().any(|o| o.name == "-l" || o.name == "--list");
    match sub.as_str() {
        // `git branch NAME` and `git tag NAME` create one; only listing is reading.
        "branch" | "tag" => s.operands.is_empty() || listing,
        // `git remote show NAME` reaches the network (and runs its helpers).
        "remote" => s.operands.is_empty(),
        _ => true,
    }
}
