//! The read-only commands and, for each, the options it accepts (in `getopt::Spec`'s
//! compact form). Only options that read are listed: one that writes a file
//! (`sort -o`, `tree -o`, `sort -T`), runs a program (`sort --compress-program`,
//! `rg --pre`, `rg -z`, `diff -l`, `file -z`) or changes something (`date -s`) is not,
//! so using it makes the command not read-only. `find` has its own expression grammar
//! (find.rs); `git` its subcommands (git.rs). The README lists the same commands.

/// `(command, options)`.
pub(super) const COMMANDS: [(&str, &str); 45] = [
    (
        "ls",
        "flags=aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1 arg=IwT \
         long=all,almost-all,author,escape,ignore-backups,directory,dired,file-type,group-directories-first,no-group,human-readable,si,dereference-command-line,dereference-command-line-symlink-to-dir,inode,kibibytes,dereference,numeric-uid-gid,literal,hide-control-chars,show-control-chars,quote-name,reverse,recursive,size,zero,context,full-time,help,version \
         arg-long=block-size,format,hide,ignore,indicator-style,quoting-style,sort,tabsize,time,time-style,width \
         opt-long=color,classify,hyperlink",
    ),
    (
        "cat",
        "flags=AbeEnstTuv long=show-all,number-nonblank,show-ends,number,squeeze-blank,show-tabs,show-nonprinting,help,version",
    ),
    (
        "head",
        "flags=qvz arg=cn num long=quiet,silent,verbose,zero-terminated,help,version arg-long=bytes,lines",
    ),
    (
        "tail",
        "flags=fFqvz arg=cns num long=quiet,silent,verbose,zero-terminated,retry,help,version \
         arg-long=bytes,lines,pid,sleep-interval,max-unchanged-stats opt-long=follow",
    ),
    (
        "wc",
        "flags=clmwL long=bytes,chars,lines,words,max-line-length,help,version arg-long=files0-from,total",
    ),
    ("grep", GREP),
    ("egrep", GREP),
    ("fgrep", GREP),
    (
        "rg",
        "flags=abcFHhIiLlNnopPqSsUuVvwx0. arg=ABCdEefgjMmrTt \
         long=text,byte-offset,count,count-matches,fixed-strings,with-filename,no-filename,ignore-case,smart-case,case-sensitive,follow,files-with-matches,files-without-match,no-line-number,line-number,only-matching,pretty,pcre2,quiet,multiline,multiline-dotall,unrestricted,invert-match,word-regexp,line-regexp,null,null-data,hidden,no-hidden,no-ignore,no-ignore-vcs,no-ignore-dot,no-ignore-parent,no-ignore-global,no-ignore-exclude,no-ignore-files,ignore,ignore-vcs,files,json,no-json,vimgrep,heading,no-heading,column,no-column,stats,trim,no-config,type-list,debug,trace,crlf,no-crlf,one-file-system,passthru,no-unicode,binary,no-binary,no-messages,sort-files,help,version,max-columns-preview,no-filename,include-zero,invert-match,unicode,block-buffered,line-buffered \
         arg-long=regexp,glob,iglob,type,type-not,type-add,type-clear,max-count,after-context,before-context,context,max-columns,max-depth,max-filesize,threads,replace,encoding,file,sort,sortr,context-separator,field-match-separator,field-context-separator,path-separator,ignore-file,color,colors,engine,dfa-size-limit,regex-size-limit",
    ),
    ("pwd", "flags=LP"),
    ("which", "flags=as"),
    ("type", "flags=afptP"),
    (
        "basename",
        "flags=asz arg=s long=multiple,zero,help,version arg-long=suffix",
    ),
    ("dirname", "flags=z long=zero,help,version"),
    (
        "realpath",
        "flags=eEmLPqsz long=canonicalize-existing,canonicalize-missing,logical,physical,quiet,strip,no-symlinks,zero,help,version \
         arg-long=relative-to,relative-base",
    ),
    (
        "readlink",
        "flags=efmnqsvz long=canonicalize,canonicalize-existing,canonicalize-missing,no-newline,quiet,silent,verbose,zero,help,version",
    ),
    (
        "stat",
        "flags=LfZt arg=c long=dereference,file-system,terse,help,version arg-long=format,printf,cached",
    ),
    (
        "file",
        "flags=bcdEhiklLNnrsSv0 arg=mfFeP \
         long=brief,mime,mime-type,mime-encoding,keep-going,dereference,no-dereference,no-pad,print0,raw,special-files,extension,apple,help,version \
         arg-long=magic-file,files-from,separator,exclude,exclude-quiet,parameter",
    ),
    (
        "du",
        "flags=0abcDhHklLmsSxP arg=dBtX \
         long=null,all,apparent-size,bytes,total,dereference-args,human-readable,inodes,dereference,count-links,no-dereference,separate-dirs,si,summarize,one-file-system,help,version \
         arg-long=max-depth,block-size,threshold,exclude,exclude-from,files0-from,time-style opt-long=time",
    ),
    (
        "df",
        "flags=ahHiklPT arg=Btx long=all,human-readable,si,inodes,local,portability,print-type,total,no-sync,sync,help,version \
         arg-long=block-size,type,exclude-type opt-long=output",
    ),
    (
        "tree",
        "flags=adlfxiCnNQpugshDFvtrcUJ arg=LIPHT \
         long=dirsfirst,filesfirst,noreport,prune,du,matchdirs,ignore-case,gitignore,inodes,device,si,nolinks,help,version \
         arg-long=filelimit,charset,sort,timefmt",
    ),
    (
        "cut",
        "flags=nsz arg=bcdf long=complement,only-delimited,zero-terminated,help,version \
         arg-long=bytes,characters,delimiter,fields,output-delimiter",
    ),
    (
        "sort",
        "flags=bdfgiMhnRrVcCmsuz arg=ktS \
         long=ignore-leading-blanks,dictionary-order,ignore-case,general-numeric-sort,ignore-nonprinting,month-sort,human-numeric-sort,numeric-sort,random-sort,reverse,version-sort,merge,stable,unique,zero-terminated,debug,help,version \
         arg-long=key,field-separator,buffer-size,parallel,batch-size,files0-from,random-source,sort opt-long=check",
    ),
    (
        "uniq",
        "flags=cdDiuz arg=fsw long=count,repeated,ignore-case,unique,zero-terminated,help,version \
         arg-long=skip-fields,skip-chars,check-chars opt-long=all-repeated,group",
    ),
    (
        "nl",
        "flags=p arg=bdfhilnsvw long=no-renumber,help,version \
         arg-long=body-numbering,section-delimiter,footer-numbering,header-numbering,line-increment,join-blank-lines,number-format,number-separator,starting-line-number,number-width",
    ),
    (
        "diff",
        "flags=aBbcdEeiNnpqrsTtuwyZ arg=CDFILSUWxX \
         long=brief,report-identical-files,normal,ed,rcs,side-by-side,left-column,suppress-common-lines,show-c-function,expand-tabs,initial-tab,suppress-blank-empty,text,strip-trailing-cr,ignore-case,ignore-tab-expansion,ignore-trailing-space,ignore-space-change,ignore-all-space,ignore-blank-lines,minimal,speed-large-files,new-file,unidirectional-new-file,recursive,no-dereference,ignore-file-name-case,no-ignore-file-name-case,help,version \
         arg-long=ifdef,show-function-line,ignore-matching-lines,label,starting-file,exclude,exclude-from,from-file,to-file,width,tabsize,horizon-lines,line-format,old-line-format,new-line-format,unchanged-line-format,old-group-format,new-group-format,changed-group-format,unchanged-group-format,palette \
         opt-long=context,unified,color",
    ),
    (
        "cmp",
        "flags=blsv arg=in long=print-bytes,verbose,quiet,silent,help,version arg-long=ignore-initial,bytes",
    ),
    ("md5sum", SUMS),
    ("sha1sum", SUMS),
    ("sha224sum", SUMS),
    ("sha256sum", SUMS),
    ("sha384sum", SUMS),
    ("sha512sum", SUMS),
    (
        "b2sum",
        "flags=bctwz arg=l long=binary,check,tag,text,zero,ignore-missing,quiet,status,strict,warn,help,version arg-long=length",
    ),
    ("cksum", "flags=z long=help,version"),
    (
        "tac",
        "flags=br arg=s long=before,regex,help,version arg-long=separator",
    ),
    ("rev", "flags=0 long=zero,help,version"),
    (
        "paste",
        "flags=sz arg=d long=serial,zero-terminated,help,version arg-long=delimiters",
    ),
    (
        "comm",
        "flags=123z long=check-order,nocheck-order,total,zero-terminated,help,version arg-long=output-delimiter",
    ),
    (
        "fold",
        "flags=bs arg=w num long=bytes,spaces,help,version arg-long=width",
    ),
    (
        "tr",
        "flags=cCdst long=complement,delete,squeeze-repeats,truncate-set1,help,version",
    ),
    (
        "seq",
        "flags=w arg=fs num long=equal-width,help,version arg-long=format,separator",
    ),
    (
        "uname",
        "flags=asnrvmpio long=all,kernel-name,nodename,kernel-release,kernel-version,machine,processor,hardware-platform,operating-system,help,version",
    ),
    ("whoami", "long=help,version"),
    ("true", ""),
];

const GREP: &str = "flags=EFGPiyvwxcLloqsbHhnTZzarRU arg=efmABCDd num \
     long=extended-regexp,fixed-strings,basic-regexp,perl-regexp,ignore-case,no-ignore-case,invert-match,word-regexp,line-regexp,count,files-without-match,files-with-matches,only-matching,quiet,silent,no-messages,byte-offset,with-filename,no-filename,line-number,initial-tab,null,null-data,text,recursive,dereference-recursive,line-buffered,no-group-separator,help,version \
     arg-long=regexp,file,max-count,after-context,before-context,context,binary-files,devices,directories,exclude,exclude-from,exclude-dir,include,label,group-separator \
     opt-long=color,colour";

const SUMS: &str =
    "flags=bctwz long=binary,check,tag,text,zero,ignore-missing,quiet,status,strict,warn,help,version";

/// Commands that take any words: builtins that only print or test.
pub(super) const ANY_WORDS: [&str; 3] = ["echo", "false", ":"];

/// The most operands a command reads; one more is a file it writes (`uniq IN OUT`).
pub(super) fn max_operands(name: &str) -> Option<usize> {
    (name == "uniq").then_some(1)
}
