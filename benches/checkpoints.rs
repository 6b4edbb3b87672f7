//! Criterion benches for checkpoints (issue 24 §1): the checkpoint taken before a
//! `file_edit` (read, hash and save a 20 KB file), the shadow-git snapshot of a
//! 10,000-file project (warm: the snapshot of a turn after the first; cold: the very
//! first, into an empty shadow repository), and the end of a turn that ran no `bash`
//! (no git at all).

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use ikigai::checkpoints::{Checkpoints, DEFAULT_LIMIT};

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"))
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir: {e}"));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write: {e}"));
}

/// A 20 KB source file whose content differs by `n`.
fn source(n: usize) -> String {
    (0..500)
        .map(|l| format!("fn item_{n}_{l}() {{ let v = {}; }}\n", l * 7919 % 10007))
        .collect()
}

/// 100 folders × 100 files of ~1 KB, with a `.gitignore` and an ignored build folder.
fn project(root: &Path) {
    write(&root.join(".gitignore"), "target/\n");
    for d in 0..100 {
        for f in 0..100 {
            let text: String = (0..20)
                .map(|l| format!("line {d} {f} {l} of the project\n"))
                .collect();
            write(&root.join(format!("src{d:03}/f{f:03}.rs")), &text);
        }
    }
    write(&root.join("target/big.bin"), &"x".repeat(1 << 20));
}

fn resolve(cwd: &Path) -> impl Fn(&str) -> PathBuf + '_ {
    move |given| cwd.join(given)
}

fn before_file_edit(c: &mut Criterion) {
    let project = tempdir();
    let data = tempdir();
    let cwd = project.path().to_path_buf();
    let file = cwd.join("lib.rs");
    let args = r#"{"path":"lib.rs","old_string":"a","new_string":"b"}"#;
    let mut n = 0;
    c.bench_function("checkpoint_before_file_edit_20kb", |b| {
        b.iter_batched(
            || {
                // A new content each time: its save is a real write.
                n += 1;
                write(&file, &source(n));
                Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT)
            },
            |mut cp| {
                let snap = cp.before_call("file_edit", args, resolve(&cwd), || (1, "edit".into()));
                assert!(snap.is_none());
                cp
            },
            BatchSize::PerIteration,
        )
    });
    // A whole turn of file tools only: the save before, the hash after; no git.
    c.bench_function("checkpoint_turn_without_bash", |b| {
        b.iter_batched(
            || {
                n += 1;
                write(&file, &source(n));
                Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT)
            },
            |mut cp| {
                cp.before_call("file_read", "{}", resolve(&cwd), || (1, "edit".into()));
                cp.before_call("file_edit", args, resolve(&cwd), || (1, "edit".into()));
                let done = cp.finish().map(|f| f.run());
                assert!(done.is_some());
            },
            BatchSize::PerIteration,
        )
    });
}

fn snapshot(c: &mut Criterion) {
    let project_dir = tempdir();
    let data = tempdir();
    let cwd = project_dir.path().to_path_buf();
    project(&cwd);
    let cp = Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT);
    let shadow = cp.shadow().unwrap_or_else(|| panic!("a shadow repository"));
    shadow
        .snapshot(DEFAULT_LIMIT)
        .unwrap_or_else(|e| panic!("first snapshot: {e}"));
    let mut group = c.benchmark_group("shadow_snapshot_10k_files");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    let mut n = 0;
    group.bench_function("warm", |b| {
        b.iter_batched(
            || {
                // What a turn's bash did: one file changed.
                n += 1;
                write(&cwd.join("src000/f000.rs"), &source(n));
            },
            |()| {
                shadow
                    .snapshot(DEFAULT_LIMIT)
                    .unwrap_or_else(|e| panic!("snapshot: {e}"))
            },
            BatchSize::PerIteration,
        )
    });
    group.bench_function("cold", |b| {
        b.iter_batched(
            || {
                let data = tempdir();
                let cp = Checkpoints::new(cwd.clone(), Some(data.path()), DEFAULT_LIMIT);
                (data, cp.shadow().unwrap_or_else(|| panic!("a shadow repository")))
            },
            |(data, shadow)| {
                shadow
                    .snapshot(DEFAULT_LIMIT)
                    .unwrap_or_else(|e| panic!("snapshot: {e}"));
                data
            },
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

criterion_group!(benches, before_file_edit, snapshot);
criterion_main!(benches);
